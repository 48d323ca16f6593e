"""Shared fixtures for the reward tests: a warm SymPy worker and a real character-level tokenizer."""

from __future__ import annotations

import string

import pytest


@pytest.fixture(scope="session", autouse=True)
def _warm_worker() -> None:
    import rewards

    rewards.warmup()


@pytest.fixture(scope="session")
def char_tokenizer():
    """A real ``PreTrainedTokenizerFast``: one token per printable character (what veRL decodes with)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {
        "<pad>": 0,
        "<eos>": 1,
        "<unk>": 2,
        **{c: i + 3 for i, c in enumerate(sorted(set(string.printable)))},
    }
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    tk.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
