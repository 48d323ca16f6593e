"""``versions()``: the installed versions of the packages that decide a result's numbers.

With the CPU arithmetic in force (:func:`core.numerics.numerics`: ATen's kernel ISA and oneMKL's
branch), which decides a CPU result's numbers as much as a version does. One list for run manifests (``run.json``), evaluation results, data manifests and results files,
so they all record the same provenance. Packages that are not installed are left out.
"""

from __future__ import annotations

import platform
from importlib import metadata

from core.numerics import numerics

PACKAGES = (
    "rlvr-recipes",
    "verl",
    "torch",
    "transformers",
    "vllm",
    "math-verify",
    "sympy",
    "latex2sympy2_extended",
    "hydra-core",
    "reasoning-gym",
    "datasets",
    "pyarrow",
)


def versions() -> dict[str, str]:
    """``{"python": ..., package: version}`` for every installed package of :data:`PACKAGES`.

    >>> v = versions()
    >>> "python" in v and "verl" in v
    True
    """
    out = {"python": platform.python_version()}
    out.update({k: v for k, v in numerics().items() if k != "torch"})
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
