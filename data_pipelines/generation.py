"""The offline filter's generators: chat prompts in, ``n`` sampled texts per prompt out.

A generator is any object with ``fingerprint() -> dict`` (what identifies its outputs, for the
cache key) and ``generate(prompts, n, seed) -> list[list[str]]``; the filter takes one as an
argument, so tests and benchmarks can inject their own. :class:`SamplerGenerator` is the real
one: a sampler of :mod:`core.sampling` reseeded with ``seed`` on every call, so a chunk's samples
do not depend on what ran before (the filter's resume relies on this). Backends, in
:data:`BACKENDS`: ``hf`` (a local HF checkpoint: the local engine's KV-cache sampler on CPU,
``transformers`` ``generate`` on GPU), ``vllm`` (GPU machines; untested on this CPU-only
project machine) and ``auto`` (``vllm`` when CUDA and vLLM are available, else ``hf``).
Not covered: sampling itself (``core.sampling``), scoring (``data_pipelines.filter``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from core.data import chat_ids
from core.registry import Registry
from core.sampling import Settings, decode, make_sampler

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


class SamplerGenerator:
    """A :mod:`core.sampling` sampler (``local``, ``hf`` or ``vllm``) behind the filter's interface."""

    def __init__(self, model: str | Path, params: SamplingParams, sampler: str) -> None:
        self.path, self.params = check_model_path(model), params
        if params.cpu_threads and sampler != "vllm":
            torch.set_num_threads(params.cpu_threads)
        settings = Settings(temperature=params.temperature, top_p=params.top_p)
        self.sampler = make_sampler(sampler, self.path, settings)
        self._fp = model_fingerprint(self.path)

    def fingerprint(self) -> dict[str, Any]:
        if self.sampler.name == "vllm":
            return {"backend": "vllm", "model_sha256": self._fp}
        return {
            "backend": "hf",
            "model_sha256": self._fp,
            "sampler": "engine" if self.sampler.name == "local" else "hf.generate",
        }

    def generate(self, prompts: list[Messages], n: int, seed: int) -> list[list[str]]:
        tok = self.sampler.tokenizer
        self.sampler.reseed(seed)
        ids = [chat_ids(tok, m) for m in prompts]
        texts = decode(tok, self.sampler.generate(ids, n, self.params.max_new_tokens, batch=len(ids)))
        return [texts[i * n : (i + 1) * n] for i in range(len(prompts))]


def _cuda() -> bool:
    return torch.cuda.is_available()


BACKENDS: Registry[Any] = Registry("sampling backend")
BACKENDS.add("hf", lambda model, p: SamplerGenerator(model, p, "hf" if _cuda() else "local"))
BACKENDS.add("vllm", lambda model, p: SamplerGenerator(model, p, "vllm"))
BACKENDS.add(
    "auto",
    lambda model, p: BACKENDS.get("vllm" if _cuda() and importlib.util.find_spec("vllm") else "hf")(model, p),
)


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
