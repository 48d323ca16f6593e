"""The one sampling-and-scoring layer: samplers by name, and grading of their texts.

A sampler turns tokenised prompts into ``n`` completions each: ``generate(prompts, n,
max_new_tokens, batch=None) -> [Completion]``, rows grouped by prompt (``n`` consecutive rows).
``reseed(seed)`` restarts its random stream, so a caller can make a chunk's samples independent
of what ran before (the offline filter's resume relies on it); without it, successive calls
continue one stream. :data:`SAMPLERS` maps names to factories ``(model_path, Settings) -> Sampler``:

- ``local``: :func:`core.sampler.generate`, the local engine's KV-cache sampler (prefill shared by
  the n samples of a prompt, masks by position), so evaluation, filtering and training sample
  identically; :meth:`LocalSampler.of` wraps a model already in memory;
- ``hf``: ``transformers`` ``generate`` for any causal-LM checkpoint (CPU or GPU);
- ``vllm``: vLLM with per-prompt seeds, only with CUDA and vLLM installed (never run on this
  CPU-only project machine; the guard raises a clear error instead).

:func:`grade` reads any reward function's result (a dict with ``score``, or a number) the same
way for every caller; :func:`score_texts` and :func:`pass_rates` sample-and-grade in one call.
Not covered: beam search, budget forcing (``analysis.budget`` builds it on these samplers).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from core.data import Prompt
from core.model import load
from core.registry import Registry
from core.sampler import generate, left_pad


@dataclass
class Completion:
    """One sampled continuation: token ids (without EOS/padding) and whether it ended with EOS."""

    ids: list[int]
    eos: bool


@dataclass(frozen=True)
class Settings:
    """Sampling settings of a sampler (``top_k <= 0``: no top-k filter, as veRL's ``-1``)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int = 0


class Sampler(Protocol):
    name: str
    tokenizer: Any

    def generate(
        self, prompts: list[list[int]], n: int, max_new_tokens: int, batch: int | None = None
    ) -> list[Completion]: ...

    def reseed(self, seed: int) -> None: ...


SAMPLERS: Registry[Callable[..., Sampler]] = Registry("sampler")


def _eos_pad(tokenizer: Any) -> tuple[int, int]:
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    return int(eos), int(pad)


@SAMPLERS.register("local")
class LocalSampler:
    """The local engine's KV-cache sampler on CPU (:func:`core.sampler.generate`)."""

    name = "local"

    def __init__(self, model_path: str | Path, settings: Settings, state_file: str | None = None) -> None:
        model, tokenizer = load(model_path, state_file)
        self._setup(model, tokenizer, settings)

    @classmethod
    def of(cls, model: Any, tokenizer: Any, settings: Settings, generator: Any = None) -> LocalSampler:
        """A sampler over a model in memory; ``generator`` (a ``torch.Generator``) is shared if given."""
        self = cls.__new__(cls)
        self._setup(model, tokenizer, settings, generator)
        return self

    def _setup(self, model: Any, tokenizer: Any, settings: Settings, generator: Any = None) -> None:
        self.model, self.tokenizer, self.settings = model, tokenizer, settings
        self.gen = generator if generator is not None else torch.Generator().manual_seed(settings.seed)
        self.eos, self.pad = _eos_pad(tokenizer)

    def reseed(self, seed: int) -> None:
        self.gen.manual_seed(seed)

    def generate(
        self, prompts: list[list[int]], n: int, max_new_tokens: int, batch: int | None = None
    ) -> list[Completion]:
        """``batch`` prompts per decoding call (default: about 256 rows, ``256 // n`` prompts)."""
        out: list[Completion] = []
        chunk = batch or max(1, 256 // max(n, 1))
        was_training = self.model.training
        self.model.eval()
        s = self.settings
        for i in range(0, len(prompts), chunk):
            ro = generate(
                self.model,
                prompts[i : i + chunk],
                n,
                max_new_tokens,
                self.eos,
                self.pad,
                temperature=float(s.temperature),
                top_p=float(s.top_p),
                top_k=int(s.top_k),
                generator=self.gen,
            )
            for row, k in zip(ro.responses.tolist(), ro.response_lengths.tolist(), strict=True):
                ids = row[:k]
                eos = bool(ids) and ids[-1] == self.eos
                out.append(Completion(ids[:-1] if eos else ids, eos))
        self.model.train(was_training)
        return out


@SAMPLERS.register("hf")
class HFSampler:
    """``transformers`` ``generate`` with sampling (any causal-LM checkpoint; on the GPU when there is one)."""

    name = "hf"

    def __init__(self, model_path: str | Path, settings: Settings, state_file: str | None = None) -> None:
        self.model, self.tokenizer = load(model_path, state_file)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model.to(self.device)
        self.settings = settings
        self.eos, self.pad = _eos_pad(self.tokenizer)
        self.reseed(settings.seed)

    def reseed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def generate(
        self, prompts: list[list[int]], n: int, max_new_tokens: int, batch: int | None = None
    ) -> list[Completion]:
        s, res = self.settings, []
        chunk = batch or len(prompts) or 1
        for i in range(0, len(prompts), chunk):
            ids, mask = left_pad(prompts[i : i + chunk], self.pad)
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    do_sample=True,
                    temperature=float(s.temperature),
                    top_p=float(s.top_p),
                    top_k=int(s.top_k) if s.top_k > 0 else 0,
                    max_new_tokens=max_new_tokens,
                    num_return_sequences=n,
                    use_cache=True,
                    pad_token_id=self.pad,
                    eos_token_id=self.eos,
                )
            for row in out[:, ids.shape[1] :].tolist():  # mask by position: all after the first EOS goes
                cut = row.index(self.eos) if self.eos in row else len(row)
                res.append(Completion(row[:cut], cut < len(row)))
        return res


@SAMPLERS.register("vllm")
class VLLMSampler:
    """vLLM on a CUDA machine, one seed per prompt; refuses to start without one."""

    name = "vllm"

    def __init__(self, model_path: str | Path, settings: Settings, state_file: str | None = None) -> None:
        if state_file:
            raise RuntimeError("sampler=vllm needs an HF checkpoint directory, not a training-state file")
        if not torch.cuda.is_available():
            raise RuntimeError("sampler=vllm needs a CUDA GPU; use sampler=local or sampler=hf on CPU")
        try:
            from vllm import LLM  # optional: GPU installs only
        except ImportError as exc:
            raise RuntimeError("sampler=vllm needs vllm (GPU install: make setup GPU=1)") from exc
        self.llm = LLM(model=str(model_path), seed=int(settings.seed))
        self.tokenizer = self.llm.get_tokenizer()
        self.settings, self.seed = settings, int(settings.seed)

    def reseed(self, seed: int) -> None:
        self.seed = int(seed)

    def generate(
        self, prompts: list[list[int]], n: int, max_new_tokens: int, batch: int | None = None
    ) -> list[Completion]:
        from vllm import SamplingParams  # optional: GPU installs only

        s = self.settings
        params = [
            SamplingParams(
                n=n,
                temperature=float(s.temperature),
                top_p=float(s.top_p),
                top_k=int(s.top_k),
                max_tokens=max_new_tokens,
                seed=self.seed + i,
            )
            for i in range(len(prompts))
        ]
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        self.seed += len(prompts)
        return [Completion(list(o.token_ids), o.finish_reason == "stop") for r in outs for o in r.outputs]


def auto_sampler_name(model_path: str | Path) -> str:
    """vllm with CUDA + vllm installed; else local for Qwen2 checkpoints (the engine's family); else hf."""
    if torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None:
        return "vllm"
    try:
        arch = json.loads((Path(model_path) / "config.json").read_text()).get("architectures", [])
    except (OSError, ValueError):
        arch = []
    return "local" if arch == ["Qwen2ForCausalLM"] else "hf"


def make_sampler(
    name: str, model_path: str | Path, settings: Settings, state_file: str | None = None
) -> Sampler:
    """The sampler ``name`` (``auto`` picks with :func:`auto_sampler_name`) for ``model_path``."""
    if name == "auto":
        name = auto_sampler_name(model_path)
    return SAMPLERS.get(name)(model_path, settings, state_file)


def grade(result: Any) -> tuple[float, bool, dict[str, Any]]:
    """(score, correct, extra keys) of a reward function's result, read the same way everywhere.

    A dict needs ``score``; ``acc`` (when present) decides correctness, else ``score > 0``. A bare
    number is the score, and ``{"acc": score}`` its extra keys (as veRL's managers record it).

    >>> grade({"score": 0.1, "acc": False, "format": 1.0})
    (0.1, False, {'score': 0.1, 'acc': False, 'format': 1.0})
    >>> grade(1)
    (1.0, True, {'acc': 1.0})
    """
    if isinstance(result, dict):
        score = float(result["score"])
        return score, bool(result.get("acc", score > 0)), result
    score = float(result)
    return score, score > 0, {"acc": score}


def score_text(
    reward_fn: Callable[..., Any], prompt: Prompt, text: str
) -> tuple[float, bool, dict[str, Any]]:
    """:func:`grade` of ``reward_fn`` on one response, called with veRL's keyword signature."""
    return grade(
        reward_fn(
            data_source=prompt.data_source,
            solution_str=text,
            ground_truth=prompt.ground_truth,
            extra_info=prompt.extra_info,
        )
    )


def decode(tokenizer: Any, completions: Sequence[Completion]) -> list[str]:
    """Texts of completions as veRL's reward managers see them (special tokens skipped)."""
    return [tokenizer.decode(c.ids, skip_special_tokens=True) for c in completions]


def pass_rates(
    sampler: Sampler,
    prompts: list[Prompt],
    reward_fn: Callable[..., Any],
    max_new_tokens: int,
    n: int = 1,
    batch: int = 128,
) -> list[float]:
    """Per-prompt share of ``n`` sampled responses the reward function accepts (``acc``)."""
    comps = sampler.generate([p.ids for p in prompts], n, max_new_tokens, batch=batch)
    texts = decode(sampler.tokenizer, comps)
    rates = []
    for k, p in enumerate(prompts):
        hits = sum(float(score_text(reward_fn, p, t)[1]) for t in texts[k * n : (k + 1) * n])
        rates.append(hits / n)
    return rates
