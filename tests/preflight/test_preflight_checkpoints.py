"""engine=local on any causal-LM checkpoint on disk: the KV-cache sampler on three architectures
(checked against transformers' own ``generate``), the checkpoint's own tokenizer and chat
template, and a two-step recipe run on a locally built Llama with a locally trained BPE tokenizer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch

from core.data import chat_ids
from core.model import load
from core.sampler import generate, left_pad, response_logprobs
from recipes.run import run

ARCHS = ("llama", "qwen2", "gpt2")
#: small generated data for the local runs (one spec for the whole session: the cache refuses a stale file)
SMALL = ["local.task.train_n=200", "local.task.val_n=32", "local.eval_samples=16", "local.progress=false"]
QUESTIONS = ("1+2", "874+404", "12+5")


def _prompts(tok) -> list[list[int]]:
    return [chat_ids(tok, [{"role": "user", "content": q}]) for q in QUESTIONS]


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_kv_cache_decoding_matches_transformers_generate(ckpts, arch) -> None:
    """Left padding, rotary/learned positions and the KV cache: token for token what HF generate does."""
    model, tok = load(ckpts[arch])
    prompts = _prompts(tok)
    assert len({len(p) for p in prompts}) > 1  # the batch really is left-padded
    ours = generate(model, prompts, 1, 12, tok.eos_token_id, tok.pad_token_id, do_sample=False)
    ids, mask = left_pad(prompts, tok.pad_token_id)
    ref = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=False,
        max_new_tokens=12,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )[:, ids.shape[1] :]
    assert ours.responses.shape == ref.shape
    assert torch.equal(ours.responses, ref)
    assert len(set(map(tuple, ref.tolist()))) > 1  # the model does not emit one fixed sequence


@pytest.mark.parametrize("arch", ARCHS)
def test_captured_logprobs_match_training_forward(ckpts, arch) -> None:
    """Sampling-time log-probs equal the training forward's, with and without the shared prompt cache."""
    model, tok = load(ckpts[arch])
    ro = generate(
        model,
        _prompts(tok),
        4,
        16,
        tok.eos_token_id,
        tok.pad_token_id,
        generator=torch.Generator().manual_seed(0),
    )
    for group in (1, 4):
        lp, _ = response_logprobs(
            model, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, group=group
        )
        torch.testing.assert_close(lp.detach() * ro.response_mask, ro.old_log_probs, atol=1e-5, rtol=0)


@pytest.mark.parametrize("arch", ARCHS)
def test_saved_tokenizer_reloads_through_verl_with_its_chat_template(ckpts, arch) -> None:
    """What veRL's hf_tokenizer loads keeps the vocabulary, the specials and the chat template. For a
    qwen2 checkpoint transformers 5 reloads the tokenizer as Qwen2Tokenizer, whose pre-tokenizer splits
    digits one by one: the ids then differ from the trained tokenizer's, the text does not."""
    from checkpoints import STYLES, train_bpe

    fresh = train_bpe(arch)
    _, tok = load(ckpts[arch])
    s = "<think>4+4+0=08,7+0+0=07</think><answer>1278</answer>"
    assert tok.decode(tok(s)["input_ids"], skip_special_tokens=True) == s
    assert tok.get_vocab() == fresh.get_vocab()
    assert tok.chat_template == fresh.chat_template
    if arch == "qwen2":
        assert type(tok).__name__ == "Qwen2Tokenizer"
    else:
        assert tok(s)["input_ids"] == fresh(s)["input_ids"]
        assert _prompts(tok) == _prompts(fresh)
    assert tok.eos_token == STYLES[arch][2]
    assert tok.pad_token_id is not None  # veRL's hf_tokenizer makes EOS the pad where there is none


