"""The ablation pages' generated blocks: statistics and verdicts over recorded sweeps, rendered.

Reads ``results/sweep-<name>/`` (``analysis.ablations.load_sweep``) and renders, per sweep, the
claim as its file declares it, a table per metric and arm — the arm means with a Student-t 95%
interval over seeds, the difference to the baseline arm with a Welch 95% interval and, because every
arm of seed ``s`` starts from the same checkpoint, a paired-t 95% interval of the per-seed
differences — a figure of the first logged metric (mean over seeds with a 95% t band), the control
sweep's comparison, and the compute used. A claim counts as *reproduced* only if the paired interval
of its primary metric excludes zero in the claimed direction; *opposite* if it excludes zero the
other way; otherwise *inconclusive* (the interval spans zero), with the seeds a paired t-test would need for 80% power at the
smallest effect of interest (``analysis.metrics.seeds_needed``).

Blocks (listed in ``docgen.blocks``): ``ablations-overview`` and ``ablation-<sweep>`` for every
sweep file that states a claim or is compared (:func:`sweeps_with_spec`). The verdict and the
paired differences are ``analysis.stats``; the intervals ``analysis.metrics``. Does not correct for
multiple comparisons (one primary metric per claim); secondary metrics are descriptive.
"""

from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.ablations import RunValues, SweepResult, load_sweep
from analysis.metrics import paired_power, seeds_needed, t_ci, welch_diff_ci
from analysis.render import Table
from analysis.stats import paired, verdict
from core.compose import CONF_DIR
from core.sweeps import SweepSpec, load, planned_runs
from core.sweeps import params as sweep_params_of
from docgen.engine import DocFigure, Rendered, source_line
from experiments.registry import before_adamw_fix

OVERVIEW = ("dynamic_sampling", "kl_coef", "loss_norm", "format_weight")


