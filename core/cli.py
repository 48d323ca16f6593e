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
- :class:`UsageError` and :func:`user_errors`: no traceback as the interface. A mistake a command
  expects (a key or option that does not exist, a missing path, a bad value, a missing variable)
  ends in one ``error: ...`` line with the fix and exit code 2: :class:`UsageError`,
  :class:`core.compose.ComposeError`, ``SystemExit("message")``, and a ``ValueError`` /
  ``FileNotFoundError`` / ``NotADirectoryError`` raised by the project's own code (its convention
  for user input), and a registry's ``KeyError`` that lists what exists. Anything else -- a
  ``ValueError`` from inside a library, a ``KeyError`` of a bare key -- is a bug and keeps its
  traceback. :func:`hydra_main` applies it to every command, and checks
  the command line against the command's YAML first (an unknown key with did-you-mean).
Not covered: commands outside Hydra (there are none).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

import hydra
from omegaconf import DictConfig, OmegaConf

from core.compose import CONF_DIR, ComposeError, compose_checked, compose_file

REPO = CONF_DIR.parent
#: Exit code of a refused command line (Hydra's own errors exit 1, a crash 1).
USAGE = 2


class UsageError(Exception):
    """A mistake in what the user asked for; its message names the key or path and the fix."""


def _ours(tb: TracebackType | None) -> bool:
    """Whether the innermost frame of ``tb`` is the project's own code (not a library's)."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return False
    path = Path(frames[-1].filename).resolve()
    return path.is_relative_to(REPO) and not any(p.startswith(".venv") for p in path.relative_to(REPO).parts)


def user_message(exc: BaseException) -> str | None:
    """The ``error:`` text of an exception a command expects, None for a bug (see the module doc)."""
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, str) else None
    if isinstance(exc, (UsageError, ComposeError)):
        return str(exc)
    if isinstance(exc, KeyError) and _ours(exc.__traceback__):
        # a registry's failed lookup (it lists what exists); a bare missing dict key is a bug
        said = exc.args[0] if exc.args else None
        return said if isinstance(said, str) and " " in said else None
    if isinstance(exc, (ValueError, FileNotFoundError, NotADirectoryError)) and _ours(exc.__traceback__):
        if isinstance(exc, OSError) and exc.filename:  # open() of a path that is not there
            return f"{exc.filename}: {exc.strerror} (fix: check the path you gave)"
        return str(exc)
    return None


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an expected exception into one ``error: ...`` line on stderr and exit code 2."""
    try:
        yield
    except BaseException as exc:  # noqa: BLE001 - re-raised unless it is a user's mistake
        message = user_message(exc)
        if message is None:
            raise
        first, *rest = str(message).strip().splitlines() or [""]
        first = first.removeprefix("error: ")
        print("\n".join([f"error: {first}", *rest]), file=sys.stderr, flush=True)
        raise SystemExit(USAGE) from None


def check_command_line(group: str, name: str, argv: list[str]) -> None:
    """Compose ``conf/<group>/<name>.yaml`` with ``argv`` (Hydra's flags and ``hydra.*`` left to
    Hydra): an unknown key or option raises :class:`ComposeError` with did-you-mean."""
    if any(a.startswith("-") for a in argv):
        return
    compose_checked(
        CONF_DIR / group, name, [a for a in argv if not a.lstrip("+~").startswith(("hydra.", "hydra/"))]
    )


def hydra_main(group: str, name: str, command: Callable[[DictConfig], int]) -> Callable[[], None]:
    """The command's entry point: ``@hydra.main`` over ``conf/<group>/<name>.yaml``, exiting with
    ``command(cfg)``'s code; the command line is checked first and expected errors are one line
    (:func:`user_errors`)."""

    @hydra.main(config_path=str(CONF_DIR / group), config_name=name, version_base=None)
    def main(cfg: DictConfig) -> None:
        with user_errors():
            code = command(cfg)
        sys.exit(code)

    def entry() -> None:
        with user_errors():
            check_command_line(group, name, sys.argv[1:])
        main()

    return entry


def load(group: str, command: str, overrides: Iterable[str] = ()) -> DictConfig:
    """``conf/<group>/<command>.yaml`` composed with ``overrides`` (without the ``hydra`` node)."""
    return compose_file(CONF_DIR / group, command, list(overrides))


def _quote(arg: str) -> str:
    return "'" + arg.replace("\\", "\\\\").replace("'", "\\'") + "'"


def route_extra(
    group: str, command: str, into: str = "overrides", argv: list[str] | None = None
) -> list[str]:
    """``argv`` (default ``sys.argv[1:]``) with the non-own ``key=value`` arguments gathered into
    ``into=['k=v',...]``; own keys are the top-level keys of the command's YAML and ``hydra``
    (but ``hydra.launcher.*``/``hydra.sweeper.*`` configure the runs: they are gathered too).

    >>> route_extra("analysis", "estimate", argv=["recipe=grpo", "scale=laptop", "data.x=1,2"])
    ['recipe=grpo', "overrides=['scale=laptop','data.x=1,2']"]
    """
    args = list(sys.argv[1:] if argv is None else argv)
    own = {str(k) for k in OmegaConf.load(CONF_DIR / group / f"{command}.yaml")} | {"hydra"}
    keep, extra = [], []
    for a in args:
        key = a.split("=", 1)[0].lstrip("+~")
        # the launcher and sweeper are the runs' (hydra.launcher.n_jobs=4 for a sweep), not the command's
        theirs = key.startswith(("hydra.launcher.", "hydra.sweeper."))
        if a.startswith("-") or "=" not in a or (key.split(".")[0].split("/")[0] in own and not theirs):
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
