"""The laptop-scale model: a tiny Qwen2 and a character-level tokenizer, built locally (no hub).

:func:`build_tokenizer` makes a ``PreTrainedTokenizerFast`` over single characters (printable
ASCII) with specials ``<|bos|> <|eos|> <|pad|> <|unk|> <|system|> <|user|> <|assistant|>`` and the
reasoning tags ``<think> </think> <answer> </answer>`` as single, *non-special* tokens (so
``decode(skip_special_tokens=True)``, which veRL's reward managers use, keeps them), plus a
Jinja chat template. :func:`build_model` makes a random-init ``Qwen2ForCausalLM`` from a
:class:`TinySpec` (fp32, tied embeddings; ~1M parameters by default). Both save as a standard HF
checkpoint directory loadable by ``verl.utils.hf_tokenizer`` and ``from_pretrained``.
Not covered: BPE tokenizers, non-ASCII prompts (unknown characters map to ``<|unk|>``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|unk|>", "<|system|>", "<|user|>", "<|assistant|>"]
TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
CHAT_TEMPLATE = (
    "{{ '<|bos|>' }}{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """Architecture of the tiny Qwen2 (defaults: hidden 128, 4 layers, 4 heads, 2 KV heads)."""

    hidden_size: int = 128
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 512
    max_position_embeddings: int = 256

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TinySpec:
        d = dict(d or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"[local] local.model has unknown keys {unknown}; known: {sorted(names)}")
        return cls(**d)

    def key(self, *extra: Any) -> str:
        """A short stable hash of the spec (and ``extra``), for cache directory names."""
        blob = json.dumps([dataclasses.asdict(self), *extra], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


def _byte_level_chars() -> dict[int, str]:
    """GPT-2's byte -> unicode map (the ByteLevel alphabet: space is 'Ġ')."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def build_tokenizer() -> Any:
    """The character tokenizer as a ``PreTrainedTokenizerFast`` (pad id 0, eos ``<|eos|>``).

    A byte-level BPE with single-character vocabulary and no merges: transformers 5 reloads any
    Qwen2 checkpoint's tokenizer as ``Qwen2Tokenizer`` (ByteLevel pre-tokenizer), and this form
    tokenizes identically under both classes (checked in tests/local/test_model.py).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    bmap = _byte_level_chars()
    chars = [bmap[ord(c)] for c in string.printable if c not in "\t\n\r\x0b\x0c"]
    vocab = {tok: i for i, tok in enumerate(SPECIALS + TAGS + chars)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<|unk|>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        unk_token="<|unk|>",
        additional_special_tokens=SPECIALS[4:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_model(spec: TinySpec, tokenizer: Any, seed: int) -> torch.nn.Module:
    """A random-init fp32 ``Qwen2ForCausalLM`` for ``spec``; deterministic in ``seed``."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="float32",
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.config.attn_implementation = "sdpa"
    return model


def load(path: str | Path) -> tuple[torch.nn.Module, Any]:
    """Load a model directory (fp32, eval mode) and its tokenizer through veRL's ``hf_tokenizer``."""
    from transformers import Qwen2ForCausalLM
    from verl.utils import hf_tokenizer

    tokenizer = hf_tokenizer(str(path))
    tokenizer.padding_side = "left"
    model = Qwen2ForCausalLM.from_pretrained(str(path), torch_dtype=torch.float32, attn_implementation="sdpa")
    return model.eval(), tokenizer


def save(
    model: torch.nn.Module, tokenizer: Any, path: str | Path, meta: dict[str, Any] | None = None
) -> None:
    """Save as a standard HF checkpoint directory (+ ``rlvr_meta.json`` when ``meta`` is given)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    if meta is not None:
        (path / "rlvr_meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def num_params(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