def _digest(d: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_two_step_recipe_run_on_a_llama_checkpoint(ckpts, cache_dir, tmp_path, capsys) -> None:
    """grpo for two steps on the Llama: its tokenizer and template, veRL's metrics, a checkpoint; no cold start."""
    before = _digest(ckpts["llama"])
    run_dir = tmp_path / "run"
    code = run(
        [
            "recipe=grpo",
            "engine=local",
            f"actor_rollout_ref.model.path={ckpts['llama']}",
            "trainer.total_training_steps=2",
            *SMALL,
            "data.max_response_length=24",
            "trainer.logger=[file]",
            f"run_dir={run_dir}",
        ]
    )
    err = capsys.readouterr()
    assert code == 0, err.err
    assert f"checkpoint {ckpts['llama']} used as is (no cold start): LlamaForCausalLM" in err.out
    assert "with its own tokenizer and chat template" in err.err
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    train = [x for x in lines if "critic/score/mean" in x["data"]]
    assert [x["step"] for x in train] == [1, 2]
    for key in (
        "actor/pg_loss",
        "actor/kl_loss",
        "actor/entropy",
        "response_length/mean",
        "critic/advantages/mean",
    ):
        assert key in train[-1]["data"], key
    assert (
        train[-1]["data"]["training/rollout_probs_diff_max"] < 1e-3
    )  # sampler and trainer agree on the Llama
    # the prompts are the Llama chat template's (the laptop tokenizer's would be ~10 tokens)
    _, tok = load(ckpts["llama"])
    want = [len(chat_ids(tok, [{"role": "user", "content": f"{a}+{b}"}])) for a, b in ((10, 10), (999, 999))]
    assert want[0] <= train[0]["data"]["prompt_length/mean"] <= want[1]
    assert (run_dir / "checkpoints" / "global_step_2" / "state.pt").is_file()
    assert json.loads((run_dir / "summary.json").read_text())["model"] == str(ckpts["llama"])
    assert _digest(ckpts["llama"]) == before  # the given checkpoint is read, never rewritten
    assert not (cache_dir / "models").exists()  # no laptop model was built


def test_a_command_line_model_path_that_is_not_a_checkpoint_is_refused(cache_dir, tmp_path, capsys) -> None:
    code = run(["recipe=grpo", "engine=local", f"actor_rollout_ref.model.path={tmp_path / 'nope'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "is not a checkpoint directory (no config.json)" in err and "nothing was launched" in err


def test_a_checkpoint_without_chat_template_is_refused(ckpts, cache_dir, tmp_path) -> None:
    from core.compose import compose
    from recipes.local import run_local

    d = tmp_path / "nochat"
    model, tok = load(ckpts["qwen2"])
    tok.chat_template = None
    model.save_pretrained(d)
    tok.save_pretrained(d)
    (d / "chat_template.jinja").unlink(missing_ok=True)
    cfg = compose(["recipe=grpo", "scale=laptop", f"actor_rollout_ref.model.path={d}", *SMALL[:2]])
    with pytest.raises(ValueError, match="has no chat template"):
        run_local(cfg, tmp_path / "r")


def test_a_checkpoint_with_foreign_meta_is_used_as_is(ckpts, tmp_path) -> None:
    """A checkpoint carrying an rlvr_meta.json that is not a cold-start build is never rebuilt."""
    import shutil

    from core.compose import compose
    from recipes.local import given_checkpoint

    d = tmp_path / "m"
    shutil.copytree(ckpts["llama"], d)
    (d / "rlvr_meta.json").write_text(json.dumps({"note": "exported by a pipeline"}))
    assert (
        given_checkpoint(compose(["recipe=grpo", "scale=laptop", f"actor_rollout_ref.model.path={d}"])) == d
    )
    (d / "rlvr_meta.json").write_text(json.dumps({"build": {"builder": "recipes.local.sft"}}))
    assert (
        given_checkpoint(compose(["recipe=grpo", "scale=laptop", f"actor_rollout_ref.model.path={d}"]))
        is None
    )
    # another builder's model is a given checkpoint: the base model at the cold start's scale and the
    # cold start at the base model's are used as is, never rebuilt over (each stays its builder's cache)
    at = {"recipes.local.sft": "scale=laptop_base", "recipes.local.pretrain": "scale=laptop"}
    for builder, scale in at.items():
        (d / "rlvr_meta.json").write_text(json.dumps({"build": {"builder": builder}}))
        assert given_checkpoint(compose(["recipe=grpo", scale, f"actor_rollout_ref.model.path={d}"])) == d
    (d / "rlvr_meta.json").write_text(json.dumps({"build": {"builder": "recipes.local.pretrain"}}))
    assert (
        given_checkpoint(compose(["recipe=grpo", "scale=laptop_base", f"actor_rollout_ref.model.path={d}"]))
        is None
    )
