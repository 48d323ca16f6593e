"""The data-source registry: ``data_source`` string -> verifier function.

What it does: holds every verifier under its canonical name (``math``, ``gsm8k``, ``overtime_pay``,
``arithmetic``, ``countdown``, ``code``, ``reasoning_gym``) plus veRL/HF-style aliases
(``openai/gsm8k``, ``lighteval/MATH``, ...), and resolves a data source: exact name or alias first,
then a registered prefix family (``aime*`` -> math, ``reasoning_gym/<task>`` -> reasoning-gym with
the task name). A failed lookup raises ``KeyError`` listing what exists.

A verifier takes ``(solution_str, ground_truth, extra_info, timeout_s)`` and returns a dict with
``acc`` (bool), ``pred`` (normalised answer or None), ``reason`` (why not credited, "" otherwise)
and optionally ``format`` (0/1; defaults to ``rewards.shaping.format_reward``).

What it does not do: scoring or shaping (``rewards.compute_score``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from core.registry import Registry


class Verifier(Protocol):
    def __call__(
        self, solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]: ...


SOURCES: Registry[Verifier] = Registry("reward data source")
ALIASES: Registry[str] = Registry("reward data-source alias")
# (prefix, canonical family): "aime2024" -> math; "reasoning_gym/spell_backward" -> reasoning_gym
PREFIXES: Registry[str] = Registry("reward data-source prefix")


def register(name: str, *aliases: str) -> Callable[[Verifier], Verifier]:
    """Decorator: register a verifier under ``name`` and its aliases."""

    def deco(fn: Verifier) -> Verifier:
        SOURCES.add(name, fn)
        for a in aliases:
            ALIASES.add(a, name)
        return fn

    return deco


def resolve(data_source: str) -> tuple[str, Verifier]:
    """Canonical name and verifier for ``data_source``.

    >>> import rewards
    >>> resolve("openai/gsm8k")[0], resolve("aime2025")[0], resolve("reasoning_gym/spell_backward")[0]
    ('gsm8k', 'math', 'reasoning_gym')
    """
    name = str(data_source)
    if name in SOURCES:
        return name, SOURCES.get(name)
    if name in ALIASES:
        canon = ALIASES.get(name)
        return canon, SOURCES.get(canon)
    for prefix in PREFIXES:
        if name.startswith(prefix):
            canon = PREFIXES.get(prefix)
            return canon, SOURCES.get(canon)
    known = sorted(SOURCES.names() + ALIASES.names() + [p + "*" for p in PREFIXES.names()])
    raise KeyError(f"unknown reward data source {name!r}; known: {', '.join(known)}")


def result(acc: bool, pred: str | None, reason: str = "", **extra: Any) -> dict[str, Any]:
    """The dict every verifier returns."""
    return {"acc": bool(acc), "pred": pred, "reason": "" if acc else (reason or "wrong answer"), **extra}
