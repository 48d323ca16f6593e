"""The KV-cache sampler: masks by position, captured log-probs, padding invariance, filtering."""

from __future__ import annotations

import pytest
import torch

from core import model as tiny
from core.sampler import _filter_logits, generate, left_pad, position_mask, response_logprobs


@pytest.fixture(scope="module")
def mt(tiny_lm):
    model, tok = tiny_lm()  # conftest.TINY, char tokenizer, seed 0: a fresh copy for this module
    return model.eval(), tok


def prompt_ids(tok, q: str) -> list[int]:
    return list(
        tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True)["input_ids"]
    )


def test_position_mask_stops_after_first_eos_not_pad() -> None:
    eos, pad = 2, 0
    toks = torch.tensor([[5, pad, 7, eos, 9, eos], [pad, pad, 5, 5, 5, 5], [eos, 5, 5, 5, 5, 5]])
    m = position_mask(toks, eos)
    # a pad sampled mid-response stays inside the mask; everything after the first EOS is out
    assert m.tolist() == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0]]


def test_generate_masks_and_captured_logprobs_match_recompute(mt) -> None:
    model, tok = mt
    prompts = [prompt_ids(tok, q) for q in ("1+2", "874+404", "12+5")]
    g = torch.Generator().manual_seed(0)
    ro = generate(model, prompts, 4, 24, tok.eos_token_id, tok.pad_token_id, generator=g)
    assert ro.responses.shape[0] == 12 and ro.prompts.shape[0] == 12
    # rows i*n..i*n+n-1 share prompt i
    assert torch.equal(ro.prompts[0], ro.prompts[3]) and not torch.equal(ro.prompts[0], ro.prompts[4])
    assert torch.equal(
        ro.response_mask,
        position_mask(ro.responses.masked_fill(ro.response_mask == 0, tok.eos_token_id), tok.eos_token_id),
    )
    assert (ro.responses[ro.response_mask == 0] == tok.pad_token_id).all()
    lp, ent = response_logprobs(
        model, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, with_entropy=True
    )
    torch.testing.assert_close(lp * ro.response_mask, ro.old_log_probs, atol=1e-5, rtol=0)
    assert (ent >= 0).all()


def test_left_padding_does_not_change_logprobs(mt) -> None:
    model, tok = mt
    short, long = prompt_ids(tok, "1+2"), prompt_ids(tok, "874+404")
    resp = torch.tensor([[7, 8, 9, tok.eos_token_id]])
    rm = torch.ones_like(resp)
    ids, mask = left_pad([short, long], tok.pad_token_id)
    both, _ = response_logprobs(model, ids, mask, resp.repeat(2, 1), rm.repeat(2, 1))
    alone, _ = response_logprobs(
        model, torch.tensor([short]), torch.ones(1, len(short), dtype=torch.long), resp, rm
    )
    torch.testing.assert_close(both[0:1], alone, atol=1e-5, rtol=0)


def test_temperature_scales_captured_logprobs(mt) -> None:
    model, tok = mt
    g = torch.Generator().manual_seed(1)
    ro = generate(
        model,
        [prompt_ids(tok, "3+4")],
        3,
        10,
        tok.eos_token_id,
        tok.pad_token_id,
        temperature=0.7,
        generator=g,
    )
    lp, _ = response_logprobs(
        model, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, temperature=0.7
    )
    torch.testing.assert_close(lp * ro.response_mask, ro.old_log_probs, atol=1e-5, rtol=0)


def test_greedy_is_deterministic(mt) -> None:
    model, tok = mt
    p = [prompt_ids(tok, "5+5")]
    a = generate(model, p, 2, 12, tok.eos_token_id, tok.pad_token_id, do_sample=False)
    b = generate(model, p, 2, 12, tok.eos_token_id, tok.pad_token_id, do_sample=False)
    assert torch.equal(a.responses, b.responses) and torch.equal(a.responses[0], a.responses[1])


def test_top_p_and_top_k_filter() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(_filter_logits(logits, -1, 0.7))
    assert kept.tolist() == [[True, True, False, False]]
    kept = torch.isfinite(_filter_logits(logits, 1, 1.0))
    assert kept.tolist() == [[True, False, False, False]]
    assert torch.isfinite(_filter_logits(logits, -1, 1.0)).all()


def test_tokenizer_roundtrip_through_verl(tmp_path) -> None:
    """The saved directory loads through veRL's hf_tokenizer and tokenizes identically."""
    tok = tiny.build_tokenizer()
    m = tiny.build_model(tiny.ModelSpec(32, 1, 4, 2, 64, 256), tok, 0)
    tiny.save(m, tok, tmp_path / "m")
    _, tok2 = tiny.load(tmp_path / "m")
    s = "<think>4+4+0=08,7+0+0=07</think><answer>1278</answer>"
    assert tok(s)["input_ids"] == tok2(s)["input_ids"]
    assert tok2.decode(tok2(s)["input_ids"], skip_special_tokens=True) == s
    assert prompt_ids(tok, "1+2") == prompt_ids(tok2, "1+2")


def test_shared_prompt_encoding_matches_full_forward(mt) -> None:
    """group=n encodes each prompt once: same log-probs and same gradients as the full forward."""
    model, tok = mt
    model.train()
    prompts = [prompt_ids(tok, q) for q in ("1+2", "874+404", "12+5")]
    ro = generate(
        model, prompts, 4, 16, tok.eos_token_id, tok.pad_token_id, generator=torch.Generator().manual_seed(2)
    )
    m = ro.response_mask
    grads = []
    for group in (1, 4):
        lp, _ = response_logprobs(model, ro.prompts, ro.prompt_mask, ro.responses, m, group=group)
        (lp * m).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        model.zero_grad(set_to_none=True)
        if group == 1:
            ref = lp.detach()
        else:
            torch.testing.assert_close(lp.detach() * m, ref * m, atol=1e-5, rtol=0)
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)
    model.eval()
