"""Compose the project's Hydra config (veRL's ppo_trainer tree + one group per ablation axis).

Does: locate ``conf/``, compose a config from overrides with Hydra's compose API (reusing an
active Hydra context, e.g. inside a ``@hydra.main`` command), list the available options of a
config group; importing it registers the project's OmegaConf resolvers (:mod:`core.resolvers`),
so every command, engine and test that composes has them, and installs the cache of parsed config
files (:mod:`core.config_cache`: Hydra parses each file once per process). Does not: validate
(``recipes.validate``), diff configs (``recipes.compose``) or launch anything.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException, OverrideParseException
from hydra.initialize import get_gh_backup, restore_gh_from_backup
from omegaconf import DictConfig

from core import config_cache, resolvers  # noqa: F401  (registers ${rlvr.*} before anything composes)

config_cache.install()  # each config file is parsed once per process, not on every composition

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def options(group: str, config_dir: Path = CONF_DIR) -> list[str]:
    """Names of the options of one of this project's config groups (e.g. ``recipe``)."""
    return sorted(p.stem for p in (config_dir / group).glob("*.yaml"))


def compose(
    overrides: Iterable[str] = (),
    hydra: bool = False,
    may_add: Callable[[DictConfig, str], bool] | None = None,
) -> DictConfig:
    """Compose ``conf/config.yaml`` with Hydra overrides (``recipe=dapo``, ``a.b=1``...).

    ``hydra=True`` keeps the ``hydra`` node (sweeper params, runtime choices). A mistake in the
    overrides raises :class:`ComposeError` (a ``ValueError``) in one line: an unknown option of a
    group (``recipe=``, ``kl=``...) lists the available ones, an unknown key names the closest
    keys (``may_add``: see :func:`compose_checked`).
    """
    return compose_checked(CONF_DIR, "config", overrides, may_add, hydra)


@contextmanager
def context(config_dir: Path = CONF_DIR) -> Iterator[None]:
    """One Hydra context over ``config_dir`` for many compositions (~0.3 s each instead of ~1 s),
    inside any other (a command's ``@hydra.main``), restored after."""
    backup = get_gh_backup()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            yield
    finally:
        restore_gh_from_backup(backup)


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


def check_choice(overrides: list[str], group: str, config_dir: Path = CONF_DIR) -> None:
    """Raise a helpful error for ``group=<unknown option>`` before Hydra's generic one."""
    for ov in overrides:
        key, _, value = ov.partition("=")
        if key.lstrip("+~") == group and value not in ("", "null") and "," not in value:
            known = options(group, config_dir)
            if value not in known:
                hint = difflib.get_close_matches(value, known, 1)
                raise ValueError(
                    f"unknown {group} {value!r}{f' (did you mean {hint[0]}?)' if hint else ''}; "
                    f"available: {', '.join(known)} (files in {config_dir.name}/{group}/)"
                )


class ComposeError(ValueError, ConfigCompositionException):
    """Overrides that do not compose, explained in one line: the key as typed, why, and the fix."""


def dotted_keys(node: Any, prefix: str = "") -> list[str]:
    """Every key path of ``node`` (sections and leaves, interpolations left unresolved).

    >>> from omegaconf import OmegaConf
    >>> dotted_keys(OmegaConf.create({"a": {"b": 1, "c": "${a.b}"}, "d": 2}))
    ['a', 'a.b', 'a.c', 'd']
    """
    out: list[str] = []
    if isinstance(node, DictConfig):
        for key in node.keys():
            full = f"{prefix}.{key}" if prefix else str(key)
            out.append(full)
            child = node._get_node(key)
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
                out += dotted_keys(child, full)
    return out


def close_keys(key: str, keys: Iterable[str], n: int = 3) -> list[str]:
    """The known keys closest to a mistyped one (difflib: over the last parts of the keys of the
    same section first, else over the full dotted keys), only those nearly as close as the best.

    >>> close_keys("actor.clip_ratio_hgh", ["actor.clip_ratio_high", "actor.clip_ratio_low", "data.x"])
    ['actor.clip_ratio_high']
    >>> close_keys("rnu", ["run", "out", "seed"])
    ['run']
    """
    keys = [k for k in keys if not key.startswith(k + ".")]  # never the typed key's own sections
    parent = key.rpartition(".")[0]
    siblings = [k for k in keys if k.rpartition(".")[0] == parent]
    # first the keys of the same section (a typo in the last part), then anywhere
    leaf = key.rpartition(".")[2]
    scored = [(difflib.SequenceMatcher(None, leaf, k.rpartition(".")[2]).ratio(), k) for k in siblings]
    if not any(score >= 0.6 for score, _ in scored):
        scored = [(difflib.SequenceMatcher(None, key, k).ratio(), k) for k in keys]
        scored = [(score, k) for score, k in scored if score >= 0.75]
    scored.sort(key=lambda sk: -sk[0])
    best = scored[0][0] if scored else 1.0
    # only the nearly best: clip_ratio_hgh -> clip_ratio_high, not also clip_ratio_c
    return [k for score, k in scored[:n] if score >= max(best - 0.05, 0.6)]


