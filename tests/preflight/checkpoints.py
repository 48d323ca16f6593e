"""Locally built HF checkpoints of two architectures for the any-checkpoint tests (nothing downloaded).

- :func:`train_bpe`: a byte-level BPE tokenizer *trained* with the ``tokenizers`` library on the
  project's own task rows (prompts and reasoning traces), wrapped as ``PreTrainedTokenizerFast``
  with a chat template -- ChatML for Qwen2 (pad ``<|endoftext|>``, EOS ``<|im_end|>``), a
  Llama-3-style header template for Llama (EOS ``<|eot_id|>``, **no pad token**, as Llama ships).
- :func:`build`: a tiny random-init ``Qwen2ForCausalLM`` or ``LlamaForCausalLM`` (untied head for
  Llama) with that tokenizer, saved with ``save_pretrained`` (atomically); ``gpt2`` as a third
  family whose modules are not named ``model``/``lm_head`` and whose positions are learned.

``python tests/preflight/checkpoints.py --arch llama --out /tmp/llama`` writes one for a manual run.
Not covered: other architectures, pretrained weights.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAMA3 = (
    "<|begin_of_text|>{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
    "{{ m['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
#: arch -> (special tokens, chat template, eos, pad or None)
STYLES: dict[str, tuple[list[str], str, str, str | None]] = {
    "qwen2": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], CHATML, "<|im_end|>", "<|endoftext|>"),
    "llama": (
        ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        LLAMA3,
        "<|eot_id|>",
        None,
    ),
    "gpt2": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], CHATML, "<|im_end|>", None),
}


def corpus(n: int = 2000) -> list[str]:
    """Prompts and column-addition traces of the embedded arithmetic task (the BPE training text)."""
    from data_pipelines.tasks.arithmetic import generate, render_trace  # the project's own generator

    rows = generate(n=n, seed=123, split="train")
    return [r["prompt"][-1]["content"] for r in rows] + [
        render_trace(r["extra_info"]["a"], r["extra_info"]["b"]) for r in rows
    ]


def train_bpe(arch: str, vocab_size: int = 400) -> Any:
    """A byte-level BPE trained on :func:`corpus`, with ``arch``'s specials and chat template."""
    from transformers import PreTrainedTokenizerFast  # ~2 s: only building a tokenizer needs it

    specials, template, eos, pad = STYLES[arch]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    kw = {"pad_token": pad} if pad else {}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, **kw)
    fast.chat_template = template
    return fast


def build(arch: str, out: str | Path, seed: int = 0, hidden: int = 48, layers: int = 2) -> Path:
    """Train the tokenizer, build a random ``arch`` model around it and save both at ``out``."""
    import torch  # ~3 s: only building a model needs it
    from transformers import (  # with torch
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    tok = train_bpe(arch)
    common = {
        "vocab_size": len(tok),
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 4 * hidden,
        "max_position_embeddings": 512,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
        "initializer_range": 0.2,  # wider than HF's 0.02, so greedy decoding does not repeat one token
    }
    torch.manual_seed(seed)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common, tie_word_embeddings=True))
    elif arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common, tie_word_embeddings=False))
    else:  # gpt2: learned absolute positions, modules named transformer.h.*, no pad token
        model = GPT2LMHeadModel(
            GPT2Config(
                vocab_size=len(tok),
                n_embd=hidden,
                n_layer=layers,
                n_head=4,
                n_positions=512,
                bos_token_id=tok.eos_token_id,
                eos_token_id=tok.eos_token_id,
                initializer_range=0.2,
            )
        )
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    tmp.rename(out)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", choices=sorted(STYLES), required=True)
    p.add_argument("--out", required=True, help="checkpoint directory to write (must not exist)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    print(build(a.arch, a.out, a.seed))


if __name__ == "__main__":
    main()
