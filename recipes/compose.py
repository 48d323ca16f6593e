"""Compose the project's Hydra config (veRL's ppo_trainer tree + one group per ablation axis).

Does: locate ``conf/``, compose a config from overrides with Hydra's compose API, list the
available recipes/options, and diff two composed configs (used to print exactly what a
scale profile changed). Does not: validate (see ``recipes.validate``) or launch anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def options(group: str) -> list[str]:
    """Names of the options of one of this project's config groups (e.g. ``recipe``)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def compose(overrides: Iterable[str] = ()) -> DictConfig:
    """Compose ``conf/config.yaml`` with Hydra overrides (``recipe=dapo``, ``a.b=1``...).

    Raises ``ValueError`` naming the recipe list when ``recipe=<name>`` does not exist.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    overrides = list(overrides)
    check_choice(overrides, "recipe")
    check_choice(overrides, "scale")
    if GlobalHydra.instance().is_initialized():
        return hydra_compose(config_name="config", overrides=overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return hydra_compose(config_name="config", overrides=overrides)


def check_choice(overrides: list[str], group: str) -> None:
    """Raise a helpful error for ``group=<unknown option>`` before Hydra's generic one."""
    for ov in overrides:
        key, _, value = ov.partition("=")
        if key.lstrip("+~") == group and value not in ("", "null") and "," not in value:
            if value not in options(group):
                raise ValueError(
                    f"unknown {group} {value!r}; available: {', '.join(options(group))} "
                    f"(files in conf/{group}/)"
                )


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
    """Keys set to different values (interpolations compared as written): ``[(key, before, after)]``."""
    a, b = flatten(before, resolve=False), flatten(after, resolve=False)
    rows = []
    for key in sorted(set(a) | set(b)):
        if key.split(".")[0] in ignore:
            continue
        if a.get(key, "<unset>") != b.get(key, "<unset>"):
            rows.append((key, a.get(key, "<unset>"), b.get(key, "<unset>")))
    return rows
