"""The CPU rollout server in this process (no Ray): batching, sampling settings, log-probs, weights.

Each check compares the server with a plain Hugging Face forward of the same model, so a batching
or caching mistake shows as a log-prob difference, not as a shape.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import torch

from core import model as models
from core.sampler import response_logprobs
from verl_cpu.server import CPURolloutServer, sampling_key


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint):
    import data_pipelines.corpus.charset  # noqa: F401 - registers task_chars (a ChatML-free char tokenizer)

    return tiny_checkpoint(tokenizer="byte")


def server(ckpt, response_length: int = 12, seed: int = 0) -> CPURolloutServer:
    config = SimpleNamespace(prompt_length=32, response_length=response_length, max_model_len=None, seed=seed)
    return CPURolloutServer(config, SimpleNamespace(local_path=str(ckpt)), replica_rank=0)


def chat(ckpt, q: str) -> list[int]:
    tok = models.load_tokenizer(ckpt)
    return list(
        tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True)["input_ids"]
    )


def run_all(srv: CPURolloutServer, prompts: list[list[int]], params: dict) -> list:
    async def go() -> list:
        return await asyncio.gather(
            *[srv.generate(p, dict(params), request_id=str(i)) for i, p in enumerate(prompts)]
        )

    return asyncio.run(go())


def test_concurrent_requests_are_decoded_as_one_batch_with_logprobs_of_a_plain_forward(ckpt) -> None:
    srv = server(ckpt)
    prompts = [
        chat(ckpt, q) for q in ("1+2", "874+404", "12+5")
    ] * 4  # 3 prompts x 4 samples, as the agent loop sends
    outs = run_all(srv, prompts, {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True})
    assert srv.stats["batches"] == 1 and srv.stats["requests"] == 12
    model, _ = models.load(ckpt)
    for p, o in zip(prompts, outs, strict=True):
        assert 1 <= len(o.token_ids) <= 12 and len(o.log_probs) == len(o.token_ids)
        assert (o.stop_reason == "completed") == (o.token_ids[-1] in srv.stops)
        ids = torch.tensor([o.token_ids])
        lp, _ = response_logprobs(
            model, torch.tensor([p]), torch.ones(1, len(p), dtype=torch.long), ids, torch.ones_like(ids)
        )
        torch.testing.assert_close(torch.tensor([o.log_probs]), lp, atol=1e-5, rtol=0)
        assert o.extra_fields["global_steps"] == 0


def test_greedy_at_temperature_zero_matches_transformers_generate(ckpt) -> None:
    srv = server(ckpt)
    p = chat(ckpt, "5+5")
    out = run_all(srv, [p], {"temperature": 0, "top_p": 1.0, "top_k": -1})[0]
    assert out.log_probs is None  # not asked for
    model, tok = models.load(ckpt)
    ref = model.generate(
        torch.tensor([p]), max_new_tokens=12, do_sample=False, eos_token_id=srv.stops, pad_token_id=srv.pad_id
    )[0, len(p) :].tolist()
    assert out.token_ids == ref[: len(out.token_ids)] and (
        len(ref) == len(out.token_ids) or ref[len(out.token_ids)] in (srv.pad_id, *srv.stops)
    )


def test_top_k_one_is_greedy_and_max_tokens_caps_each_request(ckpt) -> None:
    srv = server(ckpt, response_length=16)
    p = chat(ckpt, "3+4")
    greedy = run_all(srv, [p], {"temperature": 0})[0].token_ids
    topk = run_all(srv, [p], {"temperature": 1.0, "top_k": 1})[0].token_ids
    assert topk == greedy
    capped = run_all(srv, [p, p], {"temperature": 1.0, "max_tokens": 3})
    assert all(len(o.token_ids) <= 3 for o in capped)
    assert all(o.stop_reason == "length" for o in capped if o.token_ids[-1] not in srv.stops)


def test_prompt_logprobs_follow_vllms_layout(ckpt) -> None:
    srv = server(ckpt)
    seq = chat(ckpt, "7+8") + [10, 11, 12]
    for k in (0, 3):
        out = run_all(srv, [seq], {"max_tokens": 1, "temperature": 1.0, "prompt_logprobs": k})[0]
        ids, lps = out.extra_fields["prompt_ids"], out.extra_fields["prompt_logprobs"]
        assert len(ids) == len(lps) == len(seq) and all(len(r) == max(k, 1) for r in lps)
        model, _ = models.load(ckpt)
        logp = torch.log_softmax(model(input_ids=torch.tensor([seq])).logits[0].float(), -1)
        want = logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])]
        if k == 0:
            assert [r[0] for r in ids[:-1]] == seq[1:]
            torch.testing.assert_close(torch.tensor([r[0] for r in lps[:-1]]), want, atol=1e-5, rtol=0)
        else:
            assert lps[0][0] >= lps[0][1] >= lps[0][2]  # ranked
        assert lps[-1] == [0.0] * max(k, 1)  # vLLM's dummy last row


def test_weights_sync_changes_what_is_sampled_and_refuses_foreign_names(ckpt) -> None:
    srv = server(ckpt)
    p = chat(ckpt, "2+2")
    before = run_all(srv, [p], {"temperature": 0})[0].token_ids
    state = {n: torch.randn_like(t) for n, t in srv.model.named_parameters()}
    assert asyncio.run(srv.update_weights(state, global_steps=3)) == len(state)
    after = run_all(srv, [p], {"temperature": 0})[0]
    assert after.token_ids != before and after.extra_fields["global_steps"] == 3
    with pytest.raises(ValueError, match="weight sync"):
        asyncio.run(srv.update_weights({"not.a.parameter": torch.zeros(1)}))


def test_unsupported_settings_are_refused_by_key() -> None:
    with pytest.raises(ValueError, match=r"\[actor_rollout_ref.rollout.repetition_penalty\]"):
        sampling_key({"repetition_penalty": 1.1})
    assert sampling_key({"temperature": 0.6, "top_p": 0.9, "top_k": None}) == (0.6, 0.9, -1)
