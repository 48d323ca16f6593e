"""A byte-level tokenizer and a tiny random Qwen2 checkpoint, built locally (no model hub).

Used to validate written parquet in veRL's ``RLHFDataset`` when no tokenizer is given, and as
the fixture model of the tests and of ``benchmarks/bench_data_filter.py``. Every byte is one
token (so any text, Chinese included, tokenizes), plus ChatML specials and the R1 tags; the
chat template is ChatML. The random model answers nonsense: it exercises the machinery, not
the pass rates (the engine's trained checkpoint in ``recipes/local`` is the model for that).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<answer>", "</answer>"]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_tokenizer() -> Any:
    """A ``PreTrainedTokenizerFast``: 256 byte tokens + specials, ChatML chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(SPECIALS + alphabet)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS[:3])
    tok.add_tokens(SPECIALS[3:])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    fast.chat_template = CHATML
    return fast


def build_tiny_checkpoint(path: str | Path, seed: int = 0, hidden: int = 64, layers: int = 2) -> Path:
    """Save a random-init ``Qwen2ForCausalLM`` (~0.1M parameters) and the byte tokenizer to ``path``."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    path = Path(path)
    tok = byte_tokenizer()
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
