"""Shared test set-up: tests never touch the network or the user's caches."""

from __future__ import annotations

import os

import pytest

import core  # noqa: F401 - pins the CPU arithmetic (core.numerics) before any test computes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_ignore_collect(collection_path, config):  # noqa: ANN001, ANN201 - pytest hook signature
    """conftest.py files are plugins, not doctest modules (``--doctest-modules`` would import them twice)."""
    return True if collection_path.name == "conftest.py" else None


@pytest.fixture(scope="session")
def laptop_teacher(tmp_path_factory):  # noqa: ANN001, ANN201 - pytest fixture
    """Overrides that give ``recipe=opd`` at laptop scale a teacher: a tiny checkpoint on the laptop
    tokenizer (``make results NAME=opd`` builds the real one; a missing teacher is refused)."""
    from core import model as models

    spec = models.ModelSpec(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    path = models.build_checkpoint(tmp_path_factory.mktemp("teacher") / "t", spec, "char", seed=1)

    def overrides(recipe: str) -> list[str]:
        key = "distillation.teacher_models.teacher_model.model_path"
        return [f"{key}={path}"] if recipe == "opd" else []

    return overrides
