"""Compose the project's Hydra config (veRL's ppo_trainer tree + one group per ablation axis).

Does: locate ``conf/``, compose a config from overrides with Hydra's compose API (reusing an
active Hydra context, e.g. inside a ``@hydra.main`` command), list the available options of a
config group, and register the project's OmegaConf resolvers (on import, so every command,
engine and test that composes has them): ``${rlvr.mul:a,b}`` and ``${rlvr.div:a,b}`` write a
size as a relation to another (DAPO's generation batch is ``${rlvr.mul:${data.train_batch_size},3}``,
a recipe's mini-batch ``${rlvr.div:${data.train_batch_size},16}`` for 16 updates per rollout), so
a scale profile that shrinks the batch shrinks them with it. Resolved configs (``config.yaml``,
veRL's ``verl_config.yaml``) hold the plain numbers. Does not: validate (``recipes.validate``),
diff configs (``recipes.compose``) or launch anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.initialize import get_gh_backup, restore_gh_from_backup
from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def _expr(name: str, args: tuple[object, ...], node: Any) -> str:
    """The interpolation as written (``${rlvr.div:${data.train_batch_size},16}``) and its values."""
    written = node._value() if node is not None else None
    values = f"${{{name}:{','.join(map(str, args))}}}"
    return values if not isinstance(written, str) or written == values else f"{written} = {values}"


def _whole(name: str, args: tuple[object, ...], node: Any) -> None:
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        raise ValueError(f"{_expr(name, args, node)}: takes whole numbers")


def mul(a: int, b: int, _node_: Any = None) -> int:
    """``${rlvr.mul:a,b}`` = a * b (whole numbers).

    >>> mul(512, 3)
    1536
    """
    _whole("rlvr.mul", (a, b), _node_)
    return a * b


def div(a: int, b: int, _node_: Any = None) -> int:
    """``${rlvr.div:a,b}`` = a / b, which must be a positive whole number.

    >>> div(512, 16)
    32
    >>> div(8, 16)
    Traceback (most recent call last):
    ...
    ValueError: ${rlvr.div:8,16}: 8 is not a positive multiple of 16 (fix: a batch size that is a multiple of 16)
    """
    _whole("rlvr.div", (a, b), _node_)
    if b <= 0 or a <= 0 or a % b:
        raise ValueError(
            f"{_expr('rlvr.div', (a, b), _node_)}: {a} is not a positive multiple of {b} "
            f"(fix: a batch size that is a multiple of {b})"
        )
    return a // b


#: The project's OmegaConf resolvers (registered on import of this module).
RESOLVERS = {"rlvr.mul": mul, "rlvr.div": div}


def register_resolvers() -> None:
    """Register :data:`RESOLVERS` with OmegaConf (idempotent)."""
    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


register_resolvers()


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
