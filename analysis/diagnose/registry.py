"""The checklist's machinery: the check registry, what a check sees, and the "not logged" verdict.

``CHECKS`` holds every check under its name with its place in the checklist and its title; a check
module registers its function with ``@check(name, order, title)``. A check reads a ``Context`` (the
run, the output document, the command's settings, a seeded generator) and returns a
``render.Section`` with a status (ok / warn / not_logged / info) and a one-line verdict; data a run
did not log gives ``not_logged``, never an exception. ``key_of`` names the metric a series came from.

What it does not do: run the checks (``analysis.diagnose.checklist``) or hold any check itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from omegaconf import DictConfig

from analysis.render import Document, Section
from core.registry import Registry
from core.runs import Run


@dataclass
class Context:
    """What a check sees: the run, the output document and the command's settings."""

    run: Run
    doc: Document
    cfg: DictConfig
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    @cached_property
    def rollouts(self) -> list[dict[str, Any]]:
        return self.run.samples("rollouts")

    @cached_property
    def validation(self) -> list[dict[str, Any]]:
        return self.run.samples("validation")

    @property
    def samples(self) -> list[dict[str, Any]]:
        """Training rollouts if dumped, else validation samples."""
        return self.rollouts or self.validation


@dataclass(frozen=True)
class Check:
    order: int
    title: str
    fn: Callable[[Context], Section]


CHECKS: Registry[Check] = Registry("check")


def check(name: str, order: int, title: str) -> Callable[[Callable[[Context], Section]], Callable]:
    """Register a check function under ``name`` at position ``order`` of the checklist."""

    def deco(fn: Callable[[Context], Section]) -> Callable[[Context], Section]:
        CHECKS.add(name, Check(order, title, fn))
        return fn

    return deco


def not_logged(title: str, what: str, hint: str = "") -> Section:
    return Section(title, "not_logged", f"not logged: {what}" + (f" ({hint})" if hint else ""))


def key_of(ctx: Context, s: object) -> str:
    """The metric name under which series ``s`` was logged."""
    return next((k for k, v in ctx.run.metrics.items() if v is s), "?")
