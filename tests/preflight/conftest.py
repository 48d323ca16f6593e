"""Fixtures of the pre-flight and any-checkpoint tests: locally built checkpoints of three
architectures, a private RLVR_CACHE, and small veRL parquet files written by the task generators."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))  # checkpoints.py, bad_rewards.py sit next to the tests

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory) -> dict[str, Path]:
    """arch -> a tiny random checkpoint with a locally trained BPE tokenizer and a chat template."""
    from checkpoints import build

    root = tmp_path_factory.mktemp("ckpts")
    return {arch: build(arch, root / arch) for arch in ("llama", "qwen2", "gpt2")}


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory, request) -> Path:
    """A private RLVR_CACHE for the session (generated laptop data land here)."""
    d = tmp_path_factory.mktemp("rlvr_cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("RLVR_CACHE", str(d))
    request.addfinalizer(mp.undo)
    return d


@pytest.fixture(scope="session")
def rows() -> dict[str, list[dict]]:
    """Arithmetic rows in veRL's schema from the project's generator: 48 train, 16 validation."""
    from data_pipelines.tasks import TASKS

    gen = TASKS.get("arithmetic")
    return {"train": gen(n=48, seed=7, split="train"), "val": gen(n=16, seed=7, split="test")}
