"""``make docs``: regenerate every generated block of README.md and docs/ (``docgen.blocks``).

A Hydra app (``conf/command/docs.yaml``)::

    python -m docgen [check=true] [sections=[seed-table,ablation-*]] [root=<repository>]

``check=true`` changes nothing and exits 1 listing every stale block or figure; otherwise every
rewritten block or figure is printed as ``updated: <item>``. ``sections`` names blocks, shell-style
patterns allowed; ``root`` is the repository whose README.md and docs/ are generated (this one by
default; the results are read from ``core.results``' folder either way).
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path

from omegaconf import DictConfig

from core.cli import hydra_main
from core.results import REPO
from docgen.blocks import SECTIONS, generate


def selected(patterns: list[str]) -> list[str] | None:
    """The block names matching any of ``patterns`` (None: every block).

    >>> "ablations-overview" in selected(["ablation*"]), selected([])
    (True, None)
    """
    if not patterns:
        return None
    return [n for n in SECTIONS if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def command(cfg: DictConfig) -> int:
    """Regenerate (or check) the blocks; exit 1 in check mode when anything is stale."""
    root = Path(str(cfg.root)) if cfg.root else REPO
    stale = generate(check=bool(cfg.check), root=root, only=selected([str(s) for s in cfg.sections]))
    for s in stale:
        print(("stale: " if cfg.check else "updated: ") + s)
    if cfg.check and stale:
        print("run `make docs` to regenerate", file=sys.stderr)
        return 1
    return 0


main = hydra_main("command", "docs", command)


if __name__ == "__main__":
    main()
