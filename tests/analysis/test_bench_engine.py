"""benchmarks.bench_engine refuses, before building anything, when its TRL arm cannot run."""

from __future__ import annotations

import importlib.util

import pytest
from omegaconf import OmegaConf

from benchmarks import bench_engine
from core.cli import UsageError


def test_a_missing_trl_is_named_with_its_fix_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a)
    )
    built: list[str] = []
    monkeypatch.setattr(bench_engine.results, "write_experiment", lambda *a, **k: built.append("record"))
    cfg = OmegaConf.create({"shape": "base", "rounds": 1, "steps": 1, "threads": 1, "savings_reps": 0})
    with pytest.raises(UsageError, match=r"trl==1\.16\.0.*make bench-engine"):
        bench_engine.command(cfg)
    assert built == []  # nothing recorded, nothing built
