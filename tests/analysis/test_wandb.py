"""W&B grouping/tags, an offline replay of a run (no API key), and a Report built without network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import wandb_workspaces.reports.v2 as wr

from analysis.wandb_report import build_report, log_run, run_settings
from core.cli import call
from core.runs import find_runs, group_runs


def test_run_settings_group_and_tags(sweep_dir: Path) -> None:
    runs = find_runs(sweep_dir)
    axes, _ = group_runs(runs)
    s = run_settings(runs[0], axes)
    assert s["group"] == "multirun" and s["project"] == "rlvr-recipes"
    assert s["tags"] == ["grpo", "scale=laptop", "kl=none"]
    assert s["config"]["axes"] == {"kl": "none"} and s["config"]["rlvr"]["seed"] == 0


def test_report_is_built_offline(sweep_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    runs = find_runs(sweep_dir)
    axes, _ = group_runs(runs)
    rep = build_report(runs, axes, entity="team", project="rlvr-grpo")
    assert isinstance(rep, wr.Report) and rep.entity == "team" and rep.project == "rlvr-grpo"
    h1, _, grid = rep.blocks
    assert isinstance(grid, wr.PanelGrid)
    ys = [p.y[0] for p in grid.panels]
    assert ys[:3] == ["val-core/arithmetic/acc/mean@4", "critic/score/mean", "critic/rewards/mean"]
    assert "training/rollout_probs_diff_mean" not in ys  # nothing logged it
    assert all(p.groupby_rangefunc == "minmax" for p in grid.panels)
    rs = grid.runsets[0]
    assert rs.groupby == ["config.axes.kl"]
    from wandb_workspaces import expr

    parsed = expr.expr_to_filters(rs.filters)  # the filter string is valid W&B filter syntax
    leaf = parsed.filters[0] if parsed.filters else parsed  # one group: a single comparison
    assert (leaf.op, leaf.key.section, leaf.key.name, leaf.value) == ("=", "run", "group", "multirun")
    model = grid.panels[0]._to_model()  # panels serialise without any network call
    assert model.config.metrics == ["val-core/arithmetic/acc/mean@4"]


def test_publish_without_key_fails_clearly(
    sweep_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from analysis import report

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("PUBLISH", "wandb")
    with pytest.raises(RuntimeError, match="needs WANDB_API_KEY"):
        call(
            report.command,
            "analysis",
            "report",
            [f"runs=[{sweep_dir / '0'},{sweep_dir / '3'}]", f"out={tmp_path}"],
        )
    assert not (tmp_path / "report.md").exists()  # refused before anything is written


def test_log_run_offline(healthy_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = find_runs(healthy_run)[0]
    out = log_run(run, [], mode="offline", root=tmp_path)
    assert out.is_dir() and out.name.startswith("offline-run-")
    assert any(p.suffix == ".wandb" for p in out.iterdir())
    assert os.environ.get("WANDB_API_KEY") is None


def test_wandb_cli_groups_and_tags(sweep_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    from analysis import wandb_report

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_SILENT", "true")
    assert (
        call(
            wandb_report.command,
            "analysis",
            "wandb",
            [f"runs=[{sweep_dir / '0'},{sweep_dir / '3'}]", f"dir={tmp_path}"],
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert "group=multirun tags=['grpo', 'scale=laptop', 'kl=none']" in lines[0]
    assert "kl=k3_0.01" in lines[1] and len(list((tmp_path / "wandb").glob("offline-run-*"))) == 2
