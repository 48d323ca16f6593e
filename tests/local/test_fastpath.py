"""The engine's fast path (``local.fast``) gives the plain path's numbers: log-probs and gradients of
length buckets, samples under ``decoding``, the fused AdamW, and a whole train step (losses, metrics,
parameter update) on a fixed rollout whose lengths are spread enough that the buckets split."""

from __future__ import annotations

import pytest
import torch

from core.compose import compose
from core.data import Prompt
from core.fastpath import bucketed_logprobs, decoding, plain_rollout, plan
from core.sampler import Rollout, generate, response_logprobs
from recipes.local import algo, trainer

pytestmark = pytest.mark.usefixtures("hydra_ctx")  # one Hydra context for the module

N = 4  # group size
#: response lengths of 3 groups: spread (buckets split), empty rows, one uniform group
LENGTHS = [2, 90, 3, 0, 40, 41, 2, 88, 5, 5, 5, 5]
R = max(LENGTHS)


@pytest.fixture(scope="module")
def mt(tiny_lm):
    return tiny_lm()  # conftest.TINY, char tokenizer, seed 0: a fresh copy for this module


def _rollout(tok, lengths=LENGTHS, seed: int = 0) -> Rollout:
    """Groups of N rows sharing a left-padded prompt (prompt lengths differ between groups)."""
    g = torch.Generator().manual_seed(seed)
    B = len(lengths)
    P = 9
    prompts = torch.full((B, P), tok.pad_token_id)
    pmask = torch.zeros((B, P), dtype=torch.long)
    for r in range(B):
        k = 5 + (r // N) % 4  # prompt length of the row's group
        prompts[r, P - k :] = torch.randint(10, 40, (k,), generator=torch.Generator().manual_seed(r // N))
        pmask[r, P - k :] = 1
    responses = torch.randint(10, 40, (B, R), generator=g)
    mask = (torch.arange(R)[None] < torch.tensor(lengths)[:, None]).long()
    responses = responses.masked_fill(mask == 0, tok.pad_token_id)
    old = -torch.rand((B, R), generator=g) * mask
    return Rollout(prompts, pmask, responses, mask, old)


def test_plan_covers_every_row_once_and_splits_spread_lengths() -> None:
    p = [6] * 8
    chunks = plan(p, [2, 90, 3, 0, 40, 41, 2, 88])
    assert sorted(i for c in chunks for i in c) == list(range(8))
    assert len(chunks) > 1
    assert plan(p, [30] * 8) == [list(range(8))]  # equal lengths: nothing to save


def test_bucketed_logprobs_and_gradients_match_the_padded_batch(mt) -> None:
    model, tok = mt
    ro = _rollout(tok)
    w = torch.randn(ro.responses.shape, generator=torch.Generator().manual_seed(1)) * ro.response_mask
    grads, out = [], []
    for fn in (
        lambda: response_logprobs(model, *_args(ro), with_entropy=True, group=N),
        lambda: bucketed_logprobs(model, *_args(ro), with_entropy=True, group=N),
    ):
        model.zero_grad(set_to_none=True)
        lp, ent = fn()
        ((lp * w).sum() + (ent * w).sum()).backward()
        out.append((lp * ro.response_mask, ent * ro.response_mask))
        grads.append([p.grad.clone() for p in model.parameters()])
    torch.testing.assert_close(out[1][0], out[0][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[1][1], out[0][1], atol=1e-5, rtol=1e-5)
    for a, b in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    assert any(g.abs().sum() > 0 for g in grads[0])


def _args(ro: Rollout):
    return ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, 1.0


def test_decoding_samples_the_same_tokens_and_restores_the_model(mt) -> None:
    model, tok = mt
    prompts = [[11, 12, 13], [20, 21, 22, 23, 24]]
    before = model.config._attn_implementation
    runs = []
    for fast in (False, True):
        g = torch.Generator().manual_seed(3)
        if fast:
            with decoding(model):
                ro = plain_rollout(
                    generate(model, prompts, 4, 30, tok.eos_token_id, tok.pad_token_id, generator=g)
                )
        else:
            ro = generate(model, prompts, 4, 30, tok.eos_token_id, tok.pad_token_id, generator=g)
        runs.append(ro)
    assert torch.equal(runs[0].responses, runs[1].responses)
    assert torch.equal(runs[0].response_mask, runs[1].response_mask)
    torch.testing.assert_close(runs[1].old_log_probs, runs[0].old_log_probs, atol=1e-5, rtol=0)
    assert not runs[1].old_log_probs.is_inference()
    assert model.config._attn_implementation == before


def _optim(**over):
    cfg = compose(["recipe=cispo", "scale=laptop"])
    o = cfg.actor_rollout_ref.actor.optim
    if over:
        o.override_optimizer_config = over
    return o


def test_fused_adamw_is_asked_for_only_when_the_recipe_chose_no_implementation() -> None:
    params = [torch.nn.Parameter(torch.randn(5))]
    opt, _ = algo.optimizer(params, _optim(), 10, fused=True)
    assert opt.defaults["fused"] is True and opt.defaults["eps"] == 1e-15  # CISPO's override kept
    opt, _ = algo.optimizer(params, _optim(foreach=True), 10, fused=True)
    assert not opt.defaults["fused"] and opt.defaults["foreach"] is True
    opt, _ = algo.optimizer(params, _optim(), 10, fused=False)
    assert not opt.defaults["fused"]


def _engine(monkeypatch, tiny_lm, fast: bool):
    cfg = compose(
        [
            "recipe=grpo",
            "scale=laptop",
            "kl=k3_0.05",  # reference log-probs go through the fast path too
            "data.train_batch_size=3",
            f"actor_rollout_ref.rollout.n={N}",
            "actor_rollout_ref.actor.ppo_mini_batch_size=1",  # 3 updates of one group each
            f"data.max_response_length={R}",
            "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
            "actor_rollout_ref.actor.optim.lr=1e-3",
            f"local.fast={str(fast).lower()}",
        ]
    )
    model, tok = tiny_lm()  # the same fresh weights for both paths
    prompts = [Prompt([30] * 5, f"q{i}", "arithmetic", str(i), {}) for i in range(12)]

    def reward_fn(data_source, solution_str, ground_truth, extra_info=None, **_):
        return {"score": float(len(solution_str) % 3), "acc": len(solution_str) % 3 == 0}

    eng = trainer.Engine(cfg, model, tok, reward_fn, prompts, prompts[:2])
    monkeypatch.setattr(trainer, "generate", lambda *a, **kw: _rollout(tok))
    return eng


def test_train_step_fast_and_plain_agree(monkeypatch, tiny_lm) -> None:
    out = {}
    for fast in (False, True):
        eng = _engine(monkeypatch, tiny_lm, fast)
        assert eng.cfg.actor_rollout_ref.actor.use_kl_loss and eng.ref is not None
        before = [p.detach().clone() for p in eng.model.parameters()]
        metrics, _ = eng.train_step()
        delta = [p.detach() - b for p, b in zip(eng.model.parameters(), before, strict=True)]
        out[fast] = (metrics, delta, eng.opt.defaults["fused"])
    (m0, d0, fused0), (m1, d1, fused1) = out[False], out[True]
    assert fused1 and not fused0
    for k in ("actor/pg_loss", "actor/kl_loss", "actor/grad_norm", "actor/entropy", "actor/pg_clipfrac"):
        assert m1[k] == pytest.approx(m0[k], rel=1e-4, abs=1e-6), k
    assert m0["actor/grad_norm"] > 0
    for a, b in zip(d1, d0, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-3)
    assert any(d.abs().max() > 1e-5 for d in d0)  # the step did move the parameters
