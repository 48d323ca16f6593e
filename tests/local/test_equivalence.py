"""On a fixed batch, the engine's advantages and loss are exactly veRL's, for every recipe.

For each ``conf/recipe/*.yaml`` composed at laptop scale: the advantages from
``recipes.local.algo.compute_advantages`` equal ``core_algos.get_adv_estimator_fn(estimator)``
called directly, and the loss from ``recipes.local.algo.policy_loss`` equals veRL's own composed
actor loss ``verl.workers.utils.losses.ppo_loss`` (policy loss + KL loss + entropy, with veRL's
global-batch normalisation) fed the same tensors in veRL's no-padding layout.
For ``gae`` (orz_ppo) the values are a fixed random tensor and the estimator is veRL's GAE.
The batch has empty responses (EOS sampled first: a row with no token), left padding and an
all-equal group. DAPO's overlong penalty is compared with veRL's own ``DAPORewardManager`` on the
same responses.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.compose import compose, options
from core.sampler import Rollout
from recipes.local import algo
from recipes.validate import validate

RECIPES = options("recipe")


def compose_recipe(name: str, *extra: str):
    return compose([f"recipe={name}", "scale=laptop", *extra])


def fixed_batch(n: int, groups: int = 3, P: int = 5, R: int = 7, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    B = groups * n
    prompts = torch.randint(10, 50, (B, P), generator=g)
    pmask = torch.ones(B, P, dtype=torch.long)
    pmask[:n, :2] = 0  # left padding in the first group
    responses = torch.randint(10, 50, (B, R), generator=g)
    lens = torch.randint(1, R + 1, (B,), generator=g)
    lens[1] = lens[n + 2] = 0  # empty responses (EOS first): rows with no token at all
    rmask = (torch.arange(R)[None] < lens[:, None]).long()
    log_prob = (torch.randn(B, R, generator=g) * 0.3 - 1.0) * rmask
    old = (log_prob + 0.2 * torch.randn(B, R, generator=g)) * rmask
    ref = (log_prob + 0.1 * torch.randn(B, R, generator=g)) * rmask
    acc = (torch.rand(B, generator=g) > 0.5).float()
    acc[-n:] = 1.0  # one all-equal group
    scores = torch.zeros(B, R)
    has = lens > 0
    scores[torch.arange(B)[has], lens[has] - 1] = acc[has]
    ent = torch.rand(B, R, generator=g) * rmask
    return dict(
        prompts=prompts,
        pmask=pmask,
        responses=responses,
        rmask=rmask,
        lens=lens,
        log_prob=log_prob,
        old=old,
        ref=ref,
        scores=scores,
        entropy=ent,
    )


def verl_ppo_loss(actor_cfg, b):
    """veRL's composed actor loss on the batch (log-probs laid out as its no-padding model output)."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.losses import ppo_loss

    flat, flat_ent = [], []
    for i in range(b["prompts"].shape[0]):
        pl, rl = int(b["pmask"][i].sum()), int(b["lens"][i])
        v, e = torch.zeros(pl + rl), torch.zeros(pl + rl)
        v[pl - 1 : pl - 1 + rl] = b["log_prob"][i, :rl]
        e[pl - 1 : pl - 1 + rl] = b["entropy"][i, :rl]
        flat.append(v)
        flat_ent.append(e)
    td = TensorDict(
        {
            "prompts": b["prompts"],
            "responses": b["responses"],
            "attention_mask": torch.cat([b["pmask"], b["rmask"]], 1),
            "response_mask": b["rmask"],
            "old_log_probs": b["old"],
            "advantages": b["adv"],
            "ref_log_prob": b["ref"],
        },
        batch_size=[b["prompts"].shape[0]],
    )
    tu.assign_non_tensor(
        td,
        dp_size=1,
        batch_num_tokens=int(b["rmask"].sum()),
        global_batch_size=int((b["rmask"].sum(-1) > 0).sum()),
    )
    out = {"log_probs": torch.cat(flat)}
    if actor_cfg.entropy_coeff != 0:
        out["entropy"] = torch.cat(flat_ent)
    loss, _ = ppo_loss(actor_cfg, out, td)
    return loss


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("extra", [(), ("actor_rollout_ref.actor.entropy_coeff=0.01",)])
def test_engine_math_equals_verl(recipe: str, extra: tuple[str, ...], laptop_teacher) -> None:
    from verl.trainer.ppo import core_algos

    cfg = compose_recipe(recipe, *extra, *laptop_teacher(recipe))
    validate(cfg, "local")
    n = int(cfg.actor_rollout_ref.rollout.n)
    b = fixed_batch(n)
    ro = Rollout(b["prompts"], b["pmask"], b["responses"], b["rmask"], b["old"])
    uids = [f"g{i // n}" for i in range(b["prompts"].shape[0])]
    values = torch.randn(b["rmask"].shape, generator=torch.Generator().manual_seed(1)) * b["rmask"]
    batch = algo.make_batch(ro, b["scores"], uids, b["ref"], values)
    batch, _ = algo.compute_advantages(cfg, batch)
    adv = batch.batch["advantages"]
    fn = core_algos.get_adv_estimator_fn(cfg.algorithm.adv_estimator)
    est = cfg.algorithm.adv_estimator
    if est == "gae":
        kw = {"values": values, "gamma": cfg.algorithm.gamma, "lam": cfg.algorithm.lam}
    elif est == "grpo":
        kw = {
            "norm_adv_by_std_in_grpo": cfg.algorithm.norm_adv_by_std_in_grpo,
            "index": np.asarray(uids, dtype=object),
        }
    else:
        kw = {"config": cfg.algorithm, "index": np.asarray(uids, dtype=object)}
    want, _ = fn(token_level_rewards=b["scores"], response_mask=b["rmask"].float(), **kw)
    torch.testing.assert_close(adv, want, rtol=0, atol=0)
    assert adv.abs().sum() > 0

    b["adv"] = adv
    mine, metrics = algo.policy_loss(
        algo.actor_config(cfg),
        b["log_prob"],
        b["old"],
        adv,
        b["rmask"],
        entropy=b["entropy"] if cfg.actor_rollout_ref.actor.entropy_coeff else None,
        ref_log_prob=b["ref"],
    )
    theirs = verl_ppo_loss(algo.actor_config(cfg), b)
    torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-7)
    assert "actor/pg_clipfrac" in metrics and "actor/ppo_kl" in metrics
    assert ("actor/kl_loss" in metrics) == bool(cfg.actor_rollout_ref.actor.use_kl_loss)


