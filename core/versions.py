"""Installed versions of the packages that decide a run's numbers."""

from __future__ import annotations

import platform
from importlib import metadata

PACKAGES = ("verl", "torch", "transformers", "vllm", "math-verify", "hydra-core", "rlvr-recipes")


def versions() -> dict[str, str]:
    """Installed versions of the packages that decide a run's numbers (absent ones omitted)."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
