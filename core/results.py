"""Committed results: the one writer behind every number that README.md and docs/ show.

Layout (``results/`` at the repository root, committed; ``RLVR_RESULTS`` points elsewhere)::

    results/<experiment>/experiment.json     what was run: the exact command, the design it was
                                             run under (claim, primary metric, seeds, for a sweep),
                                             and provenance
    results/<experiment>/runs/<run_id>.json  one run: recipe, overrides, seed, wall and CPU seconds,
                                             summary metrics, down-sampled curves, provenance
    results/<experiment>/<name>.json         any other table an experiment reports (benchmarks)

Provenance, in every file: git commit and dirty flag, the command (argv), package versions, the
machine (cores, load average, platform) and when it was written. Files are written atomically as
JSON with sorted keys and floats rounded to 6 significant digits, so a diff between two result
files shows what changed and nothing else. One run of an experiment at a time: :func:`lock` holds
``results/<experiment>/`` (``core.locks``) and ``make results`` takes it for the whole command.

What it does not do: compute metrics or read run directories (callers pass finished records:
``analysis.results_io`` turns a run directory into one), or render documents (``make docs``).
"""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from core import locks
from core.versions import versions

REPO = Path(__file__).resolve().parents[1]
#: what experiments and ``make docs`` write inside the repository: changes there never make it dirty
OUTPUTS = ("results", "docs", "README.md")
SIG_DIGITS = 6


def results_dir() -> Path:
    """Where results live: ``$RLVR_RESULTS`` or ``<repo>/results``."""
    return Path(os.environ.get("RLVR_RESULTS") or REPO / "results")


def git_state(repo: Path = REPO) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the repository (``(None, None)`` outside a git checkout).

    Dirty means tracked files changed outside :data:`OUTPUTS`: an experiment rewrites its own
    results files while it runs, and a sweep re-renders ``README.md`` and ``docs/`` from them when it
    ends (as ``make docs`` does); those are outputs, not the code that produced them, and a second
    experiment in the same checkout is not made "dirty" by the first one's rendering.
    """

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    status = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){p}" for p in OUTPUTS)
    )
    return commit, (bool(status) if status is not None else None)


#: the processor features that decide which CPU kernels run (``core.numerics``), when present
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")


def cpu() -> dict[str, Any]:
    """The processor's vendor, model name and kernel-relevant flags (:data:`CPU_FLAGS`), from
    ``/proc/cpuinfo``; empty where that file does not exist. Two records made on different
    processors say so here, even when both ran the same pinned arithmetic."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if fields:
                break  # the first processor is enough
            continue
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {
        "vendor": fields.get("vendor_id"),
        "model": fields.get("model name"),
        "family_model_stepping": [fields.get("cpu family"), fields.get("model"), fields.get("stepping")],
        "flags": [f for f in CPU_FLAGS if f in flags],
    }


def machine() -> dict[str, Any]:
    """Cores, load average, platform and processor (:func:`cpu`) of this machine, at the time of the call."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cores": os.cpu_count(),
        "load_avg_1_5_15": load,
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu": cpu(),
    }


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed: ``argv`` joined, or this process as ``python -m <module> args``."""
    if argv is not None:
        return shlex.join(list(argv))
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return shlex.join(["python", "-m", spec.name.removesuffix(".__main__"), *sys.argv[1:]])
    return shlex.join(["python", *sys.argv])


