"""The staleness check of the async modes (verl_cpu.staleness) on veRL's metrics file: within the bound it
passes, a batch staler than ``max_off_policy_threshold - 1`` updates or a version from the future fails it,
and the command exits 1 with one ``error:`` line."""

from __future__ import annotations

import json
from pathlib import Path

from verl_cpu import staleness


def _write(run_dir: Path, worst: list[int], newest: list[int], threshold: int = 2) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = [{"step": 0, "data": {"val-core/acc": 0.0}}]
    rows += [
        {"step": s, "data": {staleness.WORST: w, staleness.NEWEST: n, "actor/pg_loss": 0.0}}
        for s, (w, n) in enumerate(zip(worst, newest, strict=True), start=1)
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "verl_config.yaml").write_text(
        f"trainer:\n  v1:\n    sampler:\n      max_off_policy_threshold: {threshold}\n"
    )
    return run_dir


def test_one_step_off_policy_passes_a_threshold_of_two(tmp_path: Path, capsys) -> None:
    run = _write(tmp_path / "ok", [0, 1, 1], [0, 1, 1])
    recorded = staleness.read(run)
    assert [(s.step, s.worst) for s in recorded] == [(1, 0), (2, 1), (3, 1)]
    assert staleness.check(recorded, 2, want=3) == []
    assert staleness.main([str(run)]) == 0
    assert "step 3: oldest weights 1 updates behind" in capsys.readouterr().out


def test_a_dropped_update_a_future_version_and_missing_steps_fail(tmp_path: Path, capsys) -> None:
    run = _write(tmp_path / "drop", [0, 1, 2], [0, -1, 2])
    errors = staleness.check(staleness.read(run), 2, want=4)
    assert errors[0] == "3 training steps recorded staleness, 4 expected"
    assert any(e.startswith("step 2: the rollout reported weight version 2, not yet trained") for e in errors)
    assert any(
        e.startswith("step 3: a trajectory was generated with weights 2 updates old (version 0)")
        for e in errors
    )
    assert staleness.main([str(run)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(err) == 1 and err[0].startswith("error: [") and "max_off_policy_threshold=2 allows 1" in err[0]
