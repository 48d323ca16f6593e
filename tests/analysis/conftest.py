"""Shared fixtures: synthetic run directories in the run-dir contract (no engine needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.synthetic import write_run, write_sweep


@pytest.fixture(scope="session")
def healthy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("healthy") / "run", steps=60, with_logprobs=True)


@pytest.fixture(scope="session")
def sick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Entropy collapse, length rising with flat accuracy, planted verifier false negatives."""
    return write_run(
        tmp_path_factory.mktemp("sick") / "run",
        steps=60,
        entropy_end=0.05,
        length_growth=0.6,
        acc_gain=0.0,
        false_negatives=4,
    )


@pytest.fixture(scope="session")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sweep(
        tmp_path_factory.mktemp("sweep") / "multirun", "kl", ["none", "k3_0.01", "k3_0.05"], seeds=3, steps=40
    )
