"""``adv=grpo_shuffled``: the local engine's shuffled-reward control as a veRL advantage estimator.

The permutation is the local engine's (``Engine._shuffle``) for the same random state; veRL's
``compute_advantage`` and the V1 trainer's ``compute_advantage_for_multi_trajectories`` reach it
through veRL's registry and give GRPO's advantage of the permuted rewards; veRL's processes learn the
name from ``actor_rollout_ref.model.external_lib`` (``HFModelConfig`` imports it); the stream is
seeded by the run's seed; and validation refuses the combinations that would not shuffle as asked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import open_dict

from core.compose import compose
from core.sampler import Rollout
from recipes import shuffled_rewards
from recipes.local import algo
from recipes.local.trainer import Engine
from recipes.validate import ConfigError, validate

N, GROUPS, R = 4, 3, 6


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Token scores on each row's last token (one empty row), the mask and group ids."""
    g = torch.Generator().manual_seed(seed)
    B = N * GROUPS
    lens = torch.randint(1, R + 1, (B,), generator=g)
    lens[5] = 0
    mask = (torch.arange(R)[None] < lens[:, None]).float()
    scores = torch.zeros(B, R)
    rewards = torch.rand(B, generator=g).round()
    has = lens > 0
    scores[torch.arange(B)[has], lens[has] - 1] = rewards[has]
    return scores, mask, np.asarray([f"g{i // N}" for i in range(B)], dtype=object)


def test_permutation_is_the_local_engines(tiny_lm, hydra_ctx) -> None:
    """For the same generator state, ``shuffle_rewards`` is ``Engine._shuffle`` (all rows, last token)."""
    model, tok = tiny_lm()
    cfg = compose(["recipe=r1_zero", "scale=laptop_base", "++local.shuffle_rewards=true"])
    eng = Engine(cfg, model, tok, reward_fn=None, train=[], val=[])
    scores, mask, _ = batch()
    ro = Rollout(
        torch.zeros(len(mask), 2, dtype=torch.long), torch.ones(len(mask), 2), mask.long(), mask.long(), mask
    )
    eng.gen.manual_seed(7)
    theirs, _ = eng._shuffle(ro, scores, {})
    mine = shuffled_rewards.shuffle_rewards(scores, mask, torch.Generator().manual_seed(7))
    torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    assert sorted(mine.sum(-1).tolist()) == sorted(scores.sum(-1).tolist())
    assert not torch.equal(mine, scores), "a permutation of 12 rows moves some reward"


def test_veRL_advantage_paths_reach_the_estimator(hydra_ctx) -> None:
    """veRL's ``compute_advantage`` and the V1 trainer's multi-trajectory path dispatch ``grpo_shuffled``
    through the registry: GRPO's advantage of the permuted rewards, the same on both paths and on the
    local engine's ``compute_advantages``."""
    from verl import DataProto
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    cfg = compose(["recipe=r1_zero", "scale=laptop_base", "adv=grpo_shuffled", "rlvr.seed=3"])
    scores, mask, uids = batch(1)

    def data() -> DataProto:
        return DataProto.from_dict(
            tensors={"token_level_rewards": scores.clone(), "response_mask": mask.clone()},
            non_tensors={"uid": uids.copy()},
        )

    outs = []
    for path in ("ray_trainer", "v1", "local"):
        shuffled_rewards._GENERATORS.clear()  # each path from the run's first step
        if path == "ray_trainer":
            out = compute_advantage(data(), "grpo_shuffled", num_repeat=N, config=cfg.algorithm)
        elif path == "v1":
            keys = [f"{u}_{i % N}_0" for i, u in enumerate(uids)]
            out = compute_advantage_for_multi_trajectories(
                data(), keys, "grpo_shuffled", 1.0, 1.0, N, True, cfg.algorithm
            )
        else:
            b = DataProto.from_dict(
                tensors={"token_level_scores": scores.clone(), "response_mask": mask.clone()},
                non_tensors={"uid": uids.copy()},
            )
            out = algo.compute_advantages(cfg, b)[0]
        outs.append(out.batch["advantages"])
    want, _ = compute_grpo_outcome_advantage(
        shuffled_rewards.shuffle_rewards(scores, mask, torch.Generator().manual_seed(3)), mask, uids
    )
    for adv in outs:
        torch.testing.assert_close(adv, want, rtol=0, atol=0)
    plain, _ = compute_grpo_outcome_advantage(scores, mask, uids)
    assert not torch.equal(want, plain)


