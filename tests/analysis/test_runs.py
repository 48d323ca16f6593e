"""Run readers on synthetic run dirs and on a hand-written veRL FileLogger / _write_generations dump."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from core.runs import Run, find_runs, group_key, group_runs, is_correct, response_length, swept_axes

# Lines exactly as veRL 0.9.1's FileLogger writes them (orjson, OPT_SERIALIZE_NUMPY), including a
# step that logged only validation keys and one that re-logs a step (last write wins).
VERL_METRICS = [
    '{"step":1,"data":{"critic/score/mean":0.125,"critic/rewards/mean":0.125,"response_length/mean":212.5,'
    '"actor/entropy":1.02,"actor/pg_clipfrac":0.0031,"actor/ppo_kl":0.0001,"timing_s/gen":3.2}}',
    '{"step":2,"data":{"critic/score/mean":0.25,"response_length/mean":220.0,"actor/entropy":0.98}}',
    '{"step":2,"data":{"val-core/openai/gsm8k/acc/mean@1":0.31}}',
    "this line is truncated {",
    '{"step":3,"data":{"critic/score/mean":0.5,"response_length/mean":230.0,"actor/entropy":0.95,'
    '"actor/pg_clipfrac":[0.004]}}',
    '{"step":3,"data":{"critic/score/mean":0.375}}',
]
VERL_GEN = [  # veRL _write_generations rows: no uid, no response_length; groups share the input
    {"input": "Q1", "output": "#### 4", "gts": "4", "score": 1.0, "step": 3, "acc": True, "pred": "4"},
    {"input": "Q1", "output": "#### 5", "gts": "4", "score": 0.0, "step": 3, "acc": False, "pred": "5"},
    {"input": "Q2", "output": "no answer", "gts": "9", "score": 0.0, "step": 3},
]


def write_verl_run(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "metrics.jsonl").write_text("\n".join(VERL_METRICS) + "\n")
    (path / "rollouts").mkdir()
    (path / "rollouts" / "3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in VERL_GEN))
    (path / ".hydra").mkdir()
    (path / ".hydra" / "overrides.yaml").write_text(
        yaml.safe_dump(["recipe=dapo", "clip=ppo", "rlvr.seed=3"])
    )
    (path / "config.yaml").write_text(yaml.safe_dump({"rlvr": {"recipe": "dapo", "seed": 3}}))
    return path


@pytest.fixture
def verl_run(tmp_path: Path) -> Path:
    return write_verl_run(tmp_path / "verl")


def test_reads_verl_file_logger_format(verl_run: Path) -> None:
    run = Run(verl_run)
    score = run.series("critic/score/mean")
    assert score is not None
    assert score.steps.tolist() == [1, 2, 3] and score.values.tolist() == [
        0.125,
        0.25,
        0.375,
    ]  # last write wins
    assert run.series("actor/pg_clipfrac").values.tolist() == [0.0031, 0.004]  # 1-element list unwrapped
    assert run.series("^val-core/.*/acc/mean@").values.tolist() == [0.31]
    assert run.series("actor/kl_loss") is None  # not logged -> None, no exception
    assert run.bad_lines == 1
    assert run.recipe == "dapo" and run.seed == 3
    assert run.overrides == {"recipe": "dapo", "clip": "ppo", "rlvr.seed": "3"}
    rows = run.samples("rollouts")
    assert [group_key(r) for r in rows] == ["Q1", "Q1", "Q2"]
    assert [is_correct(r) for r in rows] == [True, False, False]  # acc, acc, score fallback
    assert response_length(rows[0]) == len("#### 4")  # characters when tokens were not logged


def test_empty_dir_is_tolerated(tmp_path: Path) -> None:
    run = Run(tmp_path)
    assert run.metrics == {} and run.manifest == {} and run.config == {} and run.samples() == []
    assert run.seed is None and run.recipe == ""


def test_synthetic_run_roundtrip(healthy_run: Path) -> None:
    run = Run(healthy_run)
    assert run.manifest["engine"] == "local" and run.cfg("rlvr.seed") == 0
    assert len(run.series("actor/entropy")) == 60
    assert run.sample_steps("rollouts") == [1, 11, 21, 31, 41, 51]
    rows = run.samples("rollouts", 11)
    assert len(rows) == 8 * 4 and len({r["uid"] for r in rows}) == 8
    assert np.isfinite(run.series("critic/score/mean").window(0.1)).all()


def test_sweep_discovery_and_axes(sweep_dir: Path) -> None:
    runs = find_runs(sweep_dir)
    assert len(runs) == 9
    assert swept_axes(runs) == ["kl"]  # rlvr.seed and recipe do not split arms
    axes, arms = group_runs(runs)
    assert list(arms) == ["kl=none", "kl=k3_0.01", "kl=k3_0.05"]
    assert all(sorted(r.seed for r in rs) == [0, 1, 2] for rs in arms.values())


def test_recipe_is_the_axis_when_overrides_agree(tmp_path: Path) -> None:
    from analysis.synthetic import write_run

    a = write_run(tmp_path / "a", steps=3, recipe="grpo")
    b = write_run(tmp_path / "b", steps=3, recipe="dapo")
    runs = find_runs(tmp_path)
    assert {r.path for r in runs} == {a, b}
    assert swept_axes(runs) == ["recipe"]  # recipe=... differs in the overrides


def test_diagnose_and_report_on_verl_format(verl_run: Path, tmp_path: Path) -> None:

    from analysis import report
    from analysis.diagnose import checklist as diagnose
    from core.cli import load

    cfg = load("analysis", "diagnose")
    cfg.run, cfg.out = str(verl_run), str(tmp_path / "diag")
    doc, _ = diagnose.run(cfg)
    status = {s.title.split(".")[0]: s for s in doc.sections}
    assert "fail" not in {s.status for s in doc.sections}
    assert "1 groups" in status["2"].verdict  # Q1 has two samples; Q2's single sample is no group
    assert status["4"].status == "ok" and status["3"].status == "not_logged"
    rcfg = load("analysis", "report")
    rcfg.runs, rcfg.out, rcfg.publish = [str(verl_run)], str(tmp_path / "rep"), "none"
    rdoc, files = report.run(rcfg)
    assert "1 runs in 1 arms" in rdoc.intro[0] and files["html"].exists()
