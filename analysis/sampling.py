"""Samplers for evaluation (local engine on CPU, Hugging Face ``generate``, vLLM on GPU) and
s1-style budget forcing on top of any of them.

A sampler turns tokenised prompts into ``n`` completions each: ``generate(prompts, n,
max_new_tokens) -> [Completion]`` with rows grouped by prompt (``n`` consecutive rows each).
``SAMPLERS`` maps names to factories ``(model_path, settings) -> Sampler``:
- ``local``: ``recipes.local.model.load`` + ``recipes.local.sampler.generate`` (the engine's own
  KV-cache sampler, so eval and training sample identically);
- ``hf``: ``transformers`` ``generate`` for any causal-LM checkpoint (CPU or GPU);
- ``vllm``: vLLM, only when it is installed and a CUDA device is present (never run on CPU
  here; the guard raises a clear error instead).

``budget_force`` implements s1's budget forcing (Muennighoff et al. 2025, arXiv:2501.19393,
sec. 3.1): while the thinking is shorter than ``min_think`` tokens, an end of thinking (the
``think_end`` delimiter or EOS) is removed and ``wait_text`` appended, and sampling continues;
at ``max_think`` thinking tokens the thinking is cut and closed with ``think_end``, then the
answer is sampled (up to ``max_answer`` tokens). It works on text, re-tokenising the kept
prefix, so it needs no special tokens; with BPE tokenisers the re-encoded prefix can differ
from the sampled ids in rare merges (the text is identical). Not covered: beam search.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from recipes.registry import Registry


@dataclass
class Completion:
    """One sampled continuation: token ids (without EOS/padding) and whether it ended with EOS."""

    ids: list[int]
    eos: bool


class Sampler(Protocol):
    tokenizer: Any
    name: str

    def generate(self, prompts: list[list[int]], n: int, max_new_tokens: int) -> list[Completion]: ...


SAMPLERS: Registry[Callable[[str, dict[str, Any]], Sampler]] = Registry("sampler")


def _eos_pad(tokenizer: Any) -> tuple[int, int]:
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return int(eos), int(pad)


def load_state(model: Any, state_file: str | None) -> None:
    """Load a training-state file's ``"model"`` weights (the local engine's checkpoint format)."""
    if state_file:
        import torch

        state = torch.load(state_file, map_location="cpu", weights_only=False)
        model.load_state_dict(state["model"] if "model" in state else state)


class LocalSampler:
    """The local engine's CPU sampler (``recipes.local.sampler.generate``)."""

    name = "local"

    def __init__(self, model_path: str, settings: dict[str, Any]) -> None:
        import torch

        from recipes.local import model as local_model

        self.model, self.tokenizer = local_model.load(model_path)
        load_state(self.model, settings.get("state_file"))
        self.settings = settings
        self.gen = torch.Generator().manual_seed(int(settings.get("seed", 0)))
        self.eos, self.pad = _eos_pad(self.tokenizer)

    def generate(self, prompts: list[list[int]], n: int, max_new_tokens: int) -> list[Completion]:
        from recipes.local.sampler import generate

        out: list[Completion] = []
        chunk = max(1, 256 // max(n, 1))  # bound memory: at most ~256 rows decoded together
        for i in range(0, len(prompts), chunk):
            ro = generate(
                self.model,
                prompts[i : i + chunk],
                n=n,
                max_new_tokens=max_new_tokens,
                eos_id=self.eos,
                pad_id=self.pad,
                temperature=float(self.settings["temperature"]),
                top_p=float(self.settings["top_p"]),
                generator=self.gen,
            )
            for row, mask in zip(ro.responses.tolist(), ro.response_mask.tolist(), strict=True):
                ids = [t for t, m in zip(row, mask, strict=True) if m]
                eos = bool(ids) and ids[-1] == self.eos
                out.append(Completion(ids[:-1] if eos else ids, eos))
        return out


class HFSampler:
    """``transformers`` ``generate`` with sampling (any causal LM checkpoint)."""

    name = "hf"

    def __init__(self, model_path: str, settings: dict[str, Any]) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(model_path)
        self.tokenizer.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=torch.float32).eval()
        load_state(self.model, settings.get("state_file"))
        self.settings = settings
        self.eos, self.pad = _eos_pad(self.tokenizer)
        torch.manual_seed(int(settings.get("seed", 0)))

    def generate(self, prompts: list[list[int]], n: int, max_new_tokens: int) -> list[Completion]:
        import torch

        from recipes.local.sampler import left_pad

        ids, mask = left_pad(prompts, self.pad)
        with torch.no_grad():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=True,
                temperature=float(self.settings["temperature"]),
                top_p=float(self.settings["top_p"]),
                max_new_tokens=max_new_tokens,
                num_return_sequences=n,
                pad_token_id=self.pad,
                eos_token_id=self.eos,
            )
        res = []
        for row in out[:, ids.shape[1] :].tolist():
            cut = row.index(self.eos) if self.eos in row else len(row)
            res.append(Completion(row[:cut], cut < len(row)))
        return res