def test_stream_follows_the_run_seed(hydra_ctx) -> None:
    """One generator per seed (the config's ``data.seed``, which is ``rlvr.seed``), advanced per step."""
    scores, mask, uids = batch(2)
    got = {}
    for seed in (0, 1):
        cfg = compose(["recipe=r1_zero", "scale=laptop_base", "adv=grpo_shuffled", f"rlvr.seed={seed}"])
        shuffled_rewards._GENERATORS.clear()
        assert shuffled_rewards.seed_of(cfg.algorithm) == seed
        a = shuffled_rewards.compute_grpo_shuffled_advantage(scores, mask, uids, cfg.algorithm)[0]
        b = shuffled_rewards.compute_grpo_shuffled_advantage(scores, mask, uids, cfg.algorithm)[0]
        assert not torch.equal(a, b), "the second step draws another permutation"
        got[seed] = a
    assert not torch.equal(got[0], got[1])
    assert shuffled_rewards.seed_of(None) == 0


def test_veRL_processes_learn_the_name_from_external_lib(tiny_checkpoint) -> None:
    """A fresh process: veRL's registry lacks ``grpo_shuffled`` until ``HFModelConfig`` (built by the
    trainer and every worker) imports ``actor_rollout_ref.model.external_lib``."""
    path = tiny_checkpoint()
    code = (
        "from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY as R\n"
        "from verl.workers.config.model import HFModelConfig\n"
        "before = 'grpo_shuffled' in R\n"
        f"HFModelConfig(path={str(path)!r}, external_lib='recipes.shuffled_rewards')\n"
        "print(before, 'grpo_shuffled' in R)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2]
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["False", "True"]


@pytest.mark.parametrize(
    ("overrides", "engine", "refused"),
    [
        (["adv=grpo_shuffled"], "local", None),
        (["++local.shuffle_rewards=true"], "verl", "[local.shuffle_rewards]"),
        (["algorithm.adv_estimator=grpo_shuffled"], "verl", "[actor_rollout_ref.model.external_lib]"),
        (["adv=grpo_shuffled", "++local.shuffle_rewards=true"], "local", "shuffles twice"),
    ],
)
def test_validation(overrides: list[str], engine: str, refused: str | None, hydra_ctx) -> None:
    from recipes.validate.reward import shuffled_rewards as rule

    cfg = compose(["recipe=r1_zero", "scale=laptop_base", *overrides])
    with open_dict(cfg):
        cfg.engine.name = engine
    errs = rule(cfg)
    if refused is None:
        assert errs == []
        validate(cfg, engine)
    else:
        assert len(errs) == 1 and refused in errs[0] and "fix:" in errs[0], errs
        with pytest.raises(ConfigError):
            validate(cfg, engine)


def test_composes_on_both_engines(hydra_ctx) -> None:
    """``adv=grpo_shuffled`` sets the estimator and the module veRL's processes import, nothing else of the recipe."""
    base = compose(["recipe=r1_zero", "scale=laptop_base"])
    cfg = compose(["recipe=r1_zero", "scale=laptop_base", "adv=grpo_shuffled"])
    assert cfg.algorithm.adv_estimator == shuffled_rewards.NAME
    assert cfg.actor_rollout_ref.model.external_lib == shuffled_rewards.MODULE
    assert cfg.algorithm.norm_adv_by_std_in_grpo == base.algorithm.norm_adv_by_std_in_grpo
