"""The recipes' blocks, composed from ``conf/`` and ``recipes/official/`` (no results files).

- ``recipes-table``: README's table, one row per recipe (``recipes.table.table``, also printed by
  ``python -m recipes.table``);
- ``recipes-provenance``: the body of docs/provenance.md -- every recipe's official settings key by
  key (``recipes/official/<recipe>.yaml``: value, source, note), next to what the composed recipe
  does with each (the same, cited, or a deviation with its reason from ``rlvr.deviations``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from omegaconf import DictConfig, OmegaConf

from core.compose import context
from docgen.engine import Rendered
from recipes import official
from recipes.compose import compose, options
from recipes.table import table

#: recipe -> its composed config, while :func:`composing` is active (None: compose every time)
_COMPOSED: dict[str, DictConfig] | None = None


@contextmanager
def composing() -> Iterator[None]:
    """For one generation of the docs: one Hydra context (``core.compose.context``: ~0.3 s per
    composition instead of ~1 s) and each recipe composed once (:func:`composed`), however many
    blocks read it (the table, the provenance, the recipe's page). The blocks only read the configs."""
    global _COMPOSED
    saved = _COMPOSED
    _COMPOSED = {}
    try:
        with context():
            yield
    finally:
        _COMPOSED = saved


def composed(recipe: str) -> DictConfig:
    """``recipe=<recipe>`` composed (once per :func:`composing`, and read-only then)."""
    if _COMPOSED is None:
        return compose([f"recipe={recipe}"])
    if recipe not in _COMPOSED:
        _COMPOSED[recipe] = compose([f"recipe={recipe}"])
    return _COMPOSED[recipe]


def _fmt(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("|", "/")


def _one_line(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "/")


def provenance_section(recipe: str) -> str:
    """One recipe's official settings (recipes/official/<recipe>.yaml) against the composed recipe."""
    t = official.load(recipe)
    cfg = composed(recipe)
    dev = dict(cfg.rlvr.get("deviations") or {})
    lines = [f"## `{recipe}`: {t.method}", ""]
    lines += [f"- {pid}: {_one_line(ref)}" for pid, ref in t.papers.items()]
    lines += [
        f"- Steps (the source counts {t.steps.get('source_counts')}): {_one_line(t.steps.get('note', ''))}",
        "",
    ]
    lines += ["| key | official value | source | this recipe |", "|---|---|---|---|"]
    for key, e in t.keys.items():
        got = OmegaConf.select(cfg, key)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        src = "<br>".join(f"`{c}`" if "@" in c else c for c in (e.source, *e.also))
        value = _fmt(e.value) + (f" ({_one_line(e.note)})" if e.note else "")
        mine = f"**deviation**: {_fmt(got)}; {_one_line(dev[key])}" if key in dev else "same, cited"
        lines.append(f"| `{key}` | {value} | {src} | {mine} |")
    if t.unstated:
        lines += ["", "Left open by the sources:", ""]
        lines += [f"- `{k}`: {_one_line(v)}" for k, v in t.unstated.items()]
    return "\n".join(lines)


def provenance_doc() -> str:
    """The body of docs/provenance.md: every recipe's official settings against the recipe."""
    return "\n\n".join(provenance_section(r) for r in options("recipe")) + "\n"


def recipes_table() -> Rendered:
    return Rendered(table(composed))


def recipes_provenance() -> Rendered:
    return Rendered(provenance_doc())
