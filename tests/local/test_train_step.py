"""``Engine.train_step`` itself on a fixed batch: group ids, score placement, mini-batch slicing.

The sampler is replaced by a fixed rollout (two prompts' worth of groups per generation call, an
empty response among them), the reward function scores by content, and veRL's functions are
wrapped to record what the step hands them. Checked against the rollout, not against the
engine's own helpers: each sample's group id, where its score sits, which rows each optimizer
update sees (whole groups, in order, once per epoch), and that the advantages are veRL's GRPO
advantages of those scores and groups.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.compose import compose
from core.data import Prompt
from core.sampler import Rollout
from recipes.local import algo, trainer

pytestmark = pytest.mark.usefixtures("hydra_ctx")  # one Hydra context for the module

N, R = 4, 6  # group size, response width
#: (prompts per step, prompts per mini-batch, epochs): 2 x 2 updates, and R1/DAPO's 16 updates of one prompt
SHAPES = [(4, 2, 2), (16, 1, 1)]


def reward_fn(data_source, solution_str, ground_truth, extra_info=None, **_):
    return {"score": float(solution_str.count("7")), "acc": "7" in solution_str}


def _rollout(tok, n_prompts: int, step_rows: int) -> Rollout:
    """Row r: a response of length (r % R) made of 7s and 1s; row 1 is empty (EOS first)."""
    B = n_prompts * N
    lengths = [(r % R) + 1 for r in range(B)]
    lengths[1] = 0
    responses = torch.full((B, R), tok.pad_token_id)
    for r, L in enumerate(lengths):
        text = ("71" if (r + step_rows) % 3 else "11") * R
        responses[r, :L] = torch.tensor(tok.encode(text[:L], add_special_tokens=False))
    mask = (torch.arange(R)[None] < torch.tensor(lengths)[:, None]).long()
    prompts = torch.full((B, 5), 30)
    old = -0.5 * mask.float()
    return Rollout(prompts, torch.ones_like(prompts), responses, mask, old)


def make_engine(monkeypatch, tiny_lm, bs: int, mb: int | str, epochs: int, *extra: str):
    cfg = compose(
        [
            "recipe=grpo",
            "scale=laptop",
            "kl=none",
            f"data.train_batch_size={bs}",
            f"actor_rollout_ref.rollout.n={N}",
            f"actor_rollout_ref.actor.ppo_mini_batch_size={mb}",
            f"actor_rollout_ref.actor.ppo_epochs={epochs}",
            *extra,
            f"data.max_response_length={R}",
            "actor_rollout_ref.actor.optim.lr_warmup_steps=0",  # the first step updates (no warmup at lr 0)
        ]
    )
    model, tok = tiny_lm((32, 1, 2, 1, 64, 64))  # a fresh copy of one session-built model
    prompts = [Prompt([30] * 5, f"q{i}", "arithmetic", str(i), {}) for i in range(64)]
    eng = trainer.Engine(cfg, model, tok, reward_fn, prompts, prompts[:2])
    calls: dict[str, list] = {"prompts": []}

    def fixed_generate(model, ids, n, *a, **kw):
        calls["prompts"].append(len(ids))
        return _rollout(tok, len(ids), len(calls["prompts"]))

    monkeypatch.setattr(trainer, "generate", fixed_generate)
    return eng, tok, calls


@pytest.mark.parametrize("bs,mb,epochs", SHAPES, ids=[f"{b}p-mb{m}-x{e}" for b, m, e in SHAPES])
def test_train_step_groups_scores_and_minibatches(monkeypatch, tiny_lm, bs, mb, epochs) -> None:
    eng, tok, _ = make_engine(monkeypatch, tiny_lm, bs, mb, epochs)
    seen: dict[str, object] = {"loss": []}
    real_batch, real_adv, real_loss = algo.make_batch, algo.compute_advantages, algo.policy_loss

    def spy_batch(ro, scores, uids, *a, **kw):
        seen["ro"], seen["scores"], seen["uids"] = ro, scores.clone(), list(uids)
        return real_batch(ro, scores, uids, *a, **kw)

    def spy_adv(cfg, batch, kl_ctrl=None):
        out = real_adv(cfg, batch, kl_ctrl)
        seen["adv"] = out[0].batch["advantages"].clone()
        return out

    def spy_loss(actor_cfg, log_prob, old_log_prob, advantages, response_mask, **kw):
        seen["loss"].append((old_log_prob.clone(), advantages.clone(), response_mask.clone()))
        return real_loss(actor_cfg, log_prob, old_log_prob, advantages, response_mask, **kw)

    monkeypatch.setattr(algo, "make_batch", spy_batch)
    monkeypatch.setattr(algo, "compute_advantages", spy_adv)
    monkeypatch.setattr(algo, "policy_loss", spy_loss)
    before = [p.detach().clone() for p in eng.model.parameters()]
    metrics, dump = eng.train_step()

    ro, scores = seen["ro"], seen["scores"]
    B = bs * N
    # group ids: N consecutive rows per prompt, named by step and group
    assert seen["uids"] == [f"1-{i // N}" for i in range(B)] == dump["extra"]["uid"]
    # score placement: the reward on the last response token, nothing anywhere else; none for empty rows
    lengths = ro.response_mask.sum(-1)
    texts = [tok.decode(ro.responses[r, : lengths[r]].tolist(), skip_special_tokens=True) for r in range(B)]
    for r in range(B):
        want = torch.zeros(ro.responses.shape[1])
        if lengths[r] > 0:
            want[lengths[r] - 1] = texts[r].count("7")
        torch.testing.assert_close(scores[r], want)
    assert lengths[1] == 0 and scores[1].abs().sum() == 0
    # the advantages are veRL's GRPO advantages of those scores and groups
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    want_adv, _ = compute_grpo_outcome_advantage(
        scores, ro.response_mask.float(), np.asarray(seen["uids"], dtype=object), norm_adv_by_std_in_grpo=True
    )
    torch.testing.assert_close(seen["adv"], want_adv)
    # mini-batches: epochs x (bs / mb) updates, each mb whole groups in order, trimmed to their longest row
    rows = mb * N
    assert len(seen["loss"]) == epochs * (bs // mb)
    for k, (old, adv, mask) in enumerate(seen["loss"]):
        sl = slice((k % (bs // mb)) * rows, (k % (bs // mb) + 1) * rows)
        width = int(ro.response_mask[sl].sum(-1).max())
        torch.testing.assert_close(old, ro.old_log_probs[sl, :width])
        torch.testing.assert_close(adv, want_adv[sl, :width])
        torch.testing.assert_close(mask, ro.response_mask[sl, :width])
    # veRL's data metrics leave empty (aborted) responses out of the score mean
    assert metrics["critic/score/mean"] == pytest.approx(float(scores.sum(-1)[lengths > 0].mean()))
    assert metrics["response/aborted_ratio"] == pytest.approx(1 / B)
    assert any(not torch.equal(a, b) for a, b in zip(before, eng.model.parameters(), strict=True))


def test_sixteen_updates_per_rollout_from_the_recipes_relation(monkeypatch, tiny_lm) -> None:
    """DAPO's ${rlvr.div:${data.train_batch_size},16} at 16 prompts: 16 optimizer steps, one group each."""
    eng, _, _ = make_engine(monkeypatch, tiny_lm, 16, "'${rlvr.div:${data.train_batch_size},16}'", 1)
    steps, sched = [], []
    real_step, real_sched = eng.opt.step, eng.sched.step
    monkeypatch.setattr(eng.opt, "step", lambda *a, **kw: steps.append(1) or real_step(*a, **kw))
    monkeypatch.setattr(eng.sched, "step", lambda *a, **kw: sched.append(1) or real_sched(*a, **kw))
    eng.train_step()
    assert len(steps) == 16
    assert len(sched) == 1  # veRL's lr schedule steps once per rollout, not once per update