def _f(x: float, nd: int = 3, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def _ci(lo: float, hi: float) -> str:
    return "n/a" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"


@functools.cache
def _load(name: str) -> SweepResult:
    return load_sweep(name)


def compute_line(res: SweepResult) -> str:
    """Runs finished of planned, the sweep's wall minutes and the summed run minutes."""
    wall = (res.design.get("sweep") or {}).get("wall_minutes")
    mins = sum(r.minutes for r in res.runs)
    overrides = (res.design.get("sweep") or {}).get("overrides") or ()
    planned = planned_runs(res.spec.name, overrides) if res.design else "?"
    wall_s = f"{wall:.0f} wall minutes" if wall else "wall time not recorded"
    return f"{len(res.runs)} of {planned} runs finished, {wall_s}, {mins:.0f} run-minutes"


def _rows(res: SweepResult, overview: list[str]) -> list[list[str]]:
    """The main table's rows (every metric x arm); fills the ``overview`` row from the primary metric."""
    spec, base, rows = res.spec, res.arms.get(res.spec.baseline, []), []
    for i, m in enumerate(spec.metrics):
        bv = np.array([r.value(m) for r in base])
        for label, rs in res.arms.items():
            v = np.array([r.value(m) for r in rs])
            cells = [m.label + (" (primary)" if i == 0 else ""), f"`{label}`", str(np.isfinite(v).sum())]
            cells += [_f(np.nanmean(v) if np.isfinite(v).any() else np.nan), _ci(*t_ci(v))]
            if label == spec.baseline or not base:
                rows.append(cells + ["–", "–", "–"])
                continue
            d, dlo, dhi = welch_diff_ci(bv, v)
            pd = paired(base, rs, m)
            plo, phi = t_ci(pd)
            rows.append(cells + [_f(d, 3, sign=True), _ci(dlo, dhi), _ci(plo, phi)])
            if i == 0 and spec.direction:
                direction = spec.direction_of(label)
                v_ = verdict(pd, direction) if direction else "measured, no prediction"
                n = seeds_needed(pd, spec.delta)
                overview[1] += f"{label}: {v_}; "
                overview[3] += f"{label}: {d:+.3f} {_ci(plo, phi)}; "
                if direction and v_.startswith("inconclusive") and n and n <= len(pd):
                    # the seeds run already had 80% power for the smallest effect of interest
                    overview[4] += (
                        f"{label}: {len(pd)} seeds had 80% power for ±{spec.delta:g} (a null at that size); "
                    )
                elif direction and v_ != "reproduced" and n:
                    overview[4] += f"{label}: ~{n} seeds for ±{spec.delta:g}; "
    return rows


def _direction_word(pd: np.ndarray) -> str:
    """How a paired difference reads: higher / lower when its 95% interval excludes zero, else no difference."""
    lo, hi = t_ci(pd)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "too few paired seeds to say"
    if lo > 0:
        return "higher (the paired interval excludes zero)"
    if hi < 0:
        return "lower (the paired interval excludes zero)"
    return "no measurable difference (the paired interval spans zero)"


def reading_lines(res: SweepResult, ctl: SweepResult | None) -> list[str]:
    """The tables in words, one line per metric: each arm against the baseline (and the control).

    Generated so that the prose around a block never has to restate a direction the record may not
    hold: a re-recorded sweep re-renders its reading.
    """
    spec, base = res.spec, res.arms.get(res.spec.baseline, [])
    if not base:
        return []
    out = ["**What the intervals say** (paired 95%, every arm against `" + str(spec.baseline) + "`):", ""]
    c = spec.control
    arm = res.arms.get(c.arm, []) if c else []
    for i, m in enumerate(spec.metrics):
        parts = [
            f"`{label}` {_direction_word(paired(base, rs, m))}"
            for label, rs in res.arms.items()
            if label != spec.baseline
        ]
        if ctl is not None and ctl.runs and arm:
            pd = paired(ctl.runs, arm, m)
            if np.isfinite(pd).any():
                parts.append(f"`{c.arm}` against the control: {_direction_word(pd)}")
        out.append(f"- {m.label}{' (primary)' if i == 0 else ''}: " + "; ".join(parts) + ".")
    return [*out, ""]


def control_rows(res: SweepResult, ctl: SweepResult) -> tuple[list[str], tuple[str, str] | None]:
    """The comparison of ``spec.control``'s arm with the control sweep's runs, paired by seed."""
    c = res.spec.control
    head = f"**Control** (`conf/sweep/{c.sweep}.yaml`, `make sweep SWEEP={c.sweep}`): {c.label}."
    arm = res.arms.get(c.arm, [])
    if not ctl.runs or not arm:
        return [head + " Not run: no comparison.", ""], None
    rows, primary = [], None
    for i, m in enumerate(res.spec.metrics):
        cv, av = np.array([r.value(m) for r in ctl.runs]), np.array([r.value(m) for r in arm])
        if i and not np.isfinite(cv).any():
            continue  # a metric the control sweep does not record
        d, dlo, dhi = welch_diff_ci(cv, av)
        plo, phi = t_ci(pd := paired(ctl.runs, arm, m))
        if i == 0:
            v_ = verdict(pd, res.spec.direction)
            primary = ("no difference" if v_.startswith("inconclusive") else v_, f"{d:+.3f} {_ci(plo, phi)}")
        mean = _f(np.nanmean(cv) if np.isfinite(cv).any() else np.nan)
        rows.append([m.label, f"{mean} {_ci(*t_ci(cv))}", _f(d, 3, sign=True), _ci(dlo, dhi), _ci(plo, phi)])
    header = [
        "metric",
        "control mean [95% CI]",
        f"`{c.arm}` − control",
        "Δ 95% CI (Welch)",
        "Δ paired 95% CI",
    ]
    return [f"{head} Compute: {compute_line(ctl)}.", "", Table(header, rows).markdown(), ""], primary


def _curves(rs: list[RunValues], key: str) -> tuple[list[int], list[list[float]]]:
    """Runs' curves of ``key`` on the union of steps, each interpolated inside its own range (else NaN)."""
    cs = [r.curves[key] for r in rs if key in r.curves]
    grid = sorted({s for c in cs for s in c["step"]})
    vals = []
    for c in cs:
        st, va, g = np.array(c["step"]), np.array(c["value"], dtype=float), np.array(grid)
        row = np.full(len(grid), np.nan)
        inside = (g >= st[0]) & (g <= st[-1])
        row[inside] = np.interp(g[inside], st, va)
        vals.append(row.tolist())
    return grid, vals


def _draw(data: dict) -> Figure:
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, (grid, vals) in data["arms"].items():
        v = np.array(vals, dtype=float)
        with np.errstate(all="ignore"):
            mean = np.nanmean(v, axis=0)
        lo, hi = np.array([t_ci(v[:, j]) for j in range(len(grid))]).T
        (line,) = ax.plot(
            grid, mean, marker="o" if len(grid) < 10 else None, ms=3, label=f"{label} (n={len(v)})"
        )
        if len(v) > 1:
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xlabel("RL step")
    ax.set_ylabel(data["ylabel"])
    ax.set_title(f"{data['title']}\n(mean over seeds, 95% t band)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure(res: SweepResult, ctl: SweepResult | None) -> DocFigure | None:
    """Mean curve of the first logged metric per arm (and the control's), or None without runs."""
    m = next((m for m in res.spec.metrics if m.key and m.how in ("last", "mean", "tail")), None)
    if m is None or not res.runs:
        return None
    arms = dict(res.arms)
    if ctl is not None and ctl.runs:
        arms[res.spec.control.label] = ctl.runs
    data = {
        "title": res.spec.title,
        "ylabel": m.label.split(",")[0],
        "arms": {label: _curves(rs, m.key) for label, rs in arms.items()},
    }
    return DocFigure(f"ablation-{res.spec.name}", data, _draw, alt=str(res.spec.title))


def pilot_lines(res: SweepResult) -> tuple[list[str], list[str]]:
    """The pilot that set the seed count: per arm, the paired difference on the primary metric, its
    spread and the seeds a paired t-test needs for 80% power at ``delta``; and the decision."""
    spec, pilot = res.spec, res.spec.pilot
    if pilot is None:
        return [], []
    p = load_sweep(spec.name, pilot.experiment)
    seeds = ", ".join(str(x) for x in pilot.seeds)
    head = f"**Pilot** (seeds {seeds}, not reused; `make results NAME={pilot.experiment}`)."
    base = p.arms.get(spec.baseline or "", [])
    if not p.runs or not base:
        return ["", head + " Not recorded."], []
    rows, n_conf, asks = [], len(sweep_params_of(spec.name)["rlvr.seed"]), [3]
    for label, rs in p.arms.items():
        if label == spec.baseline:
            continue
        pd = paired(base, rs, spec.metric)
        sd = float(np.std(pd, ddof=1)) if len(pd) > 1 else float("nan")
        n = seeds_needed(pd, spec.delta)
        asks.append(n or 3)
        pw = paired_power(spec.delta / sd, n_conf) if sd > 0 else float("nan")
        rows.append(
            [
                f"`{label}`",
                str(len(pd)),
                _f(float(np.mean(pd)), 3, sign=True),
                _f(sd),
                str(n) if n else "–",
                f"{pw:.2f}" if np.isfinite(pw) else "–",
            ]
        )
    header = [
        "arm",
        "seeds",
        f"Δ {spec.metric.label} vs {spec.baseline}",
        "SD of paired Δ",
        f"seeds for 80% power at ±{spec.delta:g}",
        f"power of the sweep's {n_conf} seeds at ±{spec.delta:g}",
    ]
    lines = ["", head + " " + compute_line(p) + ".", "", Table(header, rows).markdown()]
    if pilot.decision:
        lines += ["", f"**Seeds chosen from the pilot.** {pilot.decision}"]
    history = (
        f"the seed count was chosen from its earlier record (in the history of `results/{pilot.experiment}`) "
        "and was not changed after; the table shows this record's spread and the power the sweep's seeds "
        "have at it."
    )
    notes: list[str] = []  # one paragraph after the table (and the decision), never glued to a row
    if p.provenance.get("written", "") > res.provenance.get("written", "~"):
        notes.append(
            "This pilot record was written after the confirmatory runs (the same command, re-run): " + history
        )
    elif max(asks) < n_conf:  # a budget cap can lower the count the rule asks for, never raise it
        notes.append(
            f"This pilot record asks for {max(asks)} seeds by the rule, not the {n_conf} the sweep ran (the "
            "same command, re-run after the count was set): " + history
        )
    if p.base_models and res.base_models and p.base_models != res.base_models:
        notes.append(
            "The pilot's runs started from another base model than the sweep's (weights "
            f"`{', '.join(sorted(x[:12] for x in p.base_models))}` vs "
            f"`{', '.join(sorted(x[:12] for x in res.base_models))}`: {_why_other_base(p, res)}, "
            "[provenance](provenance.md#which-results-reproduce)), so its spread is the other base model's."
        )
    if notes:
        lines += ["", " ".join(notes)]
    return lines, [source_line(p.source, p.provenance)]


def _why_other_base(pilot: SweepResult, sweep: SweepResult) -> str:
    """Why a pilot and its sweep started from different base models: one was recorded before the
    optimizer fix (whose base model depended on the processor), or they ran on different machines.

    >>> from types import SimpleNamespace as R
    >>> _why_other_base(R(provenance={"written": "2027-01-01"}), R(provenance={"written": "2026-01-01"}))
    "the sweep's was recorded before the optimizer fix, `core.numerics.adamw`"
    >>> _why_other_base(R(provenance={"written": "2027-01-01"}), R(provenance={"written": "2027-02-01"}))
    'another machine'
    """
    before = [before_adamw_fix(r.provenance) for r in (pilot, sweep)]
    if before[0] != before[1]:
        which = "the pilot's" if before[0] else "the sweep's"
        return f"{which} was recorded before the optimizer fix, `core.numerics.adamw`"
    return "another machine"


def sweep_block(name: str) -> tuple[Rendered, list[str]]:
    """One sweep's block and its overview row."""
    res = _load(name)
    spec = res.spec
    ctl = _load(spec.control.sweep) if spec.control else None
    src = " (seed document 004, “建议做的四组对照”, translated)" if spec.direction else ""
    lines = [
        f"**Claim{src}.** {spec.claim}",
        "",
        f"Sweep: `conf/sweep/{name}.yaml` (`make sweep SWEEP={name}`).",
    ]
    row = [str(spec.title), "", str(len({r.seed for r in res.runs})), "", ""]
    pilot, pilot_sources = pilot_lines(res)
    lines += pilot
    if not res.runs:
        lines += ["", "**Not run.** No recorded runs of this sweep exist; nothing is claimed."]
        return Rendered("\n".join(lines), sources=pilot_sources), [str(spec.title), "not run", "–", "–", "–"]
    header = ["metric", "arm", "seeds", "mean", "95% CI (t)", f"Δ vs {spec.baseline}", "Δ 95% CI (Welch)"]
    table = Table([*header, "Δ paired 95% CI"], _rows(res, row)).markdown()
    fig = figure(res, ctl)
    lines += ["", f"**Compute.** {compute_line(res)}.", "", table, ""]
    if fig is not None:
        lines += ["{fig:" + fig.name + "}", ""]
    sources = [*pilot_sources, source_line(res.source, res.provenance)]
    if ctl is not None:
        extra, primary = control_rows(res, ctl)
        lines += extra
        if ctl.runs:
            sources.append(source_line(ctl.source, ctl.provenance))
        if primary:
            row[1] = row[1].rstrip("; ") + f" (per step); vs the compute-matched control: {primary[0]}; "
            row[3] += f"{spec.control.arm} − control: {primary[1]}; "
    lines += reading_lines(res, ctl)
    rendered = Rendered("\n".join(lines), [fig] if fig else [], sources)
    return rendered, [c.rstrip("; ") or "–" for c in row]


def overview(names: tuple[str, ...] = OVERVIEW) -> Rendered:
    """The overview table: one row per claim (verdict, seeds, paired interval, seeds needed)."""
    header = [
        "ablation",
        "verdict (primary metric)",
        "seeds",
        "Δ primary, paired 95% CI",
        "seeds needed (80% power)",
    ]
    rows, sources = [], []
    for name in names:
        rendered, row = sweep_block(name)
        rows.append(row)
        sources += [s for s in rendered.sources if s not in sources]
    return Rendered(Table(header, rows).markdown(), sources=sources)


def sweeps_with_spec() -> list[str]:
    """The sweeps that state a claim or are compared (a ``title`` in ``conf/sweep/<name>.yaml``)."""
    names = []
    for p in sorted((CONF_DIR / "sweep").glob("*.yaml")):
        spec: SweepSpec = load(p.stem)
        if spec.title:
            names.append(p.stem)
    return names


def sweep_section(name: str) -> Rendered:
    """The block ``ablation-<name>``: one sweep's block without its overview row."""
    return sweep_block(name)[0]
