"""Turn a finished run directory into the record ``core.results.write_run`` commits.

:func:`run_record` reads ``run.json``, ``summary.json`` and ``metrics.jsonl`` (``core.runs``)
and keeps what the docs need: recipe, overrides, seed, the run's own commit and versions, wall and
CPU time, the summary metrics and down-sampled curves of a few logged keys (``CURVES`` plus any the
caller names; a key the run did not log is left out, never invented). Callers add derived metrics
(an ablation's primary metric, a re-scored accuracy) under ``metrics``.

It does not write anything (``core.results`` does) and does not aggregate runs (the docs sections do).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from core.model import model_key
from core.results import downsample
from core.runs import Run

# Curves every record keeps when the run logged them (veRL metric names).
CURVES = (
    "critic/score/mean",
    "response_length/mean",
    "actor/entropy",
    "actor/kl_loss",
    "actor/pg_clipfrac",
    "rlvr/val_acc",
    "rlvr/val_response_length",
)
SUMMARY_DROP = ("run_dir", "model", "model_key", "data_sha256")


def _val_curves(run: Run) -> list[str]:
    return sorted(k for k in run.metrics if k.startswith(("val-core/", "val-aux/")) and k.endswith("mean@1"))


def _run_model_key(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The model key the run wrote when it started (``summary["model_key"]``); for a run from before
    it did, the key of what sits at its model path now."""
    if "model_key" in summary:
        return summary["model_key"]
    return model_key(summary.get("model"))


def run_record(
    run_dir: str | Path,
    *,
    curves: Iterable[str] = (),
    max_points: int = 50,
    summary_file: str = "summary.json",
) -> dict[str, Any]:
    """The committed record of one run (see the module docstring); raises if the run did not finish."""
    run = Run(Path(run_dir))
    summ_path = run.path / summary_file
    if not summ_path.is_file():
        raise FileNotFoundError(
            f"[results] {summ_path} is missing: the run did not finish; resume it (run the same command "
            "again) before recording it"
        )
    full = json.loads(summ_path.read_text())
    summary = {k: v for k, v in full.items() if k not in SUMMARY_DROP}
    manifest = run.manifest
    # the data files the run read (a veRL run on a CPU reads the head of a split: its summary names the split)
    hashes = {**(manifest.get("data_hashes") or {}), **(full.get("data_sha256") or {})}
    record: dict[str, Any] = {
        "recipe": run.recipe,
        "engine": manifest.get("engine"),
        "scale": manifest.get("scale"),
        "seed": run.seed,
        "overrides": manifest.get("overrides", []),
        "run": {
            "git_commit": manifest.get("git_commit"),
            "git_dirty": manifest.get("git_dirty"),
            "versions": manifest.get("versions"),
            "started": manifest.get("started"),
            # the cache entries the run used: its data files' and its model's hashes
            "data_sha256": {"/".join(Path(f).parts[-2:]): h for f, h in hashes.items()},
            "model": _run_model_key(full),
        },
        "wall_s": summary.get("minutes", float("nan")) * 60,
        "cpu_s": summary.get("cpu_minutes", float("nan")) * 60,
        "summary": summary,
        "curves": {},
        "metrics": {},
    }
    for key in dict.fromkeys([*CURVES, *_val_curves(run), *curves]):
        s = run.series(key)
        if s is None:
            continue
        ok = np.isfinite(s.values)
        record["curves"][key] = downsample(s.steps[ok].tolist(), s.values[ok].tolist(), max_points)
    return record
