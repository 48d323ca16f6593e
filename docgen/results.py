"""The one reader of results files for the docs: a recorded experiment, or None when it is missing.

- :func:`read`: ``results/<experiment>/`` as ``core.results.read_experiment`` returns it, or None;
- :func:`table`: one named table of an experiment, or None;
- :func:`missing`: the line a section renders instead of its numbers, naming the command that
  writes them (``make results NAME=<experiment>`` unless told otherwise).

Does not write results (``core.results`` does, from the experiments' commands).
"""

from __future__ import annotations

from typing import Any

from core import results
from docgen.engine import Rendered


def read(experiment: str) -> dict[str, Any] | None:
    """The recorded experiment, or None when ``results/<experiment>/`` does not exist."""
    try:
        return results.read_experiment(experiment)
    except FileNotFoundError:
        return None


def table(experiment: str, name: str) -> dict[str, Any] | None:
    """Table ``name`` of a recorded experiment, or None when either is missing."""
    data = read(experiment)
    return None if data is None else data["tables"].get(name)


def missing(experiment: str, command: str | None = None) -> Rendered:
    """What a section renders when ``results/<experiment>/`` is not there: the command that writes it."""
    command = command or f"make results NAME={experiment}"
    return Rendered(f"*Not run yet: `{command}` writes `results/{experiment}/`.*")
