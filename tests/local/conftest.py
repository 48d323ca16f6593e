"""Shared fixtures for the local-engine tests: one thread, and a tiny cached cold start per session."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory, request):
    """A private RLVR_CACHE with small data files; the cold start is cut to a few SFT steps."""
    d = tmp_path_factory.mktemp("rlvr_cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("RLVR_CACHE", str(d))
    request.addfinalizer(mp.undo)
    return d


@pytest.fixture(scope="session")
def fast() -> tuple[str, ...]:
    """Overrides that keep a run to seconds (see FAST); session-scoped, so module fixtures can share runs."""
    return tuple(FAST)


# overrides that keep a run to seconds: tiny data, a 20-step cold start, short evaluations
FAST = [
    "scale=laptop",
    "local.task.train_n=400",
    "local.task.val_n=64",
    "local.sft.max_steps=20",
    "local.sft.eval_every=20",
    "local.sft.eval_n=16",
    "local.sft.min_pass=0.0",
    "local.eval_samples=32",
    "local.progress=false",
    "data.max_response_length=40",
    "trainer.logger=[file]",
]
