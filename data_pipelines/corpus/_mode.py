"""What every corpus family draws the same way: a document's context, mode and tags, and how it is written.

A family draws its question, then :func:`draw_mode` (chat or plain text; worked or direct; tagged or
not, each with the family's shares), writes its own worked solution or direct answer, and lays the
assistant text out with :func:`assistant_text`. :func:`noise_levels` reads a family's
``direct_noise`` (one share, or one per difficulty level). Not a family: nothing registers here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Mode:
    """One document's draw: chat context (else plain text), a worked solution (else a direct answer),
    the ``<think>/<answer>`` tags."""

    chat: bool
    worked: bool
    tagged: bool


def draw_mode(
    rng: random.Random, chat: float, worked_chat: float, worked_plain: float, tag: float, tag_plain: float
) -> Mode:
    """Chat with probability ``chat``; worked and tagged with the share of that context."""
    is_chat = rng.random() < chat
    worked = rng.random() < (worked_chat if is_chat else worked_plain)
    tagged = rng.random() < (tag if is_chat else tag_plain)
    return Mode(is_chat, worked, tagged)


def noise_levels(direct_noise: float | list[float], levels: int, key: str, fix: str) -> list[float]:
    """``direct_noise`` as one share per difficulty level; a list of the wrong length names ``key``."""
    if not isinstance(direct_noise, (list, tuple)):
        return [float(direct_noise)] * levels
    if len(direct_noise) != levels:
        raise ValueError(f"[{key}] {len(direct_noise)} values for {levels} levels (fix: {fix})")
    return [float(x) for x in direct_noise]


def assistant_text(mode: Mode, body: str, answer: str) -> str:
    """The worked ``body`` and/or the ``answer``, inside the tags when the mode has them."""
    if mode.tagged:
        return (
            f"<think>{body}</think><answer>{answer}</answer>" if mode.worked else f"<answer>{answer}</answer>"
        )
    return body if mode.worked else answer


def doc_meta(family: str, k: int, mode: Mode, style: str, correct: bool) -> dict[str, Any]:
    """What a document is, for :func:`data_pipelines.corpus.describe`."""
    return {
        "family": family,
        "k": k,
        "context": "chat" if mode.chat else "plain",
        "mode": "worked" if mode.worked else "direct",
        "style": style,
        "tagged": mode.tagged,
        "correct": correct,
    }