def provenance(command: str | Sequence[str] | None = None) -> dict[str, Any]:
    """Everything that says where a result came from (see the module docstring)."""
    commit, dirty = git_state()
    cmd = command if isinstance(command, str) else command_line(command)
    return {
        "git_commit": commit,
        "git_dirty": dirty,
        "command": cmd,
        "versions": versions(),
        "machine": machine(),
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def rounded(value: Any, digits: int = SIG_DIGITS) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (NaN/inf become None).

    >>> rounded({"a": 0.123456789, "b": [1, 2.0000001, float("nan")]})
    {'a': 0.123457, 'b': [1, 2.0, None]}
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return float(f"{value:.{digits}g}") if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return rounded(value.item(), digits)
    return value


def downsample(steps: Sequence[int], values: Sequence[float], max_points: int = 50) -> dict[str, list]:
    """At most ``max_points`` (step, value) pairs, evenly spaced, always keeping the first and last.

    >>> downsample(list(range(10)), [float(i) for i in range(10)], max_points=4)
    {'step': [0, 3, 6, 9], 'value': [0.0, 3.0, 6.0, 9.0]}
    """
    if len(steps) != len(values):
        raise ValueError(f"downsample: {len(steps)} steps but {len(values)} values")
    n = len(steps)
    if n <= max_points:
        idx = list(range(n))
    else:
        idx = sorted({round(i * (n - 1) / (max_points - 1)) for i in range(max_points)})
    return {"step": [int(steps[i]) for i in idx], "value": [values[i] for i in idx]}


def lock(experiment: str) -> AbstractContextManager[Path]:
    """Hold ``results/<experiment>/`` for one run of the experiment (``with results.lock(name):``).

    A second run of the same experiment into the same results folder fails at once with
    :class:`core.locks.FolderBusy` naming the folder and the PID that holds it (see :mod:`core.locks`).
    """
    _check_name("experiment", experiment)
    fix = "point RLVR_RESULTS at another folder to record this run elsewhere"
    return locks.hold(results_dir() / experiment, "results folder", fix)


def _write(path: Path, payload: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(rounded(payload), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def _check_name(kind: str, name: str) -> None:
    if not name or "/" in name or name.startswith(".") or name != name.strip():
        raise ValueError(f"[results] {kind} name {name!r} must be a plain file name (no '/', no leading '.')")


def write_experiment(
    experiment: str, *, command: str | Sequence[str] | None = None, design: Mapping[str, Any] | None = None
) -> Path:
    """Write ``<experiment>/experiment.json``: the command, the design it ran under, provenance.

    Call it when the experiment starts (so a killed experiment still says what it was) and again
    when it ends; ``design`` holds what was declared before running (claim, metric, seeds, arms).
    """
    _check_name("experiment", experiment)
    payload = {"experiment": experiment, "design": dict(design or {}), "provenance": provenance(command)}
    return _write(results_dir() / experiment / "experiment.json", payload)


def write_run(
    experiment: str, run_id: str, record: Mapping[str, Any], *, command: str | Sequence[str] | None = None
) -> Path:
    """Write ``<experiment>/runs/<run_id>.json`` from a run record (see ``analysis.results_io``)."""
    _check_name("experiment", experiment)
    _check_name("run", run_id)
    payload = {"run_id": run_id, **record, "provenance": record.get("provenance") or provenance(command)}
    return _write(results_dir() / experiment / "runs" / f"{run_id}.json", payload)


def write_table(
    experiment: str, name: str, data: Mapping[str, Any], *, command: str | Sequence[str] | None = None
) -> Path:
    """Write ``<experiment>/<name>.json`` (a benchmark table, a summary) with provenance."""
    _check_name("experiment", experiment)
    _check_name("table", name)
    return _write(results_dir() / experiment / f"{name}.json", {**data, "provenance": provenance(command)})


def read_json(path: Path) -> dict[str, Any]:
    """One results file, with a clear error when it is missing or not JSON."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(
            f"[results] {path} does not exist; run the experiment that writes it (see its experiment.json "
            "or the docs section that cites it)"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"[results] {path} is not valid JSON ({e}); re-run the experiment") from None


def read_experiment(experiment: str) -> dict[str, Any]:
    """``experiment.json`` plus ``runs`` (run_id -> record, sorted) and ``tables`` (name -> data)."""
    root = results_dir() / experiment
    out = read_json(root / "experiment.json") if (root / "experiment.json").is_file() else {}
    out["runs"] = {p.stem: read_json(p) for p in sorted((root / "runs").glob("*.json"))}
    out["tables"] = {p.stem: read_json(p) for p in sorted(root.glob("*.json")) if p.name != "experiment.json"}
    if not out["runs"] and not out["tables"] and not out.get("experiment"):
        raise FileNotFoundError(f"[results] no results for experiment {experiment!r} under {root}")
    return out
