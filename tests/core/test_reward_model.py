"""Reward models on disk: build from a causal LM, token offsets and step boundaries, scores, losses."""

from __future__ import annotations

import pytest
import torch

from core import model as models
from core import reward_model as rmod

SPEC = models.ModelSpec(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    max_position_embeddings=128,
)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return models.build_checkpoint(tmp_path_factory.mktemp("m") / "char", SPEC, "char", seed=0)


@pytest.fixture(scope="module")
def byte_base(tmp_path_factory):
    return models.build_checkpoint(tmp_path_factory.mktemp("m") / "byte", SPEC, "byte", seed=0)


def test_build_save_load_roundtrip(base, tmp_path):
    rm = rmod.build(base, "prm", seed=3)
    assert rm.model.config.architectures is None or "TokenClassification" in str(type(rm.model))
    ids, _ = rmod.encode(rm.tokenizer, "<think>1+2+0=03</think><answer>3</answer>")
    before = rmod.token_probs(rm, [[1, 5, 6]], [ids])[0]
    rm.info.step_format = "arithmetic_columns"
    rmod.save(rm, tmp_path / "rm")
    back = rmod.load(tmp_path / "rm")
    assert back.info.kind == "prm" and back.info.step_format == "arithmetic_columns"
    assert back.info.vocab == rmod.vocab_fingerprint(back.tokenizer)
    torch.testing.assert_close(rmod.token_probs(back, [[1, 5, 6]], [ids])[0], before)
    assert before.shape == (len(ids),) and bool(((before > 0) & (before < 1)).all())


def test_scores_do_not_depend_on_batch_padding(base):
    rm = rmod.build(base, "orm")
    a, _ = rmod.encode(rm.tokenizer, "<answer>7</answer>")
    b, _ = rmod.encode(rm.tokenizer, "<think>3+4+0=07,0+0+0=00</think><answer>7</answer>")
    alone = rmod.token_probs(rm, [[1, 9]], [a])[0]
    batched = rmod.token_probs(rm, [[1, 9], [1, 9, 9, 9]], [a, b])[0]
    torch.testing.assert_close(alone, batched, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "text",
    ["<think>4+4+0=08,7+0+0=07</think><answer>78</answer>", "先算个位，4+4=8\n再算十位：7+0=7\n答案 78"],
)
def test_boundary_tokens_hold_the_last_character_of_each_step(base, byte_base, text):
    """Char and byte tokenizers (the byte one splits CJK characters into several tokens)."""
    for path in (base, byte_base):
        if "先" in text and path == base:
            continue  # the char tokenizer has printable ASCII only
        tok = rmod.build(path, "prm").tokenizer
        ids, ends = rmod.encode(tok, text)
        assert ids[-1] == tok.eos_token_id and ends[-1] == len(text)
        step_ends = [i + 1 for i, ch in enumerate(text) if ch in ",\n"] + [len(text)]
        bounds = rmod.boundary_tokens(ends, step_ends)
        for b, e in zip(bounds, step_ends, strict=True):
            assert ends[b] >= e and (b == 0 or ends[b - 1] < e)
            assert tok.decode(ids[: b + 1], skip_special_tokens=True).endswith(text[e - 1])


def test_check_vocab_refuses_another_tokenizer(base, byte_base):
    rm = rmod.build(base, "orm")
    other = rmod.build(byte_base, "orm").tokenizer
    rmod.check_vocab(rm.info, rm.tokenizer, "reward.reward_model.model_path", "policy")
    with pytest.raises(ValueError, match=r"\[reward.reward_model.model_path\].*not the policy's"):
        rmod.check_vocab(rm.info, other, "reward.reward_model.model_path", "policy")


def test_token_classification_loss_is_bce_on_labelled_positions(base):
    """transformers' 2-way token loss = binary cross-entropy on the logit difference, labelled tokens only."""
    rm = rmod.build(base, "orm")
    ids = torch.tensor([[1, 5, 6, 7, 8, 2]])
    labels = torch.tensor([[-100, -100, 1, -100, 0, 1]])
    out = rm.model(input_ids=ids, labels=labels)
    logits = out.logits[0]
    keep = labels[0] != -100
    z = (logits[:, 1] - logits[:, 0])[keep]
    bce = torch.nn.functional.binary_cross_entropy_with_logits(z, labels[0][keep].float())
    torch.testing.assert_close(out.loss, bce, rtol=1e-5, atol=1e-6)


def test_aggregations():
    p = torch.tensor([0.9, 0.2, 0.8, 0.6])
    assert rmod.aggregate("last", p, [0, 2]) == pytest.approx(0.6)
    assert rmod.aggregate("min_step", p, [0, 2]) == pytest.approx(0.8)
    assert rmod.aggregate("last_step", p, [0, 2]) == pytest.approx(0.8)
    assert rmod.aggregate("min_step", p, []) == pytest.approx(0.6)  # no steps: the last token
    with pytest.raises(ValueError, match=r"rlvr.reward_model.aggregate.*known: last"):
        rmod.aggregate("median", p, [0])


def test_load_refuses_a_directory_without_meta(base):
    with pytest.raises(FileNotFoundError, match=r"reward.reward_model.model_path.*make rm"):
        rmod.load(base)
