"""Comparison report over a synthetic sweep: arms, effect direction, files, missing metrics."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from analysis import report
from analysis.synthetic import write_run
from core.cli import call, load


def cfg(**kw: object) -> OmegaConf:
    c = load("analysis", "report")
    c.publish = "none"
    for k, v in kw.items():
        c[k] = v
    return c


def rows_for(doc, metric: str) -> dict[str, list]:
    table = doc.sections[0].tables[0]
    return {r[1]: r for r in table.rows if r[0] == metric}


def test_sweep_report(sweep_dir: Path, tmp_path: Path) -> None:
    doc, files = report.run(cfg(sweep=str(sweep_dir), out=str(tmp_path)))
    assert "9 runs in 3 arms; swept axes: kl; baseline arm: kl=none" in doc.intro[0]
    acc = rows_for(doc, "training score (critic/score/mean)")
    assert list(acc) == ["kl=none", "kl=k3_0.01", "kl=k3_0.05"]
    assert all(r[2] == 3 for r in acc.values())  # seeds per arm
    # arms were built with gains 0.2 / 0.35 / 0.5: the deltas are positive, ordered, CIs exclude 0
    d1, d2 = acc["kl=k3_0.01"][5], acc["kl=k3_0.05"][5]
    assert 0.1 < d1 < d2 < 0.4
    lo = float(acc["kl=k3_0.05"][6].strip("[]").split(",")[0])
    assert lo > 0 and acc["kl=k3_0.05"][7] > 2  # large Hedges g
    assert math.isnan(acc["kl=none"][5])  # baseline vs itself is n/a
    for name in (
        "report.md",
        "report.html",
        "curve_score.png",
        "curve_entropy.png",
        "length_correct_incorrect.png",
    ):
        assert (tmp_path / name).stat().st_size > 500, name
    assert "not logged by any run: rollout vs training prob diff" in files["markdown"].read_text()


def test_runs_list_baseline_and_missing_metrics(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a", steps=20, recipe="grpo", drop_keys=("actor/entropy", "actor/pg_clipfrac"))
    b = write_run(tmp_path / "b", steps=20, recipe="dapo", dump_every=100)
    doc, files = report.run(cfg(runs=[str(a), str(b)], out=str(tmp_path / "rep"), baseline="recipe=dapo"))
    ent = rows_for(doc, "entropy")
    assert ent["recipe=grpo"][2] == 0 and math.isnan(ent["recipe=grpo"][3])  # not logged there: n/a, no crash
    assert ent["recipe=dapo"][2] == 1
    assert "Δ vs recipe=dapo" in files["markdown"].read_text()
    with pytest.raises(ValueError, match="baseline='nope' is not an arm"):
        report.run(cfg(runs=[str(a), str(b)], out=str(tmp_path / "x"), baseline="nope"))


def test_cli_requires_input(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="give runs="):
        call(report.command, "analysis", "report", [])
    with pytest.raises(FileNotFoundError):
        call(report.command, "analysis", "report", ["runs=[/nonexistent/dir]"])


def test_one_panel_per_validation_set(tmp_path: Path) -> None:
    import json

    runs = []
    for name, shift in (("a", 0.0), ("b", 0.1)):
        d = tmp_path / name
        d.mkdir()
        lines = [
            {"step": s, "data": {"val-core/gsm8k/acc/mean@1": 0.2 + shift, "val-core/math/acc/mean@4": 0.1}}
            for s in (0, 10)
        ]
        (d / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        (d / "run.json").write_text(json.dumps({"recipe": "r", "overrides": [f"kl={name}"]}))
        runs.append(str(d))
    doc, _ = report.run(cfg(runs=runs, out=str(tmp_path / "rep")))
    gsm = rows_for(doc, "validation val-core/gsm8k/acc/mean@1")
    assert gsm["kl=b"][5] == pytest.approx(0.1)  # Δ vs the baseline arm kl=a
    assert rows_for(doc, "validation val-core/math/acc/mean@4")["kl=b"][5] == pytest.approx(0.0)
