"""Type-check a composed config against veRL's dataclass field types.

veRL instantiates its config dataclasses without checking types (``clip_ratio_high=abc`` or
``use_kl_loss=maybe`` are accepted and fail, or silently misbehave, much later). This walker
visits every node that carries a ``_target_`` dataclass and checks each present field's value
against the field's annotation. ``None`` is always allowed (many veRL fields are typed ``int``
with a ``None`` default); unparseable annotations are skipped, not guessed.
"""

from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import Any, Union

from omegaconf import DictConfig, ListConfig


def _load(target: str) -> type | None:
    module, _, name = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return obj if dataclasses.is_dataclass(obj) else None


def _ok(value: Any, tp: Any) -> bool:
    """Whether ``value`` (a plain Python value) fits annotation ``tp``; unknown → True."""
    if value is None or tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return any(_ok(value, a) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        return isinstance(value, (list, tuple, ListConfig))
    if origin is dict or tp is dict:
        return isinstance(value, (dict, DictConfig))
    return True


def type_errors(cfg: DictConfig, prefix: str = "") -> list[str]:
    """Every ``[full.key] expected T, got V`` mismatch below ``cfg`` (recursive)."""
    errors: list[str] = []
    cls = _load(str(cfg.get("_target_"))) if "_target_" in cfg else None
    hints: dict[str, Any] = {}
    if cls is not None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # noqa: BLE001 - forward refs we cannot resolve: skip, don't guess
            hints = {}
    for key in cfg.keys():
        full = f"{prefix}.{key}" if prefix else str(key)
        node = cfg._get_node(key)
        if node is None or node._is_missing() or node._is_interpolation() and not _resolvable(cfg, key):
            continue
        value = cfg[key]
        if isinstance(value, DictConfig):
            errors.extend(type_errors(value, full))
            continue
        if key in hints and not _ok(value, hints[key]):
            want = getattr(hints[key], "__name__", None) or str(hints[key]).replace("typing.", "")
            errors.append(f"[{full}] expected {want}, got {value!r} ({type(value).__name__})")
    return errors


def _resolvable(cfg: DictConfig, key: Any) -> bool:
    try:
        cfg[key]
    except Exception:  # noqa: BLE001
        return False
    return True
