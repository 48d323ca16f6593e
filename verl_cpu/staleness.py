"""How stale the weights were that the rollout generated with, from the rollout's own records, per step.

The CPU rollout server stamps every response with the weight version it generated it with (the
``global_steps`` of the last weight update it loaded, ``extra_fields["global_steps"]``,
:mod:`verl_cpu.server`). veRL's fully-async client keeps the oldest and newest version of each
trajectory (``min_global_steps``/``max_global_steps``, ``verl/workers/rollout/llm_server.py:324``)
and the V1 trainer logs, per step ``s``, ``training/off_policy/trajectory_staleness_worst/max`` =
``(s - 1) - min_global_steps`` over the trajectories it trained on: how many weight updates the
oldest weights behind that step's batch lagged the policy being trained
(``verl/trainer/ppo/v1/trainer_base.py:1966``).

veRL's bound is ``trainer.v1.sampler.max_off_policy_threshold`` = T: a trajectory may span at most
T model versions counted from the step its prompt was submitted in, so (with every update
delivered) it was generated with weights at most ``T - 1`` updates old. :func:`check` holds every
step to that; a dropped update (``verl_cpu.rollout.DROP_UPDATE``) leaves the rollout a version
behind and fails it. ``python -m verl_cpu.staleness RUN_DIR`` prints the per-step table and exits 1
with one ``error:`` line on a violation. Not covered: the trainer's own per-prompt span (veRL's
replay buffer enforces it by the step a prompt was submitted in, not by the weights used).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

#: veRL's metric: per step, the largest lag of the oldest weights behind a trajectory of the batch.
WORST = "training/off_policy/trajectory_staleness_worst/max"
#: ... and the smallest lag of the newest weights behind one (a version from the future is negative).
NEWEST = "training/off_policy/trajectory_staleness/min"
#: veRL's staleness bound (model versions a trajectory may span).
THRESHOLD_KEY = "trainer.v1.sampler.max_off_policy_threshold"
#: The overrides each V1 trainer mode (``trainer.v1.trainer_mode``) runs with on a CPU: separate_async
#: with one standalone rollout replica (one logical GPU slot) fed by the ``cpu_gloo`` checkpoint engine,
#: and a weight sync after every mini-batch (grpo has one per step).
MODES: dict[str, list[str]] = {
    "sync": [],
    "colocate_async": ["trainer.v1.trainer_mode=colocate_async"],
    "separate_async": [
        "trainer.v1.trainer_mode=separate_async",
        "trainer.v1.separate_async.parameter_sync_step=1",
        "actor_rollout_ref.rollout.nnodes=1",
        "actor_rollout_ref.rollout.n_gpus_per_node=1",
    ],
}


@dataclass(frozen=True)
class Step:
    """One training step's staleness, from the rollout's version stamps."""

    step: int
    worst: int
    newest: int


def read(run_dir: Path) -> list[Step]:
    """Every training step of ``run_dir/metrics.jsonl`` (veRL's file logger) with its staleness metrics."""
    rows: dict[int, dict] = {}
    for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        rows.setdefault(int(row["step"]), {}).update(row["data"])
    return [
        Step(s, int(d[WORST]), int(d[NEWEST])) for s, d in sorted(rows.items()) if WORST in d and NEWEST in d
    ]


def check(steps: list[Step], threshold: int, want: int = 0) -> list[str]:
    """Errors: a step whose batch was generated with weights more than ``threshold - 1`` updates old,
    or with a version the trainer had not published yet; fewer than ``want`` steps recorded."""
    errs = []
    if len(steps) < want:
        errs.append(f"{len(steps)} training steps recorded staleness, {want} expected")
    for st in steps:
        if st.worst > threshold - 1:
            errs.append(
                f"step {st.step}: a trajectory was generated with weights {st.worst} updates old (version "
                f"{st.step - 1 - st.worst}); {THRESHOLD_KEY}={threshold} allows {threshold - 1}: a weight "
                "update did not reach the rollout"
            )
        if st.newest < 0:
            errs.append(
                f"step {st.step}: the rollout reported weight version {st.step - 1 - st.newest}, not yet trained"
            )
    return errs


def threshold_of(run_dir: Path) -> int:
    """``trainer.v1.sampler.max_off_policy_threshold`` of the config veRL ran (``verl_config.yaml``)."""
    from omegaconf import OmegaConf  # the command line only

    return int(OmegaConf.select(OmegaConf.load(Path(run_dir) / "verl_config.yaml"), THRESHOLD_KEY))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--threshold", type=int, default=None, help=f"default: the run's {THRESHOLD_KEY}")
    ap.add_argument("--steps", type=int, default=0, help="fail when fewer training steps were recorded")
    a = ap.parse_args(argv)
    threshold = a.threshold if a.threshold is not None else threshold_of(a.run_dir)
    steps = read(a.run_dir)
    for st in steps:
        print(
            f"step {st.step}: oldest weights {st.worst} updates behind, newest {st.newest} (allowed {threshold - 1})"
        )
    errs = check(steps, threshold, a.steps)
    if errs:
        print(f"error: [{a.run_dir}] {'; '.join(errs)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
