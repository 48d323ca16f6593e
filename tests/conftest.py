"""Shared test set-up: tests never touch the network or the user's caches."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_ignore_collect(collection_path, config):  # noqa: ANN001, ANN201 - pytest hook signature
    """conftest.py files are plugins, not doctest modules (``--doctest-modules`` would import them twice)."""
    return True if collection_path.name == "conftest.py" else None
