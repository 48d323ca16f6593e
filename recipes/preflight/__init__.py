"""Pre-flight: what would fail a GPU run after it has started, caught on a laptop in seconds.

``make preflight RECIPE=<name> [ENGINE=verl] [ARGS="k=v ..."]`` (``python -m recipes.preflight``,
:mod:`recipes.preflight.__main__`) composes the recipe exactly as ``recipes.run`` does, validates
it, then runs the checks of :data:`CHECKS` in order (each timed, wall and CPU):

- ``files``, ``schema``, ``verl_dataset``, ``sources``, ``duplicates`` (:mod:`.data`): the data
  files exist and read, the columns veRL reads are well formed, veRL's ``RLHFDataset`` opens
  them, every ``data_source`` has a verifier, duplicate and train/validation overlap counts;
- ``golds`` (:mod:`.golds`): on sampled rows, the reward credits the gold and not a perturbed gold;
- ``lengths`` (:mod:`.lengths`): every prompt through the run's tokenizer and chat template
  against ``data.max_prompt_length``: how many veRL would drop or truncate, with examples;
- ``memory`` (:mod:`.memory`): tokens per step and generation time (``analysis.estimate``) and, for
  ``engine=verl``, the per-GPU memory plan against the GPU (``gpu_memory_gb=`` or detected);
- ``reward`` (:mod:`.reward`): the reward function on gold, wrong, empty and over-long responses
  returns what veRL expects, and its p99 time projected to one step.

Every finding names the file and row or the config key, and the fix; the report names the run each
check judged (:mod:`.target`: the GPU run, or the CPU run veRL's trainer makes on a machine without
a GPU). Exit code: 0 pass, 1 pass with warnings, 2 fail (:data:`recipes.preflight.report.EXIT`); the report is written as
``preflight.json`` in the run directory. ``recipes.run`` runs :func:`preflight` before it writes a
veRL ``launch.sh`` (``preflight=false`` skips it). Not covered: anything that needs a GPU, the
local engine's CPU memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from omegaconf import DictConfig

from core.cli import load
from core.registry import Registry
from recipes.preflight.context import Context
from recipes.preflight.data import (
    check_duplicates,
    check_files,
    check_schema,
    check_sources,
    check_verl_dataset,
)
from recipes.preflight.golds import check_golds
from recipes.preflight.lengths import check_lengths
from recipes.preflight.memory import check_memory
from recipes.preflight.report import EXIT, Report
from recipes.preflight.reward import check_reward
from recipes.preflight.target import judged

__all__ = ["CHECKS", "EXIT", "Report", "preflight", "settings"]

#: The checks, in the order they run; each returns counts (rows, sampled...) for its timing record.
CHECKS: Registry[Callable[[Context], dict[str, float]]] = Registry("pre-flight check")
for _name, _fn in (
    ("files", check_files),
    ("schema", check_schema),
    ("verl_dataset", check_verl_dataset),
    ("sources", check_sources),
    ("duplicates", check_duplicates),
    ("golds", check_golds),
    ("lengths", check_lengths),
    ("memory", check_memory),
    ("reward", check_reward),
):
    CHECKS.add(_name, _fn)
ORDER = ("files", "schema", "verl_dataset", "sources", "duplicates", "golds", "lengths", "memory", "reward")


def settings(overrides: Sequence[str] = ()) -> DictConfig:
    """The pre-flight settings (``conf/command/preflight.yaml``) with ``overrides``."""
    return load("command", "preflight", list(overrides))


def preflight(
    cfg: DictConfig, engine: str, opts: DictConfig | None = None, run_dir: str | Path | None = None
) -> Report:
    """Run the checks ``opts.checks`` on a composed, validated config; write ``<run_dir>/preflight.json``."""
    opts = opts if opts is not None else settings()
    report = Report(recipe=str(cfg.rlvr.recipe), engine=engine)
    ctx = Context(cfg=cfg, engine=engine, settings=opts, report=report)
    wanted = [str(c) for c in opts.checks]
    for name in wanted:
        CHECKS.get(name)  # an unknown name fails before anything runs
    for name in ORDER:
        if name in wanted:
            report.judged[name] = judged(name, cfg, engine)
            with report.timed(name) as rec:
                rec.update(CHECKS.get(name)(ctx) or {})
    report.facts["sampled_rows_per_file"] = int(opts.sample)
    if run_dir is not None:
        report.write(Path(run_dir) / "preflight.json")
    return report
