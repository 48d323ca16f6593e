"""Generated blocks of docs/reward_models.md, part 2: over-optimisation and on-policy distillation.

- ``overopt``: per arm (RL on the PRM, on the ORM, on the verifier) and seed, the held-out gold
  accuracy at the start, at its peak and at the end, the proxy reward's start and end, and the
  verdict of the divergence check (``analysis.diagnose.reward_model``); per arm over seeds, the change of gold
  and of the proxy with 95% t-intervals, how many runs rose, peaked and fell, and the paired gold
  difference to RL on the verifier; one figure of proxy vs gold per step (every seed thin, their
  mean thick). From ``results/overopt/runs/``.
- ``opd``: per arm (on-policy distillation, outcome-reward RL, SFT on teacher samples) the student's
  held-out accuracy along the run (mean over seeds with a Student-t 95% interval at the end), the
  comparisons the experiment declared (``design.comparisons``) paired by seed -- per-seed
  differences at the end and over the whole curve, a paired 95% t-interval, the verdict on the
  claimed direction and the seeds a paired t-test needs for 80% power at ``design.smallest_effect``
  (``analysis.stats.verdict``, ``analysis.metrics.seeds_needed``) -- the teacher's accuracy
  and a figure. From ``results/opd/``.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.metrics import seeds_needed, t_ci
from analysis.render import Table
from analysis.stats import verdict
from docgen.engine import DocFigure, Rendered, source_line
from docgen.results import missing, read
from docgen.reward_models import claim_line, f3

ARM_LABEL = {
    "prm": "RL on the PRM",
    "orm": "RL on the ORM",
    "verifier": "RL on the verifier",
    "opd": "on-policy distillation",
    "rl": "outcome-reward RL",
    "sft": "SFT on teacher samples",
}
COLORS = {"prm": "C3", "orm": "C1", "verifier": "C0", "opd": "C2", "rl": "C0", "sft": "C4"}


def by_arm(runs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in runs.values():
        out.setdefault(rec["label"], []).append(rec)
    return {k: sorted(v, key=lambda r: int(r["seed"])) for k, v in out.items()}


def curve(rec: dict[str, Any], key: str) -> tuple[list[int], list[float]]:
    c = rec.get("curves", {}).get(key) or {"step": [], "value": []}
    return c["step"], c["value"]


def draw_overopt(data: dict[str, Any]) -> Figure:
    arms = list(data)
    fig, axes = plt.subplots(1, len(arms), figsize=(4 * len(arms), 3.4), sharey=True, squeeze=False)
    for ax, arm in zip(axes[0], arms, strict=True):
        for key, style, name in (
            ("rlvr/proxy_score", "-", "proxy (reward)"),
            ("rlvr/gold_acc", "--", "gold (rollouts)"),
            ("rlvr/val_acc", ":", "gold (held-out)"),
        ):
            series = [c for c in data[arm].get(key, []) if c["step"]]
            for c in series:
                ax.plot(c["step"], c["value"], style, color=COLORS.get(arm), alpha=0.25, lw=0.8)
            if series:
                n = min(len(c["step"]) for c in series)
                mean = np.mean([c["value"][:n] for c in series], axis=0)
                ax.plot(series[0]["step"][:n], mean, style, color=COLORS.get(arm), lw=2, label=name)
        ax.set(title=ARM_LABEL.get(arm, arm), xlabel="RL step")
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("score / accuracy")
    fig.tight_layout()
    return fig


def _peak(steps: list[int], vals: list[float]) -> tuple[float, float, int]:
    if not vals:
        return float("nan"), float("nan"), -1
    i = int(np.argmax(vals))
    return vals[0], vals[i], steps[i]


def _overopt_summary(arms: dict[str, list[dict[str, Any]]]) -> Table:
    """Per arm over seeds: held-out gold end - start and proxy last - first (95% t-intervals), how
    many runs' smoothed rollout gold (the divergence check's curve) peaked after the first step and
    ended > 0.05 below that peak (and in how many the proxy rose after it), and the paired (same
    seed, same start) held-out gold-at-end difference to RL on the verifier."""
    end = {a: {int(r["seed"]): curve(r, "rlvr/val_acc")[1][-1] for r in recs} for a, recs in arms.items()}
    rows = []
    for arm, recs in arms.items():
        gold = [curve(r, "rlvr/val_acc")[1] for r in recs]
        proxy = [curve(r, "rlvr/proxy_score")[1] for r in recs]
        dg = np.array([g[-1] - g[0] for g in gold])
        dp = np.array([p[-1] - p[0] for p in proxy if p])
        divs = [r["metrics"]["divergence"] for r in recs if r.get("metrics", {}).get("divergence")]
        peaked = sum(1 for d in divs if d["peak_step"] > 1 and d["gold_end"] < d["gold_peak"] - 0.05)
        rose = sum(1 for d in divs if d["proxy_end"] > d["proxy_at_peak"])
        vs = _paired_rows(end, [{"arm": arm, "base": "verifier"}], None) if arm != "verifier" else []
        rows.append(
            [
                ARM_LABEL.get(arm, arm),
                len(recs),
                _mean_ci(dg),
                _mean_ci(dp) if dp.size else "n/a (no proxy)",
                f"{peaked} of {len(recs)}, proxy rose after it in {rose}" if divs else "n/a (no proxy)",
                vs[0][2] if vs else "",
            ]
        )
    head = [
        "arm",
        "seeds",
        "held-out gold, end − start [95% t]",
        "proxy, last − first step [95% t]",
        "runs where smoothed rollout gold peaked after step 1 and fell > 0.05",
        "gold at end minus RL on the verifier (paired [95% t])",
    ]
    return Table(head, rows)


def _mean_ci(x: np.ndarray) -> str:
    lo, hi = t_ci(x)
    return f"{x.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]"


def overopt() -> Rendered:
    """Proxy vs gold per arm and seed, the divergence verdicts and the figure."""
    data = read("overopt")
    if data is None or not data["runs"]:
        return missing("overopt")
    arms = by_arm(data["runs"])
    rows, fig_data = [], {}
    for arm, recs in arms.items():
        fig_data[arm] = {
            k: [dict(zip(("step", "value"), curve(r, k), strict=True)) for r in recs]
            for k in ("rlvr/proxy_score", "rlvr/gold_acc", "rlvr/val_acc")
        }
        for r in recs:
            s, v = curve(r, "rlvr/val_acc")
            start, peak, at = _peak(s, v)
            _, p = curve(r, "rlvr/proxy_score")
            div = r.get("metrics", {}).get("divergence")
            flag = "n/a (no proxy)" if div is None else ("**flagged**" if div["flagged"] else "not flagged")
            rows.append(
                [
                    ARM_LABEL.get(arm, arm),
                    r["seed"],
                    f3(start),
                    f"{f3(peak)} (step {at})",
                    f3(v[-1] if v else None),
                    ""
                    if div is None
                    else f"{f3(div['gold_peak'])} (step {div['peak_step']}) → {f3(div['gold_end'])}",
                    "" if div is None else f"{f3(div['proxy_at_peak'])} → {f3(div['proxy_end'])}",
                    f"{f3(p[0])} → {f3(p[-1])}" if p else "=",
                    flag,
                ]
            )
    t = Table(
        [
            "arm",
            "seed",
            "held-out gold, start",
            "peak (step)",
            "end",
            "rollout gold, smoothed: peak (step) → end",
            "proxy at that peak → end",
            "proxy reward, first → last step",
            "`make diagnose` check 8",
        ],
        rows,
    )
    fig = DocFigure(
        "rm_overopt", fig_data, draw_overopt, alt="proxy reward and gold accuracy per step, per arm"
    )
    text = (
        f"{claim_line(data)}\n\n{{fig:rm_overopt}}\n\n{t.markdown()}\n\n{_overopt_summary(arms).markdown()}"
    )
    return Rendered(text, [fig], [source_line("results/overopt", data.get("provenance"))])


def draw_opd(data: dict[str, Any]) -> Figure:
    fig, ax = plt.subplots(figsize=(6.2, 3.8))
    for arm, series in data["arms"].items():
        for c in series:
            ax.plot(c["step"], c["value"], color=COLORS.get(arm), alpha=0.3, lw=0.8)
        n = min(len(c["step"]) for c in series)
        ax.plot(
            series[0]["step"][:n],
            np.mean([c["value"][:n] for c in series], axis=0),
            "o-",
            color=COLORS.get(arm),
            lw=2,
            label=ARM_LABEL.get(arm, arm),
        )
    if data.get("teacher") is not None:
        ax.axhline(data["teacher"], color="k", ls="--", lw=0.8, label="teacher")
    ax.set(
        xlabel="student step (equal optimizer updates per step)",
        ylabel="held-out accuracy",
        title="student learning curves",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _paired_rows(
    vals: dict[str, dict[int, float]], comparisons: list[dict[str, Any]], delta: float | None
) -> list[list[Any]]:
    """One row per declared comparison: per-seed differences (arm - base, same seed), their mean
    with a paired 95% t-interval, the verdict, and the seeds a paired t-test needs for 80% power."""
    rows = []
    for c in comparisons:
        a, b = str(c["arm"]), str(c["base"])
        if a not in vals or b not in vals:
            continue
        seeds = sorted(set(vals[a]) & set(vals[b]))
        d = np.array([vals[a][s] - vals[b][s] for s in seeds])
        lo, hi = t_ci(d)
        direction = int(c.get("direction", 0))
        n = seeds_needed(d, delta) if delta else None
        power = "n/a" if not delta else (f"{n}" if n is not None else "n/a (no spread)")
        rows.append(
            [
                f"{ARM_LABEL.get(a, a)} − {ARM_LABEL.get(b, b)}",
                ", ".join(f"{x:+.3f}" for x in d),
                f"{d.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]" if d.size else "n/a",
                verdict(d, direction) if direction else "descriptive",
                power,
            ]
        )
    return rows


def _opd_tables(arms: dict[str, list[dict[str, Any]]], design: dict[str, Any]) -> tuple[Table, Table]:
    """Mean learning curves per arm, and the declared paired comparisons (end, area under curve)."""
    steps = curve(next(iter(arms.values()))[0], "rlvr/val_acc")[0]
    end = {a: {int(r["seed"]): curve(r, "rlvr/val_acc")[1][-1] for r in recs} for a, recs in arms.items()}
    auc = {
        a: {int(r["seed"]): float(np.mean(curve(r, "rlvr/val_acc")[1])) for r in recs}
        for a, recs in arms.items()
    }
    rows = []
    for a, recs in arms.items():
        n = min(len(curve(r, "rlvr/val_acc")[1]) for r in recs)
        mean = np.mean([curve(r, "rlvr/val_acc")[1][:n] for r in recs], axis=0)
        lo, hi = t_ci(list(end[a].values()))
        cells = [f3(x) for x in mean] + [""] * (len(steps) - n)
        rows.append([ARM_LABEL.get(a, a), len(recs), *cells, f"[{f3(lo)}, {f3(hi)}]"])
    curves = Table(["arm", "seeds", *[f"step {s}" for s in steps], "end: 95% t-interval"], rows)
    comps = list(
        design.get("comparisons") or [{"arm": a, "base": "rl", "direction": 0} for a in arms if a != "rl"]
    )
    delta = design.get("smallest_effect")
    prows = [["end: " + r[0], *r[1:]] for r in _paired_rows(end, comps, delta)]
    prows += [
        ["area: " + r[0], *r[1:]] for r in _paired_rows(auc, [{**c, "direction": 0} for c in comps], delta)
    ]
    head = [
        "comparison (metric: arm − base)",
        "per seed",
        "mean [paired 95% t]",
        "verdict",
        "seeds for 80% power",
    ]
    return curves, Table(head, prows)


def opd() -> Rendered:
    """Held-out accuracy curves per arm, and the declared paired comparisons with their power."""
    data = read("opd")
    if data is None or not data["runs"]:
        return missing("opd")
    arms = by_arm(data["runs"])
    design = data.get("design") or {}
    teacher = data["tables"].get("teacher", {}).get("run", {}).get("summary", {}).get("end_acc")
    fig_data = {
        "arms": {
            a: [dict(zip(("step", "value"), curve(r, "rlvr/val_acc"), strict=True)) for r in recs]
            for a, recs in arms.items()
        },
        "teacher": teacher,
    }
    curves, paired = _opd_tables(arms, design)
    extra = f" The teacher's held-out accuracy: {f3(teacher)}." if teacher is not None else ""
    delta = design.get("smallest_effect")
    power = (
        f" Seeds for 80% power: how many seeds a two-sided paired t-test at α = 0.05 would need to detect a "
        f"difference of {delta} given the spread of the per-seed differences seen here."
        if delta
        else ""
    )
    fig = DocFigure("rm_opd", fig_data, draw_opd, alt="student held-out accuracy per step, per arm")
    text = (
        f"{claim_line(data)}{extra}\n\n{{fig:rm_opd}}\n\nMean held-out accuracy over seeds.\n\n"
        f"{curves.markdown()}\n\nPaired by seed (every arm of a seed starts from that seed's student): "
        "*end* is the last evaluation, *area* the mean over all evaluations (descriptive). Verdict on the "
        "declared claim only: reproduced if the interval lies on the claimed side of 0, opposite if on the "
        f"other, else inconclusive.{power}\n\n{paired.markdown()}"
    )
    return Rendered(text, [fig], [source_line("results/opd", data.get("provenance"))])
