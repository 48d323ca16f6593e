"""What the reward-model experiments share (``experiments.rm_study``, ``rm_labels``, ``rm_runs``, ``rm_opd``).

- :data:`CODE` and :func:`workdir`: ``<out>/<code hash>``, where this code's artefacts are cached
  (a hash of the sources that make them: a code change redoes everything after it);
- :func:`sh`: run one child command with its output in a log file, returning its CPU seconds;
- :func:`policy` and :func:`data_files`: the laptop policy checkpoint (the local engine's cold
  start) and the laptop task's parquet files, built on first use;
- :func:`hold`: hold ``results/<experiment>/`` and the experiment's run folders (``core.locks``);
- :func:`log`: one ``[rm_study]`` line on stderr.

Does not run any experiment itself.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from omegaconf import DictConfig

from core import locks, results
from core.fingerprint import source_hash

CODE = (
    "core",
    "recipes",
    "rewards",
    "data_pipelines",
    "analysis",
    "conf",
    "experiments/rm_common.py",
    "experiments/rm_labels.py",
    "experiments/rm_study.py",
)


def log(msg: str) -> None:
    print(f"[rm_study] {msg}", file=sys.stderr, flush=True)


def workdir(cfg: DictConfig) -> Path:
    """``<out>/<code hash>``: where this code's artefacts live."""
    d = Path(str(cfg.out)).expanduser() / source_hash(CODE)
    d.mkdir(parents=True, exist_ok=True)
    return d


def sh(cmd: list[str], logfile: Path) -> float:
    """Run ``cmd`` with its output in ``logfile``; returns the child's CPU seconds; raises on failure."""
    import resource  # only sh() needs it

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with logfile.open("w") as fh:
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise RuntimeError(f"[rm_study] {' '.join(cmd[:4])}... failed (exit {rc}); see {logfile}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def policy(cfg: DictConfig) -> Path:
    """The laptop policy checkpoint (the local engine's cold start, built on first use)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn  # veRL: ~10 s, only building needs it

    from recipes.compose import compose  # deferred: the study's CLI starts without the engine
    from recipes.local.coldstart import (
        ensure_model,
    )  # deferred: the engine loads only when the policy is built
    from recipes.local.data import ensure_task_files  # deferred with the engine

    c = compose(["recipe=grpo", "scale=laptop", *cfg.policy_overrides])
    ensure_task_files(c)
    return ensure_model(c, get_custom_reward_fn(c), log)


def data_files(cfg: DictConfig) -> tuple[Path, Path]:
    """The laptop task's train and held-out parquet files (written on first use)."""
    from recipes.compose import compose  # deferred: the study's CLI starts without the engine
    from recipes.local.data import ensure_task_files  # deferred with the engine

    c = compose(["recipe=grpo", "scale=laptop", *cfg.policy_overrides])
    ensure_task_files(c)
    return Path(str(c.data.train_files)), Path(str(c.data.val_files))


PY = [sys.executable, "-m"]


def hold(cfg: DictConfig, experiment: str, folders: tuple[str, ...]) -> ExitStack:
    """Hold ``results/<experiment>/`` and this code's run folders ``<work>/<folder>`` (``core.locks``)."""
    stack = ExitStack()
    try:
        stack.enter_context(results.lock(experiment))
        for f in folders:
            stack.enter_context(
                locks.hold(workdir(cfg) / f, "run folder", "give this run its own out=<folder>")
            )
    except BaseException:
        stack.close()
        raise
    return stack
