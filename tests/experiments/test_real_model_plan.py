"""The real-model experiments' plans, without the model (fast): the paths ``make results
NAME=real_model_paths`` times on veRL's trainer, and the held-out set ``real_model_start`` measures."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli import load
from experiments.real_model_paths import TEACHER_KEY, required, steps, teacher_of


def test_every_verl_recipe_is_a_path_after_the_local_rows_and_opd_learns_from_the_grpo_row(tmp_path) -> None:
    cfg = load("command", "real_model_paths", [f"work={tmp_path}"])
    assert cfg.paths.index("rl") < cfg.paths.index("rl_verl")  # opd's teacher is the rl grpo row's policy
    table = steps(cfg, tmp_path)
    verl = {label: cmd for label, cmd, _ in table["rl_verl"]}
    assert list(verl) == [f"rl-verl {r}" for r in cfg.verl_recipes]
    assert {"rl-verl grpo", "rl-verl orz_ppo", "rl-verl opd"} <= set(verl)
    for label, cmd in verl.items():
        assert "engine=verl" in cmd and "scale=laptop_smollm2" in cmd, label
        assert all(o in cmd for o in cfg.verl_overrides), label
        assert f"run_dir={tmp_path / 'rl' / 'verl' / label.split()[-1]}" in cmd
    teacher = teacher_of(cfg, tmp_path)
    assert f"{TEACHER_KEY}={teacher}" in verl["rl-verl opd"]
    grpo = next(cmd for label, cmd, _ in table["rl"] if label == "rl grpo")
    assert f"run_dir={Path(teacher).parents[2]}" in grpo and "trainer.total_training_steps=2" in grpo
    assert teacher.endswith(f"global_step_{cfg.rl_steps}/huggingface")
    assert not any(TEACHER_KEY in " ".join(cmd) for label, cmd in verl.items() if label != "rl-verl opd")


@pytest.mark.parametrize(
    ("label", "n"), [("rl grpo", 3), ("rl-verl grpo", 3), ("rl orz_ppo", 4), ("rl-verl orz_ppo", 4)]
)
def test_a_critic_recipe_must_also_log_a_finite_value_loss(label: str, n: int) -> None:
    row = {"label": label, "critic/score/mean": 0.1, "actor/pg_loss": 0.0, "actor/grad_norm": 1.0}
    assert len(required(row)) == n
    assert (None in required(row)) == (n == 4)


def test_the_start_is_measured_on_the_held_out_rows_a_run_evaluates(tmp_path, monkeypatch) -> None:
    """``real_model_start`` writes the candidate's task files as a run would and reads as many held-out
    rows as a run evaluates: all 15 held-out single-digit questions, 64 of the 1..19 ones."""
    import pyarrow.parquet as pq

    from experiments.real_model_start import held_out

    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    path, limit, task = held_out("sum_question_1digit")
    assert path.is_relative_to(tmp_path) and path.name == "test.parquet"
    rows = pq.read_table(path).to_pylist()
    assert limit == len(rows) == 15 and task["params"] == {"lo": 1, "hi": 9, "k": 2}
    questions = [r["extra_info"]["question"] for r in rows]
    assert len(set(questions)) == 15
    _, limit19, task19 = held_out("sum_question")
    assert limit19 == 64 and task19["params"]["hi"] == 19
