"""docgen's blocks from the veRL CPU profile (``results/profile_verl_cpu``): the grpo arms' table with
each engine's slowdown beside a competing process, and the SmolLM2 run's time at its defaults.

A profile record written here (``core.results``, in a private results folder), with only the keys the
blocks read, so each number below follows from the record by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core import results
from docgen import real_model, verl_cpu


def _arm(
    command: str, wall: float, step: float, testing: float | None = None, steps: int = 3
) -> dict[str, Any]:
    med = {"step": step, "update_actor": step / 2, **({"testing": testing} if testing else {})}
    return {
        "command": command,
        "competing_processes": 0,
        "load_avg": {"before": [3.0, 2.0, 1.0], "after": [3.5, 2.0, 1.0]},
        "wall_s": wall,
        "cpu_s": wall * 1.5,
        "first_step_from_launch_s": None if "engine=local" in command else 40.0,
        "nice": {"WorkerDict": [0]} if "engine=local" not in command else {"python": [0]},
        "per_step": {"median_s": med, "steps": steps},
    }


def _arms() -> dict[str, Any]:
    grpo = "python -m recipes.run engine=verl recipe=grpo"
    local = "python -m recipes.run engine=local recipe=grpo"
    return {
        "grpo": _arm(grpo, 100.0, 4.0),
        "grpo_loaded": _arm(grpo, 150.0, 8.0),
        "grpo_local": _arm(local, 40.0, 1.0),
        "grpo_local_loaded": _arm(local, 50.0, 1.5),
        # 2 steps, 2 evaluations of 16 problems, 2 s per problem
        "smollm2": _arm(f"{grpo} model=smollm2_135m local.eval_samples=16", 600.0, 100.0, 32.0, steps=2),
    }


@pytest.fixture
def profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    arms = _arms()
    results.write_table("profile_verl_cpu", "latest", {"arms": arms, "limit": None, "load_avg_before": [1, 1, 1], "load_avg_after": [1, 1, 1]})  # fmt: skip


def test_each_engines_slowdown_beside_a_competing_process() -> None:
    text = verl_cpu._grpo_arms(_arms())
    assert "veRL's trainer 1.50x in wall time, 2.00x per step" in text
    assert "the local engine 1.25x in wall time, 1.50x per step" in text
    assert "| `grpo_local` | the local engine, alone |" in text  # no first step of veRL's: a dash
    assert "| 40 | – | 1.00 |" in text


def test_the_smollm2_runs_time_at_its_defaults(profile: None) -> None:
    d = real_model._defaults()
    text = real_model.run_time_block().markdown
    # the 2-step run + the remaining steps at 100 s + the remaining held-out problems at 2 s each
    minutes = (600 + (d["steps"] - 2) * 100 + (d["evals"] * d["eval_samples"] - 2 * 16) * 2) / 60
    assert f"| veRL's trainer | 600 | 100 | 2.0 | {minutes:.0f} | 3.0 |" in text
    assert f"({d['steps']} steps, {d['evals']} held-out evaluations of {d['eval_samples']} problems)" in text
