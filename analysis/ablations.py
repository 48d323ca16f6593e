"""The ablation report: ``python -m analysis.ablations`` writes ``docs/ablations.md`` from the sweeps.

Each sweep states what it tests in its file (``rlvr.sweep`` of ``conf/sweep/<name>.yaml``, typed by
:class:`core.sweeps.SweepSpec`): axis, claim, baseline arm, primary and secondary metrics, the
predicted direction, the smallest effect of interest and an optional control sweep. For each
sweep listed in ``conf/analysis/ablations.yaml`` it finds the newest ``multirun/<sweep>-*``
directory (or the directories given), reads every finished run (``summary.json`` present), groups
the runs into arms with :func:`core.runs.group_runs` on the sweep's axis, and reports per metric
the arm means with a Student-t 95% interval over seeds, the difference to the baseline arm with a
Welch 95% interval (``analysis.metrics``, the same numbers as ``analysis.report``) and, because
every arm of seed ``s`` starts from the same cold-start checkpoint, a paired-t 95% interval of the
per-seed differences. A claim counts as *reproduced* only if the paired interval of its primary
metric excludes zero in the claimed direction; *opposite* if it excludes zero the other way;
otherwise *not shown*. For a result not shown it estimates the seeds a paired t-test needs for 80%
power at the smallest effect of interest (``analysis.metrics.seeds_needed``). Compute: wall minutes
of the sweep (``sweep.json``, written by ``recipes.sweep``) and the summed minutes of its runs. A
sweep with no directory is listed as *not run*, with its design. Tables go through
``analysis.render``.

Does not run anything, and does not correct for multiple comparisons (one primary metric per claim).
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from omegaconf import DictConfig

import rewards
from analysis.checks_curves import length_by_correctness
from analysis.metrics import seeds_needed, t_ci, welch_diff_ci
from analysis.render import Table
from analysis.report import aligned
from core.cli import hydra_main
from core.compose import CONF_DIR
from core.runs import Run, find_runs, group_runs
from core.sweeps import Metric, SweepSpec, load, planned_runs


def strict_accuracy(run: Run) -> float:
    """Share of the last validation dump's responses the default (strict) verifier credits."""
    dumps = sorted((run.path / "validation").glob("*.jsonl"), key=lambda p: int(p.stem))
    if not dumps:
        return float("nan")
    rows = [json.loads(line) for line in dumps[-1].read_text().splitlines() if line.strip()]
    hits = [rewards.compute_score("arithmetic", r["output"], r["gts"])["acc"] for r in rows]
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


