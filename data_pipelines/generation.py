"""Samplers for the offline filter: chat prompts in, ``n`` sampled responses per prompt out.

A generator is any object with ``fingerprint() -> dict`` (what identifies its outputs, for the
cache key) and ``generate(prompts, n, seed) -> list[list[str]]``; the filter takes one as an
argument, so tests and benchmarks can inject their own. Backends, registered in ``BACKENDS``:

* ``hf`` (CPU, and GPU without vLLM): the HF checkpoint at ``model=<path>`` loaded with
  ``from_pretrained`` and sampled in batches with a KV cache. It uses the local engine's
  sampler (``recipes.local.sampler.generate``: prefill shared by the n samples of a prompt,
  masks by position) when that module exists and the device is CPU, else ``model.generate``.
  Each call reseeds torch with ``seed``, so a chunk's samples do not depend on what ran before
  (the filter's resume relies on this).
* ``vllm`` (GPU machines): ``vllm.LLM.chat`` with per-request seeds. Import-guarded; it cannot be
  executed on this CPU-only project machine and is untested here.
* ``auto``: ``vllm`` when CUDA and vLLM are available, else ``hf``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from recipes.registry import Registry

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings (all part of the cache key).

    Attributes:
        temperature, top_p: as in veRL's rollout config.
        max_new_tokens: response length cap.
        batch_prompts: prompts per generation call (a "chunk"; one shard of samples each).
        cpu_threads: torch intra-op threads for CPU sampling (None: torch's default). Part of the
            key because the thread count can change floating-point sums and so the samples.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    batch_prompts: int = 8
    cpu_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError(
                f"[filter] sampling.temperature ({self.temperature}) must be > 0 (pass rates need sampling)"
            )
        if not 0 < self.top_p <= 1:
            raise ValueError(f"[filter] sampling.top_p ({self.top_p}) must be in (0, 1]")
        if self.max_new_tokens < 1 or self.batch_prompts < 1:
            raise ValueError("[filter] sampling.max_new_tokens and sampling.batch_prompts must be >= 1")


class Generator(Protocol):
    """What the filter needs from a sampler."""

    def fingerprint(self) -> dict[str, Any]: ...

    def generate(self, prompts: list[Messages], n: int, seed: int) -> list[list[str]]: ...


def model_fingerprint(path: str | Path, full_hash_limit: int = 1 << 30) -> str:
    """SHA-256 over a checkpoint directory: config/tokenizer files and weights (content hash for
    files up to ``full_hash_limit`` bytes, else size + first and last MiB)."""
    path = Path(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")):
        size = f.stat().st_size
        h.update(f"{f.relative_to(path)}|{size}|".encode())
        with f.open("rb") as fh:
            if size <= full_hash_limit:
                while block := fh.read(1 << 20):
                    h.update(block)
            else:
                h.update(fh.read(1 << 20))
                fh.seek(-(1 << 20), 2)
                h.update(fh.read())
    return h.hexdigest()


def check_model_path(model: Any) -> Path:
    """The model directory, or ``FileNotFoundError`` naming the key and the fix."""
    if not model:
        raise ValueError(
            "[filter] model=<path> is required: a HF checkpoint directory (config.json + weights)"
        )
    path = Path(str(model)).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"[filter] model={model}: no such directory (fix: pass a local HF checkpoint dir)"
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"[filter] model={model}: no config.json in it (fix: point at a save_pretrained dir)"
        )
    return path


class HFGenerator:
    """Batched KV-cache sampling of a local HF checkpoint on CPU (or one GPU)."""

    def __init__(self, model: str | Path, params: SamplingParams, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path, self.params, self.device = check_model_path(model), params, device
        if params.cpu_threads:
            torch.set_num_threads(params.cpu_threads)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = (
            AutoModelForCausalLM.from_pretrained(str(self.path), dtype=torch.float32).to(device).eval()
        )
        self._fp = model_fingerprint(self.path)
        try:
            from recipes.local import sampler as engine_sampler  # the local engine's sampler
        except ImportError:
            engine_sampler = None
        self._engine = engine_sampler if device == "cpu" else None

    def fingerprint(self) -> dict[str, Any]:
        return {
            "backend": "hf",
            "model_sha256": self._fp,
            "sampler": "engine" if self._engine else "hf.generate",
        }

    def generate(self, prompts: list[Messages], n: int, seed: int) -> list[list[str]]:
        import torch

        tok, p = self.tokenizer, self.params
        texts = [tok.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in prompts]
        if self._engine is not None:
            ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
            gen = torch.Generator().manual_seed(seed)
            ro = self._engine.generate(
                self.model,
                ids,
                n,
                p.max_new_tokens,
                tok.eos_token_id,
                tok.pad_token_id,
                temperature=p.temperature,
                top_p=p.top_p,
                generator=gen,
            )
            lengths = ro.response_mask.sum(-1).tolist()
            decoded = [
                tok.decode([t for t in row[:k] if t != tok.eos_token_id], skip_special_tokens=True)
                for row, k in zip(ro.responses.tolist(), lengths, strict=True)
            ]
            return [decoded[i * n : (i + 1) * n] for i in range(len(prompts))]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        torch.manual_seed(seed)
        with torch.no_grad():
            out = self.model.generate(
                **enc,
                do_sample=True,
                temperature=p.temperature,
                top_p=p.top_p,
                top_k=0,
                max_new_tokens=p.max_new_tokens,
                num_return_sequences=n,
                use_cache=True,
                eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id,
            )
        resp = out[:, enc["input_ids"].shape[1] :]
        decoded = []
        for row in resp.tolist():
            if tok.eos_token_id in row:  # mask by position: everything after the first EOS goes
                row = row[: row.index(tok.eos_token_id)]
            decoded.append(tok.decode(row, skip_special_tokens=True))
        return [decoded[i * n : (i + 1) * n] for i in range(len(prompts))]


class VLLMGenerator:
    """vLLM sampling on GPU machines (not runnable on a CPU-only machine; untested here)."""

    def __init__(self, model: str | Path, params: SamplingParams) -> None:
        try:
            from vllm import LLM
        except ImportError as e:
            raise ImportError("[filter] backend=vllm needs vLLM (GPU install: `make setup GPU=1`)") from e
        self.path, self.params = check_model_path(model), params
        self.llm = LLM(model=str(self.path), seed=0)
        self._fp = model_fingerprint(self.path)

    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "vllm", "model_sha256": self._fp}

    def generate(self, prompts: list[Messages], n: int, seed: int) -> list[list[str]]:
        from vllm import SamplingParams as VSP

        p = self.params
        sps = [
            VSP(n=n, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_new_tokens, seed=seed + i)
            for i in range(len(prompts))
        ]
        outs = self.llm.chat(prompts, sps, use_tqdm=False)
        return [[o.text for o in out.outputs] for out in outs]


def _auto(model: str | Path, params: SamplingParams) -> Generator:
    import importlib.util

    import torch

    if torch.cuda.is_available() and importlib.util.find_spec("vllm") is not None:
        return VLLMGenerator(model, params)
    return HFGenerator(model, params, "cuda" if torch.cuda.is_available() else "cpu")


BACKENDS: Registry[Any] = Registry("sampling backend")
BACKENDS.add("hf", HFGenerator)
BACKENDS.add("vllm", VLLMGenerator)
BACKENDS.add("auto", _auto)


def make_generator(backend: str, model: str | Path, params: SamplingParams) -> Generator:
    """Build the named backend for ``model`` (checks the path first)."""
    check_model_path(model)
    return BACKENDS.get(backend)(model, params)


def cache_key(
    generator: Generator, params: SamplingParams, n: int, seed: int, verifier: str, data_sha256: str
) -> tuple[str, dict[str, Any]]:
    """The cache key (16 hex chars) and what went into it."""
    parts = {
        "model": generator.fingerprint(),
        "sampling": {**asdict(params), "n": n, "seed": seed},
        "verifier": verifier,
        "data_sha256": data_sha256,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16], parts
