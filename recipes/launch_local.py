"""The command line of one local-engine run (``python -m recipes.run ... engine=local``), for the code
that starts runs as subprocesses (the laptop teacher's build, the experiments).

Does not: run anything, validate, or pick a scale for the caller (``scale`` defaults to ``laptop``).
"""

from __future__ import annotations

import sys
from pathlib import Path


def local_command(
    recipe: str, run_dir: str | Path, *overrides: str, scale: str = "laptop", engine: str = "local"
) -> list[str]:
    """The command line of one ``engine=local`` run of ``recipe`` at ``scale`` into ``run_dir``
    (``engine="verl"``: the same run on veRL's own trainer, which a machine without a GPU runs on its CPU).

    >>> local_command("grpo", "runs/x", "rlvr.seed=1")[3:]
    ['recipe=grpo', 'engine=local', 'scale=laptop', 'run_dir=runs/x', 'rlvr.seed=1']
    """
    return [
        sys.executable,
        "-m",
        "recipes.run",
        f"recipe={recipe}",
        f"engine={engine}",
        f"scale={scale}",
        f"run_dir={run_dir}",
        *overrides,
    ]
