"""Fixtures for the data-pipeline tests: a locally built tokenizer and tiny random checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model(tiny_checkpoint) -> Path:
    """A random-init ~0.1M-parameter Qwen2 + byte tokenizer, saved as an HF checkpoint dir (tests/conftest.py)."""
    return tiny_checkpoint((64, 2, 4, 2, 256, 2048), "byte", seed=0)


@pytest.fixture(scope="session")
def tokenizer(tiny_model: Path):
    from verl.utils import hf_tokenizer

    return hf_tokenizer(str(tiny_model))
