"""Pipeline tests: one torch thread, a private model cache, tiny test-only stage kinds."""

from __future__ import annotations

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path_factory.getbasetemp() / "rlvr_cache"))
