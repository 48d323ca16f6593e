"""Errors by key: values whose interpolation does not resolve (step 0 of
:func:`recipes.validate.validate`), and the order of the report, the keys the user typed first.
"""

from __future__ import annotations

import re

from omegaconf import DictConfig, ListConfig
from omegaconf.errors import InterpolationResolutionError, MissingMandatoryValue

from recipes.compose import flatten


def resolution_errors(node: DictConfig | ListConfig, prefix: str = "") -> list[str]:
    """``[full.key] why`` for every value whose interpolation does not resolve (``???`` is skipped)."""
    errs: list[str] = []
    keys = node.keys() if isinstance(node, DictConfig) else range(len(node))
    for key in keys:
        full = f"{prefix}.{key}" if prefix else str(key)
        try:
            value = node[key]
        except MissingMandatoryValue:
            continue
        except InterpolationResolutionError as e:
            why = str(e).splitlines()[0].split("while resolving interpolation: ", 1)[-1]
            errs.append(f"[{full}] {why}")
            continue
        if isinstance(value, (DictConfig, ListConfig)):
            errs += resolution_errors(value, full)
    return errs


def _refs(text: str) -> set[str]:
    """Absolute keys an interpolation reads (``${a.b}``, ``${rlvr.div:${a.b},16}``, ``${oc.select:a.b,x}``)."""
    keys = set(re.findall(r"\$\{([A-Za-z_][\w.]*)\}", text))
    keys |= set(re.findall(r"\$\{oc\.select:([A-Za-z_][\w.]*)", text))
    return keys


def _blame(key: str, given: dict[str, str], deps: dict[str, set[str]]) -> str | None:
    """The user's key ``key`` is (or lies under, or is read by, directly or through other keys)."""
    seen, todo = set(), [key]
    while todo:
        k = todo.pop()
        for g in given:
            if k == g or k.startswith(g + "."):
                return g
        if k not in seen:
            seen.add(k)
            todo += deps.get(k, ())
    return None


def user_first(errs: list[str], cfg: DictConfig, given: dict[str, str]) -> list[str]:
    """``errs`` with the problems of the keys the user typed (``given``: key -> value as typed) first.

    A problem of a key interpolated from a given key (``ppo_mini_batch_size: ${data.train_batch_size}``)
    puts a line naming the given key before it: ``[data.train_batch_size] abc (you typed it) breaks the
    keys that read it: ...``. The other problems keep their order.
    """
    if not given or not errs:
        return errs
    flat = flatten(cfg, resolve=False)
    deps = {k: _refs(v) for k, v in flat.items() if isinstance(v, str) and "${" in v}
    mine: dict[str, list[str]] = {}
    rest: list[str] = []
    for e in errs:
        key = e[1 : e.index("]")] if e.startswith("[") and "]" in e else ""
        owner = _blame(key, given, deps) if key else None
        (mine.setdefault(owner, []) if owner else rest).append(e)
    out: list[str] = []
    for owner, lines in mine.items():
        if not any(line.startswith(f"[{owner}]") for line in lines):
            readers = [line[1 : line.index("]")] for line in lines]
            types = sorted({m for line in lines for m in re.findall(r"expected (\w+)", line)})
            need = f" (they expect {' or '.join(types)})" if types else ""
            fix = f"; fix: {owner}=<{types[0]}>" if len(types) == 1 else f"; fix: give {owner} a valid value"
            out.append(
                f"[{owner}] {given[owner]!r} (as you typed it) breaks the keys that read it: "
                f"{', '.join(readers)}{need}{fix}"
            )
        out += lines
    return out + rest
