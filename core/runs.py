"""Readers for run directories written by either engine (local or veRL), and run grouping.

A run directory holds ``run.json`` (manifest), ``config.yaml`` (resolved config),
``metrics.jsonl`` (veRL ``FileLogger`` lines ``{"step": N, "data": {...}}``) and sample dumps
``rollouts/<step>.jsonl`` / ``validation/<step>.jsonl`` (veRL ``_write_generations`` rows).
Everything is optional: a missing file or key yields empty data, never an exception, so a
check can say "not logged". Malformed JSON lines are skipped and counted.

Also: finding the runs of a Hydra multirun directory, and :func:`group_runs`, the one function
that groups runs into arms -- by given axes or by the override keys whose values differ between
runs (from each run's overrides: ``run.json["overrides"]`` or ``.hydra/overrides.yaml``); the
comparison report, the ablation report and results files all group with it.
It does not read W&B or TensorBoard logs.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import yaml

# Override keys that distinguish seeds or outputs, never arms.
NON_AXIS_KEYS = re.compile(r"(^|\.)(seed|run_dir|out|output_dir|hydra\..*|trainer\.experiment_name)$")
SAMPLE_KINDS = ("rollouts", "validation")
# Aliases of one quantity across engines/versions (first logged wins).
ZERO_VAR_KEYS = ("rlvr/zero_var_group_frac", "rlvr/zero_variance_group_frac")


def _read_jsonl(path: Path) -> tuple[list[dict[str, Any]], int]:
    rows: list[dict[str, Any]] = []
    bad = 0
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    bad += 1
                    continue
                if isinstance(obj, dict):
                    rows.append(obj)
                else:
                    bad += 1
    except OSError:
        pass
    return rows, bad


def _to_float(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, list) and len(v) == 1:
        return _to_float(v[0])
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


@dataclass
class Series:
    """A logged scalar against step (steps sorted, duplicates: last write wins)."""

    steps: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return int(self.steps.size)

    def window(self, frac: float, last: bool = True) -> np.ndarray:
        """Finite values of the first or last ``frac`` of the steps (at least one point)."""
        v = self.values[np.isfinite(self.values)]
        if v.size == 0:
            return v
        w = max(1, int(round(v.size * frac)))
        return v[-w:] if last else v[:w]


@dataclass
class Run:
    """One run directory, read lazily. ``name`` defaults to the directory name."""

    path: Path
    name: str = ""
    bad_lines: int = 0
    _metrics: dict[str, Series] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.name:
            self.name = self.path.name

    @cached_property
    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.path / "run.json").read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    @cached_property
    def config(self) -> dict[str, Any]:
        for p in (self.path / "config.yaml", self.path / ".hydra" / "config.yaml"):
            try:
                data = yaml.safe_load(p.read_text())
            except (OSError, yaml.YAMLError):
                continue
            if isinstance(data, dict):
                return data
        return {}

    def cfg(self, dotted: str, default: Any = None) -> Any:
        """A config value by dotted key (``rlvr.seed``), or ``default``."""
        node: Any = self.config
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    @property
    def recipe(self) -> str:
        return str(self.manifest.get("recipe") or self.cfg("rlvr.recipe", "") or "")

    @property
    def seed(self) -> int | None:
        s = self.manifest.get("seed", self.cfg("rlvr.seed"))
        try:
            return int(s)
        except (TypeError, ValueError):
            return None

    @cached_property
    def overrides(self) -> dict[str, str]:
        """Hydra overrides as {key: value} (``+``/``++``/``~`` prefixes stripped)."""
        items = self.manifest.get("overrides")
        if not isinstance(items, list):
            try:
                items = yaml.safe_load((self.path / ".hydra" / "overrides.yaml").read_text())
            except (OSError, yaml.YAMLError):
                items = None
        out: dict[str, str] = {}
        for item in items or []:
            if isinstance(item, str) and "=" in item:
                key, val = item.split("=", 1)
                out[key.lstrip("+~")] = val
        return out

    @property
    def metrics(self) -> dict[str, Series]:
        if self._metrics is None:
            self._metrics = self._load_metrics()
        return self._metrics

    def _load_metrics(self) -> dict[str, Series]:
        rows, bad = _read_jsonl(self.path / "metrics.jsonl")
        self.bad_lines += bad
        cols: dict[str, dict[int, float]] = {}
        for i, row in enumerate(rows):
            data = row.get("data", row)
            if not isinstance(data, dict):
                continue
            step = row.get("step", data.get("step", data.get("training/global_step", i)))
            try:
                step = int(step)
            except (TypeError, ValueError):
                continue
            for key, val in data.items():
                if key == "step":
                    continue
                fv = _to_float(val)
                if not math.isnan(fv) or key in cols:
                    cols.setdefault(key, {})[step] = fv
        out = {}
        for key, by_step in cols.items():
            steps = np.array(sorted(by_step), dtype=np.int64)
            out[key] = Series(steps, np.array([by_step[s] for s in steps], dtype=np.float64))
        return out

    def series(self, *keys: str) -> Series | None:
        """The first of ``keys`` that was logged with a finite value; regex keys start with ``^``."""
        for key in keys:
            if key.startswith("^"):
                pat = re.compile(key)
                for k in sorted(self.metrics):
                    if pat.search(k) and np.isfinite(self.metrics[k].values).any():
                        return self.metrics[k]
            elif key in self.metrics and np.isfinite(self.metrics[key].values).any():
                return self.metrics[key]
        return None

    def sample_steps(self, kind: str = "rollouts") -> list[int]:
        d = self.path / kind
        if not d.is_dir():
            return []
        return sorted(int(p.stem) for p in d.glob("*.jsonl") if p.stem.lstrip("-").isdigit())

    def samples(self, kind: str = "rollouts", step: int | None = None) -> list[dict[str, Any]]:
        """Rows of one dump (``step``) or of all dumps of ``kind``, each with ``step`` set."""
        steps = self.sample_steps(kind) if step is None else [step]
        rows: list[dict[str, Any]] = []
        for s in steps:
            got, bad = _read_jsonl(self.path / kind / f"{s}.jsonl")
            self.bad_lines += bad
            for r in got:
                r.setdefault("step", s)
            rows.extend(got)
        return rows


def is_run_dir(path: Path) -> bool:
    return any((path / f).exists() for f in ("run.json", "metrics.jsonl", "config.yaml"))


def find_runs(root: str | Path) -> list[Run]:
    """Run directories at or below ``root`` (a run dir, a multirun dir, or a runs/ tree)."""
    root = Path(root)
    if is_run_dir(root) and (root / "metrics.jsonl").exists():
        return [Run(root)]
    found = sorted({p.parent for name in ("run.json", "metrics.jsonl") for p in root.rglob(name)})
    found = [p for p in found if not any(q != p and q in p.parents for q in found)]
    runs = []
    for p in found:
        rel = p.relative_to(root)
        runs.append(Run(p, name=str(rel) if str(rel) != "." else p.name))
    return runs


def swept_axes(runs: list[Run]) -> list[str]:
    """Override keys whose values differ between runs (seed/output keys excluded)."""
    keys = sorted({k for r in runs for k in r.overrides if not NON_AXIS_KEYS.search(k)})
    axes = [k for k in keys if len({r.overrides.get(k) for r in runs}) > 1]
    if not axes and len({r.recipe for r in runs}) > 1:
        axes = ["recipe"]
    return axes


def arm_of(run: Run, axes: list[str]) -> str:
    """A readable arm label such as ``kl=k3_0.01,filter=dynamic`` (or the recipe name)."""
    if not axes:
        return run.recipe or "all"
    parts = []
    for k in axes:
        val = run.recipe if k == "recipe" and k not in run.overrides else run.overrides.get(k, "(default)")
        parts.append(f"{k}={val}")
    return ",".join(parts)


def group_runs(runs: list[Run], axes: list[str] | None = None) -> tuple[list[str], dict[str, list[Run]]]:
    """(axes, {arm: runs}) with arms labelled ``axis=value,...`` in first-seen order.

    ``axes`` default to :func:`swept_axes` (the override keys that differ between the runs).
    """
    axes = swept_axes(runs) if axes is None else list(axes)
    arms: dict[str, list[Run]] = {}
    for r in runs:
        arms.setdefault(arm_of(r, axes), []).append(r)
    return axes, arms


def is_correct(row: dict[str, Any]) -> bool | None:
    """Grade of a sample row: ``acc`` if present, else ``score > 0``; None if neither is usable."""
    for key in ("acc", "score"):
        if key in row and row[key] is not None:
            v = _to_float(row[key])
            if not math.isnan(v):
                return v > 0.5 if key == "acc" else v > 0
    return None


def group_key(row: dict[str, Any]) -> str:
    """Prompt group of a sample: ``uid`` (local engine) or the prompt text (veRL dumps)."""
    return str(row.get("uid", row.get("input", "")))


def response_length(row: dict[str, Any]) -> float:
    """``response_length`` when logged, else the output's character count (labelled as such)."""
    if "response_length" in row:
        return _to_float(row["response_length"])
    return float(len(str(row.get("output", ""))))
