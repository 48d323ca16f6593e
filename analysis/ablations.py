"""Ablation results: each finished sweep recorded in ``results/``, then read back for the docs.

Each sweep states what it tests in its file (``rlvr.sweep`` of ``conf/sweep/<name>.yaml``, typed by
:class:`core.sweeps.SweepSpec`): axis, claim, baseline arm, primary and secondary metrics, the
predicted direction, the smallest effect of interest and an optional control sweep.

- :func:`record_sweep` (called by ``recipes.sweep`` when a sweep finishes, or by hand as
  ``python -m analysis.ablations dir=multirun/<name>-<time>``) reads every finished run of a sweep
  directory, computes each of the sweep's metrics per run (:func:`value`) and writes
  ``results/sweep-<name>/``: ``experiment.json`` (the spec as declared, the arms and seeds, the
  sweep's wall time and command) and one ``runs/<arm>-s<seed>.json`` per run (the metric values,
  the curves of the logged metrics, wall and CPU time). Runs of an earlier recording that are not
  in the directory are removed, so the folder mirrors one sweep.
- :func:`load_sweep` reads that folder back as :class:`SweepResult` (what the docs render:
  ``docgen.ablations``).

Does not run anything or compute statistics (``analysis.stats`` and ``analysis.metrics`` do).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

import rewards
from analysis.diagnose.curves import length_by_correctness
from analysis.results_io import run_record
from core import results
from core.cli import hydra_main
from core.runs import Run, find_runs, group_runs
from core.sweeps import Metric, SweepSpec, load, planned_runs


def strict_accuracy(run: Run) -> float:
    """Share of the last validation dump's responses the default (strict) verifier credits."""
    dumps = sorted((run.path / "validation").glob("*.jsonl"), key=lambda p: int(p.stem))
    if not dumps:
        return float("nan")
    rows = [json.loads(line) for line in dumps[-1].read_text().splitlines() if line.strip()]
    hits = [
        rewards.compute_score(r.get("data_source", "arithmetic"), r["output"], r["gts"])["acc"] for r in rows
    ]
    return float(np.mean(hits)) if hits else float("nan")


def value(run: Run, m: Metric) -> float:
    """One run's value of a metric (``Metric.how`` says which; nan when not logged)."""
    if m.how == "strict_acc":
        return strict_accuracy(run)
    if m.how.startswith("len_"):
        part = length_by_correctness(run.samples("rollouts")).get(m.how[4:])
        if part is None or len(part[1]) == 0:
            return float("nan")
        v = np.asarray(part[1], dtype=float)
        return float(np.nanmean(v[-max(1, len(v) // 4) :]))
    s = run.series(m.key)
    if s is None or not np.isfinite(s.values).any():
        return float("nan")
    v = s.values[np.isfinite(s.values)]
    if m.how == "tail":
        return float(v[-max(1, v.size // 4) :].mean())
    return float(v[-1] if m.how == "last" else v.mean())


def metric_id(m: Metric) -> str:
    """The key a metric's value is stored under in a run record, e.g. ``last:response_length/mean``."""
    return f"{m.how}:{m.key}" if m.key else m.how


def experiment_name(sweep: str) -> str:
    return f"sweep-{sweep}"


def _slug(arm: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", arm)


def record_sweep(
    sweep_dir: str | Path, name: str | None = None, experiment: str | None = None, command: str | None = None
) -> Path:
    """Write ``results/<experiment>/`` from the finished runs of ``sweep_dir`` (see the module doc)."""
    sweep_dir = Path(sweep_dir)
    name = name or sweep_dir.name.rsplit("-", 2)[0]
    spec = load(name)
    experiment = experiment or experiment_name(name)
    runs = [r for r in find_runs(sweep_dir) if (r.path / "summary.json").is_file()]
    if not runs:
        raise FileNotFoundError(f"[results] {sweep_dir}: no finished runs (summary.json) to record")
    arms = group_runs(runs, [spec.axis])[1]
    rec = json.loads((sweep_dir / "sweep.json").read_text()) if (sweep_dir / "sweep.json").is_file() else {}
    design = {
        "spec": OmegaConf.to_container(OmegaConf.structured(spec)),
        "planned_runs": planned_runs(name, rec.get("overrides") or ()),
        "arms": {arm: sorted(int(r.seed) for r in rs if r.seed is not None) for arm, rs in arms.items()},
        "sweep": {k: rec.get(k) for k in ("wall_minutes", "launcher", "overrides", "started", "invocations")},
        "sweep_dir": str(sweep_dir),
    }
    out = results.write_experiment(experiment, command=command, design=design)
    keys = [m.key for m in spec.metrics if m.key]
    written = set()
    for arm, rs in arms.items():
        for r in rs:
            record = run_record(r.path, curves=keys)
            record["arm"] = arm
            record["metrics"] = {metric_id(m): value(r, m) for m in spec.metrics}
            run_id = f"{_slug(arm)}-s{r.seed}"
            written.add(results.write_run(experiment, run_id, record, command=command).name)
    for stale in (out.parent / "runs").glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    return out.parent


@dataclass
class RunValues:
    """One recorded run as the report sees it."""

    arm: str
    seed: int
    values: dict[str, float]
    curves: dict[str, dict[str, list]]
    minutes: float

    def value(self, m: Metric) -> float:
        v = self.values.get(metric_id(m))
        return float("nan") if v is None else float(v)


@dataclass
class SweepResult:
    """A recorded sweep: its spec (as declared in its file now), design and runs by arm."""

    spec: SweepSpec
    design: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    arms: dict[str, list[RunValues]] = field(default_factory=dict)
    experiment: str | None = None
    #: sha256 of the base-model weights the runs started from, as they recorded it
    base_models: set[str] = field(default_factory=set)

    @property
    def runs(self) -> list[RunValues]:
        return [r for rs in self.arms.values() for r in rs]

    @property
    def source(self) -> str:
        return f"results/{self.experiment or experiment_name(self.spec.name)}"


def load_sweep(name: str, experiment: str | None = None) -> SweepResult:
    """The recorded results of sweep ``name`` (in ``results/sweep-<name>/``, or ``experiment``, e.g.
    its pilot's); a sweep never recorded has no arms."""
    spec = load(name)
    try:
        data = results.read_experiment(experiment or experiment_name(name))
    except FileNotFoundError:
        return SweepResult(spec, experiment=experiment)
    out = SweepResult(spec, data.get("design", {}), data.get("provenance", {}), experiment=experiment)
    for rec in data["runs"].values():
        rv = RunValues(
            rec["arm"], int(rec["seed"]), rec.get("metrics", {}), rec.get("curves", {}), rec["wall_s"] / 60
        )
        out.arms.setdefault(rv.arm, []).append(rv)
        sha = ((rec.get("run") or {}).get("model") or {}).get("weights_sha256")
        if sha:
            out.base_models.add(sha)
    for rs in out.arms.values():
        rs.sort(key=lambda r: r.seed)
    return out


def command(cfg: DictConfig) -> int:
    """Record one sweep directory into results/ (``dir=``); the exit code."""
    path = record_sweep(Path(str(cfg.dir)), cfg.sweep or None, cfg.experiment or None)
    print(f"wrote {path}")
    return 0


main = hydra_main("analysis", "ablations", command)


if __name__ == "__main__":
    main()
