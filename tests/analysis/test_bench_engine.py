"""benchmarks.bench_engine refuses, before building anything, when its TRL arm cannot run."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

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
    with pytest.raises(UsageError, match=r"not installed.*trl==1\.11\.0.*make bench-engine"):
        bench_engine.command(cfg)
    assert built == []  # nothing recorded, nothing built


def test_another_trl_version_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ratio is against one pinned peer: another installed trl is named, with the fix."""
    monkeypatch.setattr(bench_engine, "_trl_version", lambda: "1.16.0")
    monkeypatch.setattr(bench_engine.results, "write_experiment", lambda *a, **k: pytest.fail("recorded"))
    cfg = OmegaConf.create({"shape": "base", "rounds": 1, "steps": 1, "threads": 1, "savings_reps": 0})
    with pytest.raises(UsageError, match=r"trl 1\.16\.0 is installed.*needs trl==1\.11\.0"):
        bench_engine.command(cfg)


def test_the_trl_pin_is_the_same_everywhere_it_is_installed() -> None:
    """pyproject's ``bench`` extra and both Makefile installs name the benchmark's pin, and no other trl."""
    root = Path(__file__).resolve().parents[2]
    extra = re.search(r"^bench = \[(.*)\]$", (root / "pyproject.toml").read_text(), flags=re.M)
    assert extra and extra.group(1) == f'"{bench_engine.TRL}"'
    installs = re.findall(r'install -q "(trl[^"]*)"', (root / "Makefile").read_text())
    assert installs == [bench_engine.TRL, bench_engine.TRL]
