"""``make docs``: regenerate every generated block of README.md and docs/ (``analysis.docgen``).

The command lives here because its sections come from every package: results-based sections in
``analysis.docsections`` and ``analysis.ablations_doc``, the benchmarks' in
``benchmarks.doc_sections``, and the recipe table and provenance page from ``recipes.table``
(composed from ``conf/``). A Hydra app (``conf/command/docs.yaml``):

    python -m benchmarks.docs [check=true] [sections=[seed-table]]

``check=true`` changes nothing and exits 1 listing every stale block or figure.
"""

from __future__ import annotations

import sys

from omegaconf import DictConfig

import analysis.docsections  # noqa: F401  (registers its sections)
import benchmarks.doc_sections  # noqa: F401  (registers its sections)
import benchmarks.r1_zero_doc  # noqa: F401  (registers its sections)
import benchmarks.thinking_budget_doc  # noqa: F401  (registers its section)
from analysis.docgen import generate
from core.cli import hydra_main


def command(cfg: DictConfig) -> int:
    """Regenerate (or check) the blocks; exit 1 in check mode when anything is stale."""
    stale = generate(check=bool(cfg.check), only=list(cfg.sections) or None)
    for s in stale:
        print(("stale: " if cfg.check else "updated: ") + s)
    if cfg.check and stale:
        print("run `make docs` to regenerate", file=sys.stderr)
        return 1
    return 0


main = hydra_main("command", "docs", command)


if __name__ == "__main__":
    main()