class VLLMSampler:
    """vLLM on a CUDA machine; refuses to start without one."""

    name = "vllm"

    def __init__(self, model_path: str, settings: dict[str, Any]) -> None:
        import torch

        if settings.get("state_file"):
            raise RuntimeError("sampler=vllm needs an HF checkpoint directory, not a training-state file")
        if not torch.cuda.is_available():
            raise RuntimeError("sampler=vllm needs a CUDA GPU; use sampler=local or sampler=hf on CPU")
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:
            raise RuntimeError("sampler=vllm needs vllm (GPU install: make setup GPU=1)") from exc
        self.llm = LLM(model=model_path, seed=int(settings.get("seed", 0)))
        self.tokenizer = self.llm.get_tokenizer()
        self.settings = settings
        self._params = SamplingParams

    def generate(self, prompts: list[list[int]], n: int, max_new_tokens: int) -> list[Completion]:
        params = self._params(
            n=n,
            temperature=float(self.settings["temperature"]),
            top_p=float(self.settings["top_p"]),
            max_tokens=max_new_tokens,
            seed=int(self.settings.get("seed", 0)),
        )
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params)
        return [Completion(list(o.token_ids), o.finish_reason == "stop") for r in outs for o in r.outputs]


SAMPLERS.add("local", LocalSampler)
SAMPLERS.add("hf", HFSampler)
SAMPLERS.add("vllm", VLLMSampler)


def auto_sampler_name(model_path: str) -> str:
    """vllm with CUDA + vllm installed; else local for local-engine checkpoints (Qwen2); else hf."""
    import importlib.util
    import json
    from pathlib import Path

    import torch

    if torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None:
        return "vllm"
    try:
        arch = json.loads((Path(model_path) / "config.json").read_text()).get("architectures", [])
    except (OSError, ValueError):
        arch = []
    if importlib.util.find_spec("recipes.local.sampler") is not None and arch == ["Qwen2ForCausalLM"]:
        return "local"
    return "hf"


@dataclass
class Forced:
    """A completion after budget forcing: text, thinking tokens and how often 'Wait' was added."""

    text: str
    think_tokens: int
    waits: int
    truncated: bool


def budget_force(
    sampler: Sampler, prompts: list[list[int]], n: int, budget: dict[str, Any], max_tokens: int
) -> list[Forced]:
    """Sample ``n`` completions per prompt under s1 budget forcing (see module docstring).

    Each row is a small state machine (think -> answer -> done); rows in the same phase are
    sampled together, one continuation each, until all are done.
    """
    tok = sampler.tokenizer
    end = str(budget.get("think_end") or "</think>")
    wait = str(budget.get("wait_text") or " Wait")
    lo = int(budget.get("min_think") or 0)
    hi = int(budget.get("max_think") or max_tokens)
    max_answer = int(budget.get("max_answer") or max_tokens)

    def enc(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False)) if text else []

    def dec(ids: list[int]) -> str:
        return tok.decode(ids, skip_special_tokens=False)

    rows = [_Row(prompts[i // n]) for i in range(len(prompts) * n)]
    results = dict(enumerate(sampler.generate(prompts, n, hi)))
    for _ in range(lo + 16):  # each "Wait" adds >= 1 thinking token, so this bounds the loop
        for i, comp in results.items():
            r = rows[i]
            if r.phase == "answer":
                r.answer = (r.answer or "") + dec(comp.ids)
                r.phase = "done"
                continue
            head, sep, tail = dec(comp.ids).partition(end)
            r.think += head
            n_think = len(enc(r.think))
            if (sep or comp.eos) and n_think < lo:  # ended too early: suppress the end, add "Wait"
                r.think, r.waits = r.think + wait, r.waits + 1
            elif sep:
                r.answer = tail
                r.phase = "done" if comp.eos or len(enc(tail)) >= max_answer else "answer"
            elif comp.eos:  # finished without the delimiter and long enough: keep as is
                r.phase = "done"
            elif n_think >= hi:  # budget spent: close the thinking and sample the answer
                r.answer, r.truncated, r.phase = "", True, "answer"
        todo = [i for i, r in enumerate(rows) if r.phase != "done"]
        if not todo:
            break
        inputs, budgets = [], []
        for i in todo:
            r = rows[i]
            if r.phase == "answer":
                inputs.append(r.prompt + enc(r.think + end + (r.answer or "")))
                budgets.append(max(1, max_answer - len(enc(r.answer or ""))))
            else:
                inputs.append(r.prompt + enc(r.think))
                budgets.append(max(1, hi - len(enc(r.think))))
        comps = sampler.generate(inputs, 1, max(budgets))
        results = {}
        for i, b, c in zip(todo, budgets, comps, strict=True):
            results[i] = Completion(c.ids[:b], c.eos and len(c.ids) <= b)
    out = []
    for r in rows:
        text = r.think + (end + r.answer if r.answer is not None else "")
        out.append(Forced(text, len(enc(r.think)), r.waits, r.truncated))
    return out


@dataclass
class _Row:
    prompt: list[int]
    think: str = ""
    answer: str | None = None
    waits: int = 0
    truncated: bool = False
    phase: str = "think"