def _f(x: float, nd: int = 3, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def _ci(lo: float, hi: float) -> str:
    return "n/a" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"


def newest_dir(sweep: str, root: Path = Path("multirun")) -> Path | None:
    cands = sorted(p for p in root.glob(f"{sweep}-*") if p.is_dir())
    return cands[-1] if cands else None


@functools.cache
def finished_runs(path: Path | None) -> tuple[Run, ...]:
    """The finished runs under a sweep directory, read once per page (tables and figure share them)."""
    return tuple(r for r in find_runs(path) if (r.path / "summary.json").is_file()) if path else ()


def arms_of(spec: SweepSpec, runs: tuple[Run, ...]) -> dict[str, list[Run]]:
    """Runs by arm label ``<axis>=<value>`` (:func:`core.runs.group_runs` on the sweep's axis)."""
    return group_runs(list(runs), [spec.axis])[1]


def paired(base: list[Run], arm: list[Run], m: Metric) -> np.ndarray:
    """Per-seed differences arm - baseline over the seeds both arms finished."""
    b = {r.seed: value(r, m) for r in base}
    return np.array([value(r, m) - b[r.seed] for r in arm if r.seed in b])


def verdict(d: np.ndarray, direction: int) -> str:
    """Verdict on per-seed differences for a claim predicting their sign ``direction``.

    >>> verdict(np.array([0.10, 0.12, 0.08, 0.11, 0.09]), +1), verdict(np.array([0.1, -0.1, 0.05, 0, -0.02]), +1)
    ('reproduced', 'not shown (null)')
    >>> verdict(np.array([0.10, 0.12, 0.08, 0.11, 0.09]), -1)
    'opposite'
    """
    lo, hi = t_ci(d)
    if direction == 0:
        return "comparison"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "too few seeds"
    if (lo > 0 and direction > 0) or (hi < 0 and direction < 0):
        return "reproduced"
    if lo > 0 or hi < 0:
        return "opposite"
    return "not shown (null)"


def compute_line(path: Path, runs: list[Run], total: int) -> str:
    rec = json.loads((path / "sweep.json").read_text()) if (path / "sweep.json").is_file() else {}
    mins = [json.loads((r.path / "summary.json").read_text()).get("minutes", 0.0) for r in runs]
    wall = f"{rec['wall_minutes']:.0f} wall minutes" if "wall_minutes" in rec else "wall time not recorded"
    return (
        f"{len(runs)} of {total} runs finished, {wall}, {sum(mins):.0f} run-minutes "
        f"(2 runs in parallel, 1 thread each, shared 2-core machine); directory `{path}`, "
        f"report `{path}/report/`"
    )


def _metric_rows(spec: SweepSpec, arms: dict[str, list[Run]], row: list[str]) -> list[list[str]]:
    """The main table's rows (every metric x arm); fills the overview ``row`` from the primary metric."""
    base, rows = arms.get(spec.baseline, []), []
    for i, m in enumerate(spec.metrics):
        bv = np.array([value(r, m) for r in base])
        for label, rs in arms.items():
            v = np.array([value(r, m) for r in rs])
            lo, hi = t_ci(v)
            cells = [
                m.label + (" (primary)" if i == 0 else ""),
                f"`{label}`",
                str(np.isfinite(v).sum()),
                _f(np.nanmean(v) if np.isfinite(v).any() else np.nan),
                _ci(lo, hi),
            ]
            if label == spec.baseline or not base:
                cells += ["–", "–", "–"]
            else:
                d, dlo, dhi = welch_diff_ci(bv, v)
                pd = paired(base, rs, m)
                plo, phi = t_ci(pd)
                cells += [_f(d, 3, sign=True), _ci(dlo, dhi), _ci(plo, phi)]
                if i == 0 and spec.direction:
                    v_, n = verdict(pd, spec.direction), seeds_needed(pd, spec.delta)
                    row[1] += f"{label}: {v_}; "
                    row[3] += f"{label}: {d:+.3f} {_ci(plo, phi)}; "
                    if v_ != "reproduced":
                        row[4] += f"{label}: ~{n} seeds for ±{spec.delta:g}; " if n else ""
            rows.append(cells)
    return rows


def section(
    spec: SweepSpec, path: Path | None, control_dir: Path | None = None
) -> tuple[list[str], list[str]]:
    """(markdown lines of the section, one row of the overview table)."""
    src = " (seed document 004, “建议做的四组对照”, translated)" if spec.direction else ""
    out = [
        f"## {spec.title}",
        "",
        f"**Seeds' claim{src}.** {spec.claim}",
        "",
        f"Sweep: `conf/sweep/{spec.name}.yaml` (`make sweep SWEEP={spec.name}`).",
        "",
    ]
    runs = finished_runs(path)
    if not runs:
        out += ["**Not run.** No finished runs of this sweep exist; nothing is claimed.", ""]
        return out, [str(spec.title), "not run", "–", "–", "–"]
    arms = arms_of(spec, runs)
    row = [str(spec.title), "", str(len({r.seed for r in runs})), "", ""]
    out += [f"**Compute.** {compute_line(path, list(runs), planned_runs(spec.name))}.", ""]
    header = [
        "metric",
        "arm",
        "seeds",
        "mean",
        "95% CI (t)",
        f"Δ vs {spec.baseline}",
        "Δ 95% CI (Welch)",
        "Δ paired 95% CI",
    ]
    out += [Table(header, _metric_rows(spec, arms, row)).markdown(), ""]
    if not arms.get(spec.baseline):
        out += [f"Baseline arm `{spec.baseline}` has no finished runs: no differences computed.", ""]
    if spec.control:
        lines, primary = control_table(spec, arms.get(spec.control.arm, []), control_dir)
        out += lines
        if primary:
            row[1] = row[1].rstrip("; ") + f" (per step); vs the compute-matched control: {primary[0]}; "
            row[3] += f"{spec.control.arm} − control: {primary[1]}; "
    return out, [c.rstrip("; ") or "–" for c in row]


def control_table(
    spec: SweepSpec, arm: list[Run], path: Path | None
) -> tuple[list[str], tuple[str, str] | None]:
    """Rows comparing ``spec.control``'s arm of this sweep with the control sweep's runs (paired by seed).

    Also returns (verdict, "Δ [paired CI]") of that comparison on the primary metric, or None.
    """
    ctl_spec = spec.control
    ctl = list(finished_runs(path))
    head = f"**Control** (`conf/sweep/{ctl_spec.sweep}.yaml`, `make sweep SWEEP={ctl_spec.sweep}`): {ctl_spec.label}."
    if not ctl or not arm:
        return [head + " Not run: no comparison.", ""], None
    rows, primary = [], None
    for i, m in enumerate(spec.metrics):
        cv = np.array([value(r, m) for r in ctl])
        av = np.array([value(r, m) for r in arm])
        d, dlo, dhi = welch_diff_ci(cv, av)
        pd = paired(ctl, arm, m)
        plo, phi = t_ci(pd)
        if i == 0:
            v_ = verdict(pd, spec.direction)
            primary = ("no difference" if v_.startswith("not shown") else v_, f"{d:+.3f} {_ci(plo, phi)}")
        mean = _f(np.nanmean(cv) if np.isfinite(cv).any() else np.nan)
        rows.append([m.label, f"{mean} {_ci(*t_ci(cv))}", _f(d, 3, sign=True), _ci(dlo, dhi), _ci(plo, phi)])
    header = [
        "metric",
        "control mean [95% CI]",
        f"`{ctl_spec.arm}` − control",
        "Δ 95% CI (Welch)",
        "Δ paired 95% CI",
    ]
    compute = f" Compute: {compute_line(path, ctl, planned_runs(ctl_spec.sweep))}."
    return [head + compute, "", Table(header, rows).markdown(), ""], primary


def figure(spec: SweepSpec, path: Path | None, control_dir: Path | None, out: Path) -> Path | None:
    """Mean curve of the first logged metric per arm, with a 95% t band over seeds; None if no runs."""
    m = next((m for m in spec.metrics if m.key and not m.how.startswith(("len_", "strict"))), None)
    runs = finished_runs(path)
    if m is None or not runs:
        return None
    arms = arms_of(spec, runs)
    if spec.control and finished_runs(control_dir):
        arms[spec.control.label] = list(finished_runs(control_dir))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, rs in arms.items():
        grid, vals = aligned(rs, (m.key,))
        if not grid.size:
            continue
        with np.errstate(all="ignore"):
            mean = np.nanmean(vals, axis=0)
        lo, hi = np.array([t_ci(vals[:, j]) for j in range(grid.size)]).T
        (line,) = ax.plot(
            grid, mean, marker="o" if grid.size < 10 else None, ms=3, label=f"{label} (n={len(rs)})"
        )
        if len(rs) > 1:
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xlabel("RL step")
    ax.set_ylabel(m.label.split(",")[0])
    ax.set_title(f"{spec.title}\n(mean over seeds, 95% t band)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


HEAD = [
    "# Ablations at laptop scale",
    "",
    "Generated by `python -m analysis.ablations` from the sweep directories; numbers come only from "
    "runs made in this repository (local engine, ~1M-parameter Qwen2, arithmetic task, CPU). Do not edit "
    "by hand: edit the notes in `analysis/ablations_notes.md` and regenerate.",
    "",
    "Statistics: every run's value is its final logged value (or its mean over logged steps where "
    "said). Intervals are 95%: Student-t over seeds per arm; for differences, Welch (independent "
    "arms, as in `analysis.report`) and paired t over seeds (every arm of seed *s* starts from the "
    "same cold-start checkpoint, so the per-seed difference removes the checkpoint's own variance). "
    "Verdict: *reproduced* only if the paired interval of the primary metric excludes zero in the "
    "claimed direction; *opposite* if it excludes zero the other way; *not shown* otherwise. "
    "No correction for multiple comparisons; secondary metrics are descriptive.",
    "",
]


def render(
    dirs: dict[str, Path | None],
    notes: dict[str, str],
    fig_dir: Path | None = None,
    sweeps: tuple[str, ...] = ("dynamic_sampling", "kl_coef", "loss_norm", "format_weight", "loss_variants"),
) -> str:
    """The whole page: overview table, then one section (and figure) per sweep, notes interleaved."""
    overview = [
        "ablation",
        "verdict (primary metric)",
        "seeds",
        "Δ primary, paired 95% CI",
        "seeds needed (80% power)",
    ]
    rows: list[list[str]] = []
    body: list[str] = []
    for spec in (load(name) for name in sweeps):
        ctl_dir = dirs.get(spec.control.sweep) if spec.control else None
        lines, row = section(spec, dirs.get(spec.name), ctl_dir)
        if fig_dir is not None:
            png = figure(spec, dirs.get(spec.name), ctl_dir, fig_dir / f"{spec.name}.png")
            if png is not None:
                at = next(i for i, line in enumerate(lines) if line.startswith("**Compute.**"))
                lines[at:at] = [f"![{spec.title}]({fig_dir.name}/{png.name})", ""]
        rows.append(row)
        body += lines
        if spec.name in notes:
            body += [notes[spec.name].strip(), ""]
    tail = [notes["_end"].strip(), ""] if "_end" in notes else []
    intro = [notes["_intro"].strip(), ""] if "_intro" in notes else []
    return (
        "\n".join(HEAD + intro + ["## Overview", "", Table(overview, rows).markdown(), ""] + body + tail)
        + "\n"
    )


def read_notes(path: Path) -> dict[str, str]:
    """``## <sweep>`` sections of the hand-written notes file (interpretation, scale needed)."""
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    cur = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            cur = line[3:].strip()
            out[cur] = ""
        elif cur:
            out[cur] += line + "\n"
    return out


def command(cfg: DictConfig) -> int:
    """Find the sweep directories, render the page and its figures; the exit code."""
    sweeps = tuple(str(s) for s in cfg.sweeps)
    root = Path(str(cfg.root))
    dirs: dict[str, Path | None] = {name: newest_dir(name, root) for name in sweeps}
    dirs.update({c.sweep: newest_dir(c.sweep, root) for c in (load(n).control for n in sweeps) if c})
    for d in (Path(str(x)) for x in cfg.dirs):
        name = d.name.rsplit("-", 2)[0]
        if name not in dirs:
            print(f"error: {d}: not a known sweep ({', '.join(dirs)})", file=sys.stderr)
            return 2
        dirs[name] = d
    out = Path(str(cfg.out))
    out.parent.mkdir(parents=True, exist_ok=True)
    notes_path = Path(str(cfg.notes))
    notes = read_notes(notes_path if notes_path.is_absolute() else CONF_DIR.parent / notes_path)
    out.write_text(render(dirs, notes, fig_dir=out.parent / "ablations", sweeps=sweeps))
    print(f"wrote {out}")
    return 0


main = hydra_main("analysis", "ablations", command)


if __name__ == "__main__":
    main()
