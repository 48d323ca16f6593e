"""A model-based reward on veRL's trainer on this CPU, the long checks (``make test-all``).

GRPO with ``reward_model=orm`` runs 2 steps on veRL's trainer from an empty cache, the reward model
served by the CPU backend (:mod:`verl_cpu.reward_model`); every score the trainer trained on (veRL's
rollout dump, ``trainer.rollout_data_dir``: the decoded prompt and response and the score of each
sample) equals the same reward model's score of that (prompt, response) computed in-process
(:func:`verl_cpu.rm_check.offline_scores`),
within 1e-5, so the reward loop neither loses nor reorders a sample. The pre-flight rehearsal runs a
recipe with a reward model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_main_ppo import SMALL, finite, run_verl, steps

from core import reward_model as rmod
from verl_cpu.rm_check import offline_scores

pytestmark = pytest.mark.slow

#: Largest difference allowed between the trainer's score and the offline one.
TOL = 1e-5


def test_grpo_on_a_reward_model_trains_on_the_models_own_scores(tiny_checkpoint, tmp_path: Path) -> None:
    from recipes.supervise import launched, run_key

    policy = tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")
    orm = rmod.save(rmod.build(policy, "orm", seed=1), tmp_path / "orm")
    run_dir = tmp_path / "run"
    args = ["recipe=grpo", "reward_model=orm", f"reward.reward_model.model_path={orm}"]
    args += [f"actor_rollout_ref.model.path={policy}", f"run_dir={run_dir}", *SMALL]
    args += [f"trainer.rollout_data_dir={run_dir / 'rollouts'}"]
    p = run_verl(args, tmp_path / "cache", timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "reward.reward_model.rollout.name: vllm -> cpu" in p.stderr
    by_step = steps(run_dir)
    for s in (1, 2):
        assert finite(by_step[s], "actor/pg_loss", "actor/grad_norm", "critic/score/mean"), by_step[s]
    assert finite(by_step[2], "val-aux/arithmetic/rm_score/mean@1", "val-core/arithmetic/acc/mean@1")
    pairs = offline_scores(run_dir, orm)
    cfg = yaml.safe_load((run_dir / "verl_config.yaml").read_text())
    per_step = cfg["data"]["train_batch_size"] * cfg["actor_rollout_ref"]["rollout"]["n"]
    assert len(pairs) == 2 * per_step, len(pairs)  # every sample of both steps
    worst = max(abs(a - b) for a, b in pairs)
    print(f"score check: {len(pairs)} samples, largest |trainer - offline| = {worst:.3g}")
    assert worst <= TOL, worst
    # the check has power: the scores differ between samples by far more than the tolerance, so a lost or
    # reordered sample would show
    trainer = [a for a, _ in pairs]
    assert max(trainer) - min(trainer) > 100 * TOL
    assert max(abs(a - b) for a, (_, b) in zip(trainer, [*pairs[1:], pairs[0]], strict=True)) > 100 * TOL
    assert not launched(run_key(run_dir))


def test_the_rehearsal_runs_a_recipe_with_a_reward_model(hydra_ctx, tmp_path: Path) -> None:
    from core.compose import compose
    from recipes.preflight.verl_trainer import rehearse

    res = rehearse(compose(["recipe=grpo", "reward_model=orm"]), tmp_path / "rehearsal")
    assert res["code"] == 0, res["failure"]
    assert finite(res["metrics"], "actor/pg_loss", "actor/grad_norm", "critic/score/mean")
    assert ("reward.reward_model.rollout.name", "vllm", "cpu") in res["cpu"]