def test_kl_in_reward_uses_verl_penalty() -> None:
    """kl=in_reward: token rewards are veRL's apply_kl_penalty output, then the advantage."""
    from verl.trainer.ppo.core_algos import get_kl_controller, kl_penalty

    cfg = compose_recipe("grpo", "kl=in_reward")
    validate(cfg, "local")
    n = int(cfg.actor_rollout_ref.rollout.n)
    b = fixed_batch(n)
    ro = Rollout(b["prompts"], b["pmask"], b["responses"], b["rmask"], b["old"])
    batch = algo.make_batch(ro, b["scores"], [f"g{i // n}" for i in range(len(b["lens"]))], b["ref"])
    batch, m = algo.compute_advantages(cfg, batch, get_kl_controller(cfg.algorithm.kl_ctrl))
    want = b["scores"] - cfg.algorithm.kl_ctrl.kl_coef * kl_penalty(b["old"], b["ref"], "kl") * b["rmask"]
    torch.testing.assert_close(batch.batch["token_level_rewards"], want)
    assert "actor/reward_kl_penalty" in m


def test_overlong_penalty_matches_verl_dapo_reward_manager() -> None:
    """The engine's scores under length=dapo_overlong equal veRL's DAPORewardManager on the same rows.

    Lengths cover no penalty, the buffer's start, inside it, its end and an empty response; the
    reward function scores by content, so both the score and the penalty have to line up.
    """
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.workers.reward_manager.dapo import DAPORewardManager

    from core import model as models
    from core.data import Prompt

    cfg = compose_recipe("dapo", "reward.reward_kwargs.overlong_buffer_cfg.log=true")
    kw = cfg.reward.reward_kwargs
    mx, buf = int(kw.max_resp_len), int(kw.overlong_buffer_cfg.len)
    tok = models.build_tokenizer("char")

    def reward_fn(data_source, solution_str, ground_truth, extra_info=None, **_):
        return {"score": float(solution_str.count("7")), "acc": "7" in solution_str}

    lengths = [0, 3, mx - buf, mx - buf + 1, mx - buf + buf // 2, mx]
    B = len(lengths)
    responses = torch.full((B, mx), tok.pad_token_id)
    for i, L in enumerate(lengths):
        responses[i, :L] = torch.tensor(tok.encode(("17" * mx)[:L], add_special_tokens=False))
    rmask = (torch.arange(mx)[None] < torch.tensor(lengths)[:, None]).long()
    prompts = torch.full((B, 4), 20)
    ro = Rollout(prompts, torch.ones_like(prompts), responses, rmask, torch.zeros(B, mx))
    prompt = Prompt([20] * 4, "q", "arithmetic", "1", {})
    mine, extra, _ = algo.score_rollout(cfg, reward_fn, tok, [prompt] * B, ro, 1)
    data = DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.cat([ro.prompt_mask, rmask], 1),
        },
        non_tensors={
            "data_source": np.array(["arithmetic"] * B, dtype=object),
            "reward_model": np.array([{"ground_truth": "1"}] * B, dtype=object),
            "extra_info": np.array([{} for _ in range(B)], dtype=object),
        },
    )
    manager = DAPORewardManager(
        tok,
        0,
        compute_score=reward_fn,
        max_resp_len=mx,
        overlong_buffer_cfg=OmegaConf.create(dict(kw.overlong_buffer_cfg)),
    )
    theirs = manager(data, return_dict=True)
    full = [i for i, L in enumerate(lengths) if L > 0]  # veRL writes an empty row's score at index -1
    torch.testing.assert_close(mine[full], theirs["reward_tensor"][full], rtol=0, atol=1e-6)
    assert mine[0].abs().sum() == 0 and theirs["reward_tensor"][0].sum() == 0  # empty: nothing to reward
    assert extra["overlong_reward"] == pytest.approx(
        [float(x) for x in theirs["reward_extra_info"]["overlong_reward"]]
    )
    assert extra["overlong_reward"][-1] == -1.0 and extra["overlong_reward"][:3] == [
        0,
        0,
        0,
    ]  # the penalty bit
