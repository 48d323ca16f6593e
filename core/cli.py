"""What the project's ``@hydra.main`` commands share.

Every command is a Hydra app over one YAML file (``conf/analysis/<command>.yaml``,
``conf/command/<command>.yaml``, ``conf/datagen/<command>.yaml``) whose keys are documented
where they are defined; ``--help`` prints the command's usage and every key with its default, a
misspelled key is refused by name, Hydra writes no output directory. The command's ``run(cfg)``
is importable: tests compose the same file with :func:`load` and call it.

- :func:`hydra_main`: the ``@hydra.main`` entry point of a command (``sys.exit(command(cfg))``).
- :func:`load`: the command's config from overrides (Hydra's compose API, same grammar).
- :func:`route_extra`: for commands that hand further overrides to another composition (a
  recipe's keys for ``analysis.estimate``, a sweep's or a pipeline's keys), move ``key=value``
  arguments that are not the command's own into one list key before Hydra parses them.
- :func:`require`: exit with a usage line when a mandatory key (``???``) was not given.
- :func:`call`: run a command in-process as its command line would (tests use it).
Not covered: commands outside Hydra (there are none).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from core.compose import CONF_DIR, compose_file


def hydra_main(group: str, name: str, command: Callable[[DictConfig], int]) -> Callable[[], None]:
    """The command's entry point: ``@hydra.main`` over ``conf/<group>/<name>.yaml``, exiting with
    ``command(cfg)``'s code."""

    @hydra.main(config_path=str(CONF_DIR / group), config_name=name, version_base=None)
    def main(cfg: DictConfig) -> None:
        sys.exit(command(cfg))

    return main


def load(group: str, command: str, overrides: Iterable[str] = ()) -> DictConfig:
    """``conf/<group>/<command>.yaml`` composed with ``overrides`` (without the ``hydra`` node)."""
    return compose_file(CONF_DIR / group, command, list(overrides))


def _quote(arg: str) -> str:
    return "'" + arg.replace("\\", "\\\\").replace("'", "\\'") + "'"


def route_extra(
    group: str, command: str, into: str = "overrides", argv: list[str] | None = None
) -> list[str]:
    """``argv`` (default ``sys.argv[1:]``) with the non-own ``key=value`` arguments gathered into
    ``into=['k=v',...]``; own keys are the top-level keys of the command's YAML (and ``hydra``).

    >>> route_extra("analysis", "estimate", argv=["recipe=grpo", "scale=laptop", "data.x=1,2"])
    ['recipe=grpo', "overrides=['scale=laptop','data.x=1,2']"]
    """
    args = list(sys.argv[1:] if argv is None else argv)
    own = {str(k) for k in OmegaConf.load(CONF_DIR / group / f"{command}.yaml")} | {"hydra"}
    keep, extra = [], []
    for a in args:
        key = a.split("=", 1)[0].lstrip("+~")
        if a.startswith("-") or "=" not in a or key.split(".")[0].split("/")[0] in own:
            keep.append(a)
        else:
            extra.append(a)
    if extra:
        keep.append(f"{into}=[{','.join(_quote(e) for e in extra)}]")
    return keep


def route_argv(group: str, command: str, into: str = "overrides") -> None:
    """Apply :func:`route_extra` to ``sys.argv`` (call before the ``@hydra.main`` function)."""
    sys.argv[1:] = route_extra(group, command, into)


def require(cfg: DictConfig, *keys: str, command: str) -> None:
    """Exit with a usage message if any of ``keys`` is missing (``???``) or null."""
    missing = [k for k in keys if OmegaConf.is_missing(cfg, k) or OmegaConf.select(cfg, k) is None]
    if missing:
        raise SystemExit(f"{command}: missing {', '.join(m + '=...' for m in missing)} (try --help)")


def call(
    command: Callable[[DictConfig], int], group: str, name: str, argv: list[str], route: bool = False
) -> int:
    """``command(cfg)`` with ``cfg`` composed from ``argv`` as ``python -m ...`` would compose it
    (``route=True`` for the commands that gather other keys into ``overrides``)."""
    return command(load(group, name, route_extra(group, name, argv=argv) if route else argv))


def help_header(path: Path) -> str:
    """The usage text of a command's YAML (``hydra.help.header``), for tests and docs."""
    return str(OmegaConf.load(path).hydra.help.header)