def _override_of(overrides: list[str], key: str) -> str | None:
    return next((o for o in overrides if o.split("=", 1)[0].lstrip("+~") == key), None)


def _hydra_error_key(message: str) -> str | None:
    """The key a Hydra composition error is about (``Could not override 'k'`` and its kin)."""
    m = re.search(
        r"Could not (?:override|append to config\. An item is already at|delete from config\.)\s*'([^']+)'",
        message,
    )
    if m:
        return m.group(1)
    m = re.search(r"full_key: (\S+)", message)
    return m.group(1) if m else None


def _explain_unknown(
    key: str, override: str, base: DictConfig | None, may_add: Callable[[DictConfig, str], bool] | None
) -> str:
    value = override.split("=", 1)[1] if "=" in override else ""
    keys = dotted_keys(base) if base is not None else []
    hits = close_keys(key, keys)
    msg = f"[{key}] unknown key (you typed {override})"
    if hits:
        msg += f"; did you mean {' or '.join(hits)}? fix: {hits[0]}={value}"
    else:
        parent = key.rpartition(".")[0]
        while parent and parent not in keys:
            parent = parent.rpartition(".")[0]
        near = [k.rpartition(".")[2] for k in keys if k.rpartition(".")[0] == parent]
        where = f"{parent}" if parent else "the top level"
        msg += f"; {where} has: {', '.join(near[:25])}{' ...' if len(near) > 25 else ''}"
    if not hits and base is not None and may_add is not None and may_add(base, key):
        msg += (
            f" (or +{key}={value} to add a key: {key.rpartition('.')[0] or 'the top level'} takes extra keys)"
        )
    return msg


def compose_checked(
    config_dir: Path,
    config_name: str,
    overrides: Iterable[str] = (),
    may_add: Callable[[DictConfig, str], bool] | None = None,
    hydra: bool = False,
) -> DictConfig:
    """:func:`compose_file`, with every mistake in ``overrides`` raised as one :class:`ComposeError`
    line: an unknown key names the key as typed and the closest keys of the config composed
    without it (did-you-mean); ``+key`` is suggested only where ``may_add(cfg, key)`` says the
    section takes extra keys. An unknown option of a group lists the options."""
    overrides = list(overrides)
    try:
        for group in {o.split("=", 1)[0].lstrip("+~") for o in overrides if "=" in o}:
            if "." not in group and (config_dir / group).is_dir():
                check_choice(overrides, group, config_dir)
        return compose_file(config_dir, config_name, overrides, hydra)
    except ValueError as e:
        raise ComposeError(str(e)) from None
    except OverrideParseException as e:
        first = str(e).splitlines()[0]
        raise ComposeError(
            f"cannot parse the overrides ({first}); fix: write key=value, quoting a value with spaces, "
            "brackets or commas: key='[a,b]'"
        ) from None
    except ConfigCompositionException as e:
        message = str(e)
        key = _hydra_error_key(message)
        override = _override_of(overrides, key) if key else None
        if override is None:
            raise ComposeError(" ".join(message.split())) from None
        if override.startswith("+") and not override.startswith("++"):
            raise ComposeError(
                f"[{key}] already exists (you typed {override}); fix: {override.lstrip('+')}"
            ) from None
        if override.startswith("~"):
            raise ComposeError(f"[{key}] does not exist, nothing to delete (you typed {override})") from None
        rest = [o for o in overrides if o != override]
        try:
            base = compose_file(config_dir, config_name, rest)
        except Exception:  # noqa: BLE001 - another mistake: the suggestions come from the defaults
            try:
                base = compose_file(
                    config_dir, config_name, [o for o in rest if "=" in o and "." not in o.split("=")[0]]
                )
            except Exception:  # noqa: BLE001
                base = None
        raise ComposeError(_explain_unknown(key, override, base, may_add)) from None
