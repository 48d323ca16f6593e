"""``python -m analysis.report runs=[a,b] | sweep=<multirun dir>``: compare arms of a sweep.

Runs are grouped into arms by the override values that differ between them (seeds excluded;
``core.runs.group_runs``). For every panel of ``analysis.panels`` it plots the per-arm mean across
seeds with a min-max seed band, on the union of logged steps (each run linearly interpolated
inside its own logged range, never extrapolated). Response length of correct vs incorrect
samples comes from the rollout dumps. The summary table gives, per metric and arm, the mean over
seeds of each run's final value (mean of the last ``final_frac`` of its steps), a Student-t 95%
interval over seeds, and against the baseline arm the difference with a Welch 95% interval and
Hedges' g. With one seed per arm intervals and effect sizes are "n/a" -- by design.
A panel no run logged is listed as "not logged". It does not test significance across many
metrics (no multiple-comparison correction): read the intervals, not stars.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from omegaconf import DictConfig

from analysis.diagnose.curves import length_by_correctness
from analysis.metrics import hedges_g, t_ci, welch_diff_ci
from analysis.panels import panels_for
from analysis.render import Document, Section, Table, fmt
from analysis.wandb_report import check_publish, publish_report
from core.cli import hydra_main
from core.runs import Run, find_runs, group_runs


def aligned(runs: list[Run], keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(steps, values[run, step]) on the union of steps; NaN outside a run's logged range."""
    series = [r.series(*keys) for r in runs]
    series = [s for s in series if s is not None]
    if not series:
        return np.zeros(0), np.zeros((0, 0))
    grid = np.unique(np.concatenate([s.steps for s in series]))
    out = np.full((len(series), grid.size), np.nan)
    for i, s in enumerate(series):
        ok = np.isfinite(s.values)
        if ok.sum() == 0:
            continue
        st, va = s.steps[ok], s.values[ok]
        inside = (grid >= st[0]) & (grid <= st[-1])
        out[i, inside] = np.interp(grid[inside], st, va)
    return grid, out


def final_values(runs: list[Run], keys: tuple[str, ...], frac: float) -> np.ndarray:
    vals = []
    for r in runs:
        s = r.series(*keys)
        w = s.window(frac) if s is not None else np.zeros(0)
        vals.append(float(w.mean()) if w.size else np.nan)
    return np.array(vals)


def _band_plot(ax: plt.Axes, grid: np.ndarray, vals: np.ndarray, label: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(vals, axis=0)
        lo, hi = np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)
    (line,) = ax.plot(grid, mean, label=f"{label} (n={vals.shape[0]})")
    if vals.shape[0] > 1:
        ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.2, lw=0)


def _curves(
    doc: Document, runs: list[Run], arms: dict[str, list[Run]], base: str, frac: float
) -> tuple[Section, Table]:
    """One figure per logged panel (mean over seeds, min-max band) and the summary table rows."""
    header = [
        "metric",
        "arm",
        "seeds",
        "final mean",
        "95% CI (t)",
        f"Δ vs {base}",
        "Δ 95% CI (Welch)",
        "Hedges g",
    ]
    summary, curves, missing = Table(header, []), Section("Curves"), []
    for name, panel in panels_for(runs):
        per_arm = {a: aligned(rs, panel.keys) for a, rs in arms.items()}
        if all(v.size == 0 for _, v in per_arm.values()):
            missing.append(panel.title)
            continue
        fig, ax = plt.subplots(figsize=(6.4, 3.4))
        for a, (grid, vals) in per_arm.items():
            if vals.size:
                _band_plot(ax, grid, vals, a)
        ax.set(xlabel="step", title=panel.title)
        ax.legend(fontsize=7)
        curves.figures.append(doc.save_figure(fig, f"curve_{name}"))
        base_vals = final_values(arms[base], panel.keys, frac)
        for a, rs in arms.items():
            v = final_values(rs, panel.keys, frac)
            lo, hi = t_ci(v)
            d, dlo, dhi = welch_diff_ci(base_vals, v) if a != base else (np.nan, np.nan, np.nan)
            g = hedges_g(base_vals, v) if a != base else np.nan
            mean = float(np.nanmean(v)) if np.isfinite(v).any() else np.nan
            row = [panel.title, a, int(np.isfinite(v).sum()), mean, f"[{fmt(lo)}, {fmt(hi)}]", d]
            summary.rows.append([*row, f"[{fmt(dlo)}, {fmt(dhi)}]", g])
    if missing:
        curves.text.append("not logged by any run: " + ", ".join(missing))
    return curves, summary


