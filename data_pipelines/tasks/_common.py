"""Helpers shared by the task generators: a per-(task, seed, split) RNG, the held-out partition
(:func:`held_out`, :func:`draw_in_split`) and the row builder.

Not a task module (the leading underscore keeps ``tasks/__init__`` from importing it as one).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any, TypeVar

from data_pipelines.templates import Template, check_compatible, get_template

T = TypeVar("T")


def derived_seed(task: str, seed: int, split: str) -> int:
    """A stable 63-bit seed for one (task, seed, split): train and test never share a stream.

    >>> derived_seed("countdown", 0, "train") != derived_seed("countdown", 0, "test")
    True
    """
    digest = hashlib.sha256(f"{task}|{seed}|{split}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def task_rng(task: str, seed: int, split: str) -> random.Random:
    """``random.Random`` seeded by :func:`derived_seed`."""
    return random.Random(derived_seed(task, seed, split))


#: share of a task's prompt space reserved for its test split (see :func:`held_out`)
HOLDOUT = 0.2


def held_out(task: str, question: str, fraction: float = HOLDOUT) -> bool:
    """Whether ``question`` belongs to ``task``'s held-out partition (a stable hash of the text).

    A task that partitions its space draws test prompts only from it and train prompts and
    pretraining documents only outside it, so its held-out accuracy is measured on prompts the
    base model and the policy never read, whatever the sizes drawn.

    >>> held_out("chain_sum", "3+5+2") == held_out("chain_sum", "3+5+2")
    True
    >>> sum(held_out("chain_sum", str(i)) for i in range(10000)) / 10000  # doctest: +ELLIPSIS
    0.2...
    """
    digest = hashlib.sha256(f"heldout|{task}|{question}".encode()).digest()
    return int.from_bytes(digest[:8], "big") < fraction * 2**64


def draw_in_split(
    task: str,
    rng: random.Random,
    split: str,
    draw: Callable[[random.Random], T],
    key: Callable[[T], str],
    seen: set[str] | None = None,
) -> T | None:
    """A draw for ``split``: a test draw from ``task``'s held-out partition (:func:`held_out` of
    ``key``) and not in ``seen`` (test prompts are distinct); any other split's draw (and every
    pretraining document's) from outside it. ``None`` when 100,000 draws found none: the caller
    names the sizes to change."""
    for _ in range(100_000):
        x = draw(rng)
        k = key(x)
        if split != "test":
            if not held_out(task, k):
                return x
        elif held_out(task, k) and (seen is None or k not in seen):
            return x
    return None


def resolve_template(template: str | Template, accepted: tuple[str, ...], task: str) -> Template:
    """Look up ``template`` and check that ``task``'s verifier reads its answer format."""
    tpl = get_template(template)
    check_compatible(tpl, accepted, task)
    return tpl


def make_row(
    *,
    data_source: str,
    question: str,
    answer: str,
    ability: str,
    split: str,
    index: int,
    template: Template,
    extra: dict[str, Any] | None = None,
    prompt_text: str | None = None,
) -> dict[str, Any]:
    """One row in veRL's schema; ``extra`` lands in ``extra_info`` next to index/split/question.

    ``question`` is the bare question (what dedup and decontamination compare);
    ``prompt_text`` (default: the question) is what the template wraps, e.g. with task rules.
    """
    return {
        "data_source": data_source,
        "prompt": template.render(prompt_text or question),
        "ability": ability,
        "reward_model": {"style": "rule", "ground_truth": answer},
        "extra_info": {"index": index, "split": split, "question": question, **(extra or {})},
    }
