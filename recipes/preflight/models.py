"""Model sizes for the memory plan without downloading weights: parameters, layers, KV heads, head
dimension, hidden size and vocabulary.

:func:`model_shape` looks, in order, at: the model's ``config.json`` on disk (or in the local HF
cache), the small table :data:`KNOWN` of the architectures this project's recipes name, and
``model_params_b=`` (billions of parameters; the KV-cache and activation terms then need the
shape and are skipped). Parameter counts are exact: transformers builds the architecture on the
``meta`` device (no memory, no weights) and counts its parameters (tied weights once).
Not covered: mixture-of-experts routing (all experts are counted as resident), quantised weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Architectures of the models conf/model/ names, transcribed from each model's config.json on the
#: Hugging Face hub (the source of record; this code does not fetch it) and cross-checked as noted.
KNOWN: dict[str, dict[str, Any]] = {
    "Qwen/Qwen2.5-7B": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "source": "huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json; the same dimensions are veRL's "
        "FLOPs-counter test case (tests/utils/test_flops_counter.py, 'qwen2'); layers/heads: Qwen2.5 "
        "technical report (arXiv:2412.15115) Table 1",
    },
    "Qwen/Qwen2.5-Math-7B": {
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "source": "huggingface.co/Qwen/Qwen2.5-Math-7B/blob/main/config.json (Qwen2.5-7B's architecture, "
        "a 4,096-token context)",
    },
    "Qwen/Qwen2.5-32B": {
        "model_type": "qwen2",
        "hidden_size": 5120,
        "intermediate_size": 27648,
        "num_hidden_layers": 64,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "vocab_size": 152064,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "source": "huggingface.co/Qwen/Qwen2.5-32B/blob/main/config.json; layers/heads: Qwen2.5 technical "
        "report (arXiv:2412.15115) Table 1",
    },
    "Qwen/Qwen3-8B-Base": {
        "model_type": "qwen3",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "source": "huggingface.co/Qwen/Qwen3-8B-Base/blob/main/config.json; the same dimensions are veRL's "
        "FLOPs-counter test case for Qwen/Qwen3-8B (tests/utils/test_flops_counter.py, 'qwen3'), the "
        "post-trained model of the same architecture (opd's teacher)",
    },
    "deepseek-ai/deepseek-math-7b-instruct": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 30,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 102400,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "source": "huggingface.co/deepseek-ai/deepseek-math-7b-instruct/blob/main/config.json; layers, width, "
        "heads, vocabulary, context: DeepSeek LLM 7B (arXiv:2401.02954 Table 2), which DeepSeekMath starts "
        "from (arXiv:2402.03300 sec. 2.3)",
    },
}


@dataclass
class Shape:
    """What the memory plan needs of a model (None: unknown)."""

    params: float
    source: str
    layers: int | None = None
    hidden: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    vocab: int | None = None
    context: int | None = None


def count_params(config: Any) -> int:
    """Parameters of the causal LM ``config`` describes, built on the meta device (no memory)."""
    import torch  # ~3 s: only sizing a model needs it
    from transformers import AutoModelForCausalLM  # with torch

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def shape_from_config(config: Any, source: str) -> Shape:
    """A :class:`Shape` from a transformers config (its ``text_config`` for multi-modal models)."""
    text = getattr(config, "text_config", None) or config
    heads = int(text.num_attention_heads)
    hd = getattr(text, "head_dim", None) or int(text.hidden_size) // heads
    return Shape(
        params=float(count_params(config)),
        source=source,
        layers=int(text.num_hidden_layers),
        hidden=int(text.hidden_size),
        kv_heads=int(getattr(text, "num_key_value_heads", None) or heads),
        head_dim=int(hd),
        vocab=int(text.vocab_size),
        context=getattr(text, "max_position_embeddings", None),
    )


def local_dir(path: str, filename: str) -> Path | None:
    """The directory holding ``filename`` for ``path``: the path itself when it has the file, or the
    snapshot of a hub id in the local HF cache (looked up without any network call); else None."""
    local = Path(path).expanduser()
    if (local / filename).is_file():
        return local
    if local.exists() or path.count("/") != 1 or path.startswith(("/", ".", "~")):
        return None
    from huggingface_hub import try_to_load_from_cache  # transformers' dependency; a cache lookup only

    try:
        found = try_to_load_from_cache(path, filename)
    except Exception:  # noqa: BLE001 - not a valid repo id: not cached
        return None
    return Path(found).parent if isinstance(found, str) else None


def _on_disk(path: str) -> Any | None:
    from transformers import AutoConfig  # ~2 s: only sizing a model needs it

    d = local_dir(path, "config.json")
    return AutoConfig.from_pretrained(str(d)) if d is not None else None


def model_shape(path: str, params_b: float | None = None) -> tuple[Shape | None, str]:
    """(shape, where it came from) for ``path``, or (None, why not)."""
    from transformers import AutoConfig  # same

    config = _on_disk(path)
    if config is not None:
        return shape_from_config(config, f"{path}/config.json"), "config.json"
    if path in KNOWN:
        spec = {k: v for k, v in KNOWN[path].items() if k != "source"}
        config = AutoConfig.for_model(**spec)
        return shape_from_config(config, KNOWN[path]["source"]), "known-architecture table"
    if params_b:
        return Shape(params=float(params_b) * 1e9, source="model_params_b="), "model_params_b="
    return None, (
        f"{path} is not on disk, not in the local HF cache and not in recipes.preflight.models.KNOWN "
        f"({', '.join(KNOWN)})"
    )


def known_table() -> str:
    """The known-architecture table as JSON (for docs and --help)."""
    return json.dumps(KNOWN, indent=1)
