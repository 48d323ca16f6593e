"""The recipes' view of composition: :func:`core.compose.compose` and a diff of two configs.

``options``/``CONF_DIR`` are :mod:`core.compose`'s (re-exported here, the recipes' entry point),
:func:`compose` is its ``compose`` with the recipes' rule for suggesting ``+key``; :func:`flatten` and :func:`diff` show exactly what a scale profile changed (printed
at launch and recorded in ``run.json``); :func:`laptop_scale` names the scale profile a recipe runs
at on the local engine when none is given. Does not: validate (``recipes.validate``) or launch.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.compose import CONF_DIR, check_choice, options
from core.compose import compose as _compose
from recipes.schema import accepts_extra

__all__ = ["CONF_DIR", "check_choice", "compose", "options", "flatten", "diff", "laptop_scale"]


def compose(overrides: Any = (), hydra: bool = False) -> DictConfig:
    """:func:`core.compose.compose` of the recipes: an unknown key's did-you-mean suggests ``+key``
    only where the whole stack accepts an extra key (:func:`recipes.schema.accepts_extra`)."""
    return _compose(overrides, hydra, may_add=accepts_extra)


def flatten(cfg: Any, prefix: str = "", resolve: bool = True) -> dict[str, Any]:
    """Flatten a config to ``{"a.b.c": value}``; lists stay values. ``resolve=False`` keeps
    interpolations as written, so derived keys do not show up as changes of their own."""
    out: dict[str, Any] = {}
    if isinstance(cfg, DictConfig):
        cfg = OmegaConf.to_container(cfg, resolve=resolve, throw_on_missing=False)
    if isinstance(cfg, dict):
        for k, v in cfg.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                out.update(flatten(v, key, resolve))
            else:
                out[key] = v
    return out


def diff(
    before: DictConfig, after: DictConfig, ignore: tuple[str, ...] = ("run_dir", "hydra")
) -> list[tuple[str, Any, Any]]:
    """Keys set to different values (interpolations compared as written): ``[(key, before, after)]``.

    A section that is null on one side and filled on the other shows as its filled keys only.
    """
    a, b = flatten(before, resolve=False), flatten(after, resolve=False)
    rows = []
    for key in sorted(set(a) | set(b)):
        if key.split(".")[0] in ignore:
            continue
        if any(
            side.get(key, "") is None and any(k.startswith(key + ".") for k in other)
            for side, other in ((a, b), (b, a))
        ):
            continue
        if a.get(key, "<unset>") != b.get(key, "<unset>"):
            rows.append((key, a.get(key, "<unset>"), b.get(key, "<unset>")))
    return rows


def laptop_scale(cfg: DictConfig) -> str:
    """The model option's profile (``rlvr.model_laptop_scale``, e.g. ``model=smollm2_135m`` ->
    ``laptop_smollm2``), else the recipe's own laptop profile (``rlvr.laptop_scale``: ``laptop_base``
    for recipes that start from a base model in their papers; ``conf/config.yaml``'s default,
    ``laptop``, otherwise)."""
    return str(OmegaConf.select(cfg, "rlvr.model_laptop_scale", default=None) or cfg.rlvr.laptop_scale)
