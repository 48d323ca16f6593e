"""The designed pretraining corpus and the task-character tokenizer of the laptop base model."""

from __future__ import annotations

import random

import pytest

from core.model import build_tokenizer, load_tokenizer, save
from data_pipelines.corpus import build_corpus, describe
from data_pipelines.corpus.chain_sum import worked_text
from data_pipelines.corpus.charset import task_characters
from data_pipelines.tasks import TASKS
from data_pipelines.tasks.chain_sum import peel

MIX = {"chain_sum": 1.0}


def test_corpus_is_deterministic_in_its_seed() -> None:
    a = build_corpus(300, 7, MIX)
    assert a == build_corpus(300, 7, MIX)
    assert a != build_corpus(300, 8, MIX)


def test_corpus_holds_the_designed_shares() -> None:
    params = {
        "chain_sum": {"chat": 0.5, "worked_chat": 0.2, "worked_plain": 0.9, "tag": 0.7, "tag_plain": 0.1}
    }
    docs = build_corpus(4000, 0, MIX, params)
    d = describe(docs)
    assert d["chat/direct"] == pytest.approx(0.5 * 0.8, abs=0.03)
    assert d["plain/worked"] == pytest.approx(0.5 * 0.9, abs=0.03)
    chat = [x for x in docs if x.prompt is not None]
    tagged = sum("<answer>" in x.text for x in chat) / len(chat)
    assert tagged == pytest.approx(0.7, abs=0.04)
    # direct answers are right unless noise is asked for
    assert d["correct"] == 1.0
    noisy = describe(build_corpus(2000, 0, MIX, {"chain_sum": {"direct_noise": 0.5}}))
    assert 0.55 < noisy["correct"] < 0.9


def test_worked_chains_are_true_equalities() -> None:
    """Every peel and check chain is a chain of true equalities; a fix names the slip and repairs it."""
    rng = random.Random(0)
    for _ in range(200):
        terms = [rng.randint(1, 9) for _ in range(rng.randint(2, 8))]
        chain = peel(terms)
        assert chain[0] == "+".join(map(str, terms)) and chain[-1] == str(sum(terms))
        assert all(eval(e) == sum(terms) for e in chain)  # noqa: S307 - digits and '+' only
        fixed = worked_text(terms, "fix", rng)
        if len(terms) >= 3:
            wrong, _, rest = fixed.partition(" no ")
            assert eval(wrong.split("=")[-1]) != sum(terms)  # noqa: S307 - the slip is a real slip
            fact, _, after = rest.partition(" so ")
            lhs, rhs = fact.split("=")
            assert eval(lhs) == int(rhs)  # noqa: S307 - the repair is right
            assert all(eval(e) == sum(terms) for e in after.split("="))  # noqa: S307


TASK_PARAMS = {"chain_sum": {}, "arithmetic": {}, "overtime_pay": {}, "countdown": {}}


@pytest.mark.parametrize("task", sorted(TASK_PARAMS))
def test_task_chars_tokenizer_spells_every_task_character_as_one_token(task: str) -> None:
    tok = build_tokenizer("task_chars")
    unk = tok.unk_token_id
    rows = TASKS.get(task)(200, 0, "train", **TASK_PARAMS[task])
    for row in rows:
        for text in [m["content"] for m in row["prompt"]] + [str(row["reward_model"]["ground_truth"])]:
            ids = tok(text, add_special_tokens=False)["input_ids"]
            assert unk not in ids and tok.decode(ids) == text
            for ch in set(text):
                assert len(tok(ch, add_special_tokens=False)["input_ids"]) == 1, (task, ch)


def test_task_characters_include_the_overtime_template() -> None:
    chars = set(task_characters())
    assert set("加班费日工资÷") <= chars
    assert not any(ord(c) < 128 for c in chars)


def test_task_chars_tokenizer_reloads_identically(tmp_path) -> None:
    """Saved and reloaded as veRL loads it (Qwen2Tokenizer), it tokenizes the same; other text falls
    back to bytes, never to <|unk|>."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = build_tokenizer("task_chars")
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tok),
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=32,
        )
    )
    save(model.to(torch.float32), tok, tmp_path / "m")
    again = load_tokenizer(tmp_path / "m")
    for text in ["<think>3+5=8</think><answer>8</answer>", "小王这个月加班费多少？", "Ωmega ☃ 𝔸"]:
        assert (
            again(text, add_special_tokens=False)["input_ids"]
            == tok(text, add_special_tokens=False)["input_ids"]
        )
        assert tok.unk_token_id not in tok(text, add_special_tokens=False)["input_ids"]
