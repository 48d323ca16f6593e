"""Procedural task generators, registered by name in ``TASKS``.

A task is a function ``generate(n: int, seed: int, split: str, **params) -> list[dict]``
returning rows in veRL's parquet schema (``data_source``, ``prompt`` as chat messages,
``ability``, ``reward_model.{style, ground_truth}``, ``extra_info``). Task modules
register themselves on import; this package imports them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core.registry import Registry

TaskFn = Callable[..., list[dict[str, Any]]]
TASKS: Registry[TaskFn] = Registry("task")

# Task modules register themselves on import (each file is owned by one module author).
import importlib  # noqa: E402
import pkgutil  # noqa: E402

for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