def _lengths(doc: Document, arms: dict[str, list[Run]]) -> Section:
    """Response length of correct vs incorrect rollout samples per arm (from the dumps)."""
    lengths = Section("Response length: correct vs incorrect samples")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    drawn = False
    for a, rs in arms.items():
        split = [length_by_correctness(r.samples("rollouts")) for r in rs]
        for label, style in (("correct", "-"), ("incorrect", "--")):
            parts = [s[label] for s in split if label in s]
            if parts:
                grid = np.unique(np.concatenate([p[0] for p in parts]))
                vals = np.array([np.interp(grid, p[0], p[1], left=np.nan, right=np.nan) for p in parts])
                ax.plot(grid, np.nanmean(vals, axis=0), style, label=f"{a} {label}")
                drawn = True
    if drawn:
        ax.set(
            xlabel="step", ylabel="response length", title="length of correct (—) vs incorrect (--) samples"
        )
        ax.legend(fontsize=7)
        lengths.figures.append(doc.save_figure(fig, "length_correct_incorrect"))
    else:
        plt.close(fig)
        lengths.status, lengths.verdict = "not_logged", "not logged: no graded rollout dumps"
    return lengths


def run(cfg: DictConfig) -> tuple[Document, dict[str, Path]]:
    """Build the comparison report; returns the document and the files written."""
    runs: list[Run] = []
    for d in list(cfg.runs or []):
        runs += find_runs(str(d))
    if cfg.sweep:
        runs += find_runs(str(cfg.sweep))
    if not runs:
        raise FileNotFoundError("report: no run directories found (runs=[...] or sweep=<dir>)")
    out = Path(str(cfg.out)) if cfg.out else default_out(cfg)
    axes, arms = group_runs(runs)
    labels = list(arms)
    base = str(cfg.baseline) if cfg.baseline else labels[0]
    if base not in arms:
        raise ValueError(f"report: baseline={base!r} is not an arm; arms: {labels}")
    doc = Document("Comparison report", out)
    doc.intro.append(
        f"{len(runs)} runs in {len(arms)} arms; swept axes: {', '.join(axes) or '(none found)'}; "
        f"baseline arm: {base}. Bands: min-max over seeds; lines: mean over seeds."
    )
    seeds = (
        f"{a}: {len(rs)} runs (seeds {sorted(r.seed for r in rs if r.seed is not None)})"
        for a, rs in arms.items()
    )
    doc.intro.append("Arms: " + "; ".join(seeds))
    frac = float(cfg.final_frac)
    curves, summary = _curves(doc, runs, arms, base, frac)
    final = f"final value = mean of the last {frac:.0%} of a run's logged steps"
    doc.sections += [
        Section("Summary (final values)", tables=[summary], text=[final]),
        curves,
        _lengths(doc, arms),
    ]
    files = doc.write("report")
    if str(cfg.publish).lower() == "wandb":
        files["wandb"] = Path(publish_report(runs, axes, cfg))  # type: ignore[arg-type]
    return doc, files


def default_out(cfg: DictConfig) -> Path:
    """Where a report goes without ``out=``: ``<sweep>/report``, or for ``runs=[...]``
    ``reports/runs-<hash of the run paths>`` (git-ignored; the same runs give the same folder)."""
    if cfg.sweep:
        return Path(str(cfg.sweep)) / "report"
    paths = sorted(str(Path(str(d)).resolve()) for d in cfg.runs or [])
    return Path("reports") / f"runs-{hashlib.sha256(chr(10).join(paths).encode()).hexdigest()[:8]}"


def command(cfg: DictConfig) -> int:
    """Build the report and print where it went."""
    check_publish(cfg)  # PUBLISH=wandb without its key stops before anything is written
    for key, given in [
        *(("runs", d) for d in cfg.runs or []),
        *([("sweep", cfg.sweep)] if cfg.sweep else []),
    ]:
        if not Path(str(given)).is_dir():
            raise FileNotFoundError(
                f"[{key}] {given}: no such directory; fix: give a run directory (runs/<recipe>/...) or a sweep's multirun/<name>-<time>"
            )
    if not cfg.runs and not cfg.sweep:
        raise SystemExit("analysis.report: give runs=[<dir>,...] or sweep=<multirun dir> (try --help)")
    doc, files = run(cfg)
    print(doc.intro[0])
    for name, path in files.items():
        print(f"wrote {name}: {path}")
    return 0


main = hydra_main("analysis", "report", command)


if __name__ == "__main__":
    main()