@pytest.mark.parametrize("filt,drawn", [("dynamic", 12), ("none", 4)])
def test_generation_batch_only_oversamples_for_dynamic_sampling(monkeypatch, tiny_lm, filt, drawn) -> None:
    """DAPO's gen_batch_size = 3 x the batch: drawn per round with the filter, not without it."""
    eng, _, calls = make_engine(
        monkeypatch,
        tiny_lm,
        4,
        2,
        1,
        f"filter={filt}",
        "data.gen_batch_size='${rlvr.mul:${data.train_batch_size},3}'",
    )
    eng.train_step()
    assert calls["prompts"][0] == drawn
    assert eng.stream.position == sum(calls["prompts"])


def test_critic_warmup_holds_the_actor_back_as_verl_does(monkeypatch, tiny_lm) -> None:
    """veRL updates the actor once trainer.critic_warmup <= step: with warmup 2, not at step 1, at step 2."""
    eng, _, _ = make_engine(monkeypatch, tiny_lm, 4, 2, 1, "trainer.critic_warmup=2")
    first = [p.detach().clone() for p in eng.model.parameters()]
    m1, _ = eng.train_step()
    assert m1["rlvr/critic_warmup"] == 1.0 and "actor/pg_loss" not in m1
    assert all(torch.equal(a, b) for a, b in zip(first, eng.model.parameters(), strict=True))
    m2, _ = eng.train_step()
    assert "actor/pg_loss" in m2 and "rlvr/critic_warmup" not in m2


def test_held_out_drift_from_the_start_is_zero_then_grows_after_an_update(monkeypatch, tiny_lm) -> None:
    """``rlvr/val_kl_to_init`` is logged with KL off (beta = 0): zero while the policy is the
    starting one, positive once a step has changed it, and the starting copy is not trained."""
    real_generate = trainer.generate
    eng, _, _ = make_engine(monkeypatch, tiny_lm, 4, 2, 2, "actor_rollout_ref.actor.optim.lr=1e-2")
    fixed_generate = trainer.generate
    monkeypatch.setattr(trainer, "generate", real_generate)  # held-out samples from the model itself
    before, _ = eng.evaluate()
    assert before["rlvr/val_kl_to_init"] == pytest.approx(0.0, abs=1e-6)
    init_w = [p.detach().clone() for p in eng.init.parameters()]
    monkeypatch.setattr(trainer, "generate", fixed_generate)
    eng.train_step()
    monkeypatch.setattr(trainer, "generate", real_generate)
    after, _ = eng.evaluate()
    assert after["rlvr/val_kl_to_init"] > 1e-4
    assert all(torch.equal(a, p) for a, p in zip(init_w, eng.init.parameters(), strict=True))
