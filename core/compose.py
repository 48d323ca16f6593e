"""Compose the project's Hydra config (veRL's ppo_trainer tree + one group per ablation axis).

Does: locate ``conf/``, compose a config from overrides with Hydra's compose API (reusing an
active Hydra context, e.g. inside a ``@hydra.main`` command), list the available options of a
config group; importing it registers the project's OmegaConf resolvers (:mod:`core.resolvers`),
so every command, engine and test that composes has them. Does not: validate
(``recipes.validate``), diff configs (``recipes.compose``) or launch anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.initialize import get_gh_backup, restore_gh_from_backup
from omegaconf import DictConfig

from core import resolvers  # noqa: F401  (registers ${rlvr.*} before anything composes)

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def options(group: str) -> list[str]:
    """Names of the options of one of this project's config groups (e.g. ``recipe``)."""
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


def compose(overrides: Iterable[str] = (), hydra: bool = False) -> DictConfig:
    """Compose ``conf/config.yaml`` with Hydra overrides (``recipe=dapo``, ``a.b=1``...).

    ``hydra=True`` keeps the ``hydra`` node (sweeper params, runtime choices). Raises
    ``ValueError`` naming the available options when ``recipe=``, ``scale=`` or ``sweep=`` name
    no file.
    """
    overrides = list(overrides)
    for group in ("recipe", "scale", "sweep"):
        check_choice(overrides, group)
    return compose_file(CONF_DIR, "config", overrides, hydra)


def compose_file(
    config_dir: Path, config_name: str, overrides: Iterable[str] = (), hydra: bool = False
) -> DictConfig:
    """Compose ``<config_dir>/<config_name>.yaml`` with Hydra's compose API.

    Reuses the active Hydra context when its primary config directory is ``config_dir`` (inside
    ``recipes.run`` or a test's context), else composes in a fresh one and restores the old.
    """
    gh = GlobalHydra.instance()
    if gh.is_initialized():
        paths = [e.path for e in gh.hydra.config_loader.get_search_path().get_path() if e.provider == "main"]
        if paths == [str(config_dir)]:
            return hydra_compose(
                config_name=config_name, overrides=list(overrides), return_hydra_config=hydra
            )
    backup = get_gh_backup()
    gh.clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            return hydra_compose(
                config_name=config_name, overrides=list(overrides), return_hydra_config=hydra
            )
    finally:
        restore_gh_from_backup(backup)


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
