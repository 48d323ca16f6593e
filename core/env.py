"""The process environment every command shares: where caches live, and a quiet veRL on CPU.

- :func:`cache_root`: the run cache, ``$RLVR_CACHE`` or ``~/.cache/rlvr``. Files inside it are the
  project's to write (generated task data, built models, samples); :func:`in_cache` tells them
  apart from a user's paths, which are never written.
- :func:`set_cache_env`: points the caches of the libraries the commands use at the run cache
  instead of ``~`` — Hugging Face ``datasets`` (``HF_DATASETS_CACHE``), W&B (``WANDB_CACHE_DIR``,
  ``WANDB_CONFIG_DIR``, ``WANDB_DATA_DIR``; its run files go to the run directory: ``WANDB_DIR``
  in :mod:`recipes.local.track`, ``dir=`` in :mod:`analysis.wandb_report`), matplotlib (``MPLCONFIGDIR``), Triton (``TRITON_CACHE_DIR``) and torch
  extensions/inductor (``TORCH_EXTENSIONS_DIR``, ``TORCHINDUCTOR_CACHE_DIR``). A variable the user
  set is left alone. The Hugging Face *hub* cache (``HF_HOME``/``HF_HUB_CACHE``) is not moved: it
  holds the user's downloaded models, shared with every other tool.
- :func:`quiet_verl`: veRL probes accelerators and optional training engines at import and, on a
  machine without a GPU, logs "No supported accelerator detected … Falling back to 'nvidia'",
  "Platform 'nvidia' … is registered but not available" and five "<x> engine is not available"
  warnings. They are filtered at their source (veRL's platform logger, and ``warnings`` filters
  for ``verl.workers.engine``); the first one hidden is replaced by one line saying veRL runs on
  CPU.

:func:`setup` does both; ``core/__init__.py`` calls it once, so every entry point (they all import
``core`` before veRL, ``datasets``, ``wandb`` or matplotlib) gets it before those libraries read
their variables. Not covered: caches of tools run outside these commands (pip, ruff, pytest).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path

#: veRL's logger that reports the accelerator probe.
PLATFORM_LOGGER = "verl.plugin.platform.platform_manager"
#: veRL's optional training engines, each warned about when its package is missing.
_ENGINE_WARNINGS = r"(torchtitan|veomni|automodel|mindspeed|megatron) engine is not available"
CPU_LINE = (
    "[verl] no GPU accelerator found: veRL's functions run on CPU here "
    "(its platform and optional-engine warnings are hidden)"
)


def cache_root() -> Path:
    """The run cache: ``$RLVR_CACHE``, else ``~/.cache/rlvr`` (the same default as ``conf/``)."""
    return Path(os.environ.get("RLVR_CACHE") or Path.home() / ".cache" / "rlvr").expanduser()


def in_cache(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` lies inside the run cache, whose files the project may write.

    >>> in_cache(cache_root() / "data" / "x.parquet"), in_cache(cache_root().parent / "x.parquet")
    (True, False)
    """
    root = cache_root().resolve()
    return root in Path(path).expanduser().resolve().parents


def cache_env() -> dict[str, str]:
    """The library cache variables and their defaults under :func:`cache_root`."""
    root = cache_root()
    return {
        "HF_DATASETS_CACHE": str(root / "hf" / "datasets"),
        "WANDB_CACHE_DIR": str(root / "wandb" / "cache"),
        "WANDB_CONFIG_DIR": str(root / "wandb" / "config"),
        "WANDB_DATA_DIR": str(root / "wandb" / "data"),
        "MPLCONFIGDIR": str(root / "matplotlib"),
        "TRITON_CACHE_DIR": str(root / "triton"),
        "TORCH_EXTENSIONS_DIR": str(root / "torch_extensions"),
        "TORCHINDUCTOR_CACHE_DIR": str(root / "torchinductor"),
    }


def set_cache_env() -> dict[str, str]:
    """Set each variable of :func:`cache_env` that the user has not set; returns those set."""
    done = {}
    for key, value in cache_env().items():
        if not os.environ.get(key):
            os.environ[key] = value
            done[key] = value
    return done


class _PlatformFilter(logging.Filter):
    """Drops veRL's "no accelerator, falling back" warning (printing :data:`CPU_LINE` once instead) and,
    after it, the "registered but not available" one; on a GPU machine (a CPU-only Ray actor) the
    latter is kept, since no fallback explains it there."""

    said = False

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        if "No supported accelerator detected" in msg:
            if not _PlatformFilter.said:
                _PlatformFilter.said = True
                print(CPU_LINE, file=sys.stderr, flush=True)
            return False
        return not (_PlatformFilter.said and "is registered but not available" in msg)


def quiet_verl() -> None:
    """Install the filters for veRL's CPU warnings (idempotent; before veRL is imported)."""
    logger = logging.getLogger(PLATFORM_LOGGER)
    if not any(isinstance(f, _PlatformFilter) for f in logger.filters):
        logger.addFilter(_PlatformFilter())
    warnings.filterwarnings("ignore", message=_ENGINE_WARNINGS, category=UserWarning)


def setup() -> None:
    """:func:`set_cache_env` and :func:`quiet_verl`: what every command does before its work."""
    set_cache_env()
    quiet_verl()
