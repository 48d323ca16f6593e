"""A designed pretraining corpus for the laptop *base* model: the tasks' skills held latently.

A real base model has read web text in which a question is mostly followed by a short direct
answer, sometimes by a worked solution of some length and style, and only sometimes in the answer
format an RL prompt will ask for. This package writes such a corpus for the project's own tasks,
so that a ~1M-parameter model pretrained on it by next-token prediction starts RL the way R1-Zero's
base did: a low but non-zero sampled pass rate, higher when it happens to work the problem out.

Each *family* is a module registering a writer in :data:`FAMILIES`:
``writer(rng, **params) -> Doc``. :func:`build_corpus` draws ``n`` documents from a weighted mix
of families, deterministically from a seed. A :class:`Doc` is plain data (an optional user prompt
and the text after it); the pretraining step renders it with the tokenizer's chat template. Every
document records what it is (``meta``: family, difficulty, context, mode, style, tagged, correct)
so the corpus can be described (:func:`describe`).

The corpus is **designed**: the share of worked solutions, how often the answer tag appears and how
often a direct answer is wrong are parameters, not measurements of real text. A model trained on
it shows how RL behaves from such a start, not that real base models have these rates.
Not covered: natural-language text outside the tasks.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.registry import Registry


@dataclass(frozen=True)
class Doc:
    """One pretraining document: ``prompt`` (a chat document's user message, None for plain text),
    ``text`` (the assistant turn, or the whole plain document) and ``meta`` (what it is)."""

    prompt: str | None
    text: str
    meta: dict[str, Any] = field(default_factory=dict)


Writer = Callable[..., Doc]
FAMILIES: Registry[Writer] = Registry("corpus family")


def build_corpus(
    n: int, seed: int, mix: Mapping[str, float], params: Mapping[str, Mapping[str, Any]] | None = None
) -> list[Doc]:
    """``n`` documents drawn from the ``mix`` of families (weights need not sum to 1).

    ``params[family]`` goes to that family's writer as keyword arguments. Deterministic in
    (n, seed, mix, params): the same arguments give the same documents in the same order.
    """
    if n <= 0:
        raise ValueError(f"[local.pretrain.corpus.n] {n} must be > 0")
    names = sorted(mix)
    weights = [float(mix[k]) for k in names]
    if not names or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(
            f"[local.pretrain.corpus.mix] weights must be >= 0 with a positive sum, got {dict(mix)}"
        )
    writers = [FAMILIES.get(k) for k in names]
    params = params or {}
    rng = random.Random(f"corpus/{seed}")
    out = []
    for _ in range(n):
        i = rng.choices(range(len(names)), weights)[0]
        out.append(writers[i](rng, **dict(params.get(names[i]) or {})))
    return out


def describe(docs: list[Doc]) -> dict[str, Any]:
    """Shares of the corpus by context x mode, style, tagged and correct (what the design put in)."""
    n = max(1, len(docs))
    count: Counter[str] = Counter()
    for d in docs:
        m = d.meta
        count[f"{m.get('context')}/{m.get('mode')}"] += 1
        count[f"style/{m.get('style')}"] += 1
        count["tagged"] += bool(m.get("tagged"))
        count["correct"] += bool(m.get("correct"))
    return {"docs": len(docs), **{k: round(v / n, 4) for k, v in sorted(count.items())}}


# family modules register themselves on import
for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
