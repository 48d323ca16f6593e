"""The registry of config rules, each tagged with the engines it applies to.

A rule is a small function ``rule(cfg) -> [error, ...]``, registered with :func:`rule` in
:data:`RULES`; errors read ``[full.key] what is wrong; fix: what to do``. The rules live in one
module per axis of the config (:mod:`recipes.validate.domains`, ``batch``, ``kl``, ``loss``,
``reward``, ``models``, ``gpu``, ``local``); importing :mod:`recipes.validate` registers them all.
:func:`check_rules` runs every rule registered for an engine, in the order of their names. Adding
a rule is a decorated function of a few lines in the module of its axis.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.registry import Registry

ENGINES = ("verl", "local")


@dataclass(frozen=True)
class Rule:
    """A check and the engines (``verl``, ``local``) whose launches it guards."""

    check: Callable[[DictConfig], list[str]]
    engines: tuple[str, ...]


RULES: Registry[Rule] = Registry("config rule")


def rule(name: str, engines: tuple[str, ...] = ENGINES) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn(cfg) -> [errors]`` as rule ``name`` for ``engines``."""

    def deco(fn: Callable[[DictConfig], list[str]]) -> Callable[[DictConfig], list[str]]:
        RULES.add(name, Rule(fn, tuple(engines)))
        return fn

    return deco


def check_rules(cfg: DictConfig, engine: str) -> list[str]:
    """Errors of every rule registered for ``engine`` (empty when the config is consistent)."""
    return [
        e for name in RULES for e in (RULES.get(name).check(cfg) if engine in RULES.get(name).engines else [])
    ]


def sel(cfg: DictConfig, key: str) -> Any:
    """``cfg``'s value at dotted ``key``; None when veRL's tree has no such key."""
    return OmegaConf.select(cfg, key, default=None)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
