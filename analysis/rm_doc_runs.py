"""Generated blocks of docs/reward_models.md, part 2: over-optimisation and on-policy distillation.

- ``overopt``: per arm (RL on the PRM, on the ORM, on the verifier) and seed, the held-out gold
  accuracy at the start, at its peak and at the end, the proxy reward's start and end, and the
  verdict of the divergence check (``analysis.checks_rm``); one figure of proxy vs gold per step
  (every seed thin, their mean thick). From ``results/overopt/runs/``.
- ``opd``: per arm (on-policy distillation, outcome-reward RL, SFT on teacher samples) the student's
  held-out accuracy along the run (mean over seeds with a Student-t 95% interval at the end), the
  end-of-run difference to the RL arm (Welch 95% interval), the teacher's accuracy, and a figure.
  From ``results/opd/``.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from analysis.docgen import SECTIONS, DocFigure, Rendered, source_line
from analysis.metrics import t_ci, welch_diff_ci
from analysis.render import Table
from analysis.rm_doc import claim_line, f3, missing, read

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


@SECTIONS.register("overopt")
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
            "proxy reward, first → last step",
            "`make diagnose` check 8",
        ],
        rows,
    )
    fig = DocFigure(
        "rm_overopt", fig_data, draw_overopt, alt="proxy reward and gold accuracy per step, per arm"
    )
    text = f"{claim_line(data)}\n\n{{fig:rm_overopt}}\n\n{t.markdown()}"
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


@SECTIONS.register("opd")
def opd() -> Rendered:
    """Held-out accuracy curves per arm, end-of-run intervals, differences to outcome RL, figure."""
    data = read("opd")
    if data is None or not data["runs"]:
        return missing("opd")
    arms = by_arm(data["runs"])
    teacher = data["tables"].get("teacher", {}).get("run", {}).get("summary", {}).get("end_acc")
    fig_data = {
        "arms": {
            a: [dict(zip(("step", "value"), curve(r, "rlvr/val_acc"), strict=True)) for r in recs]
            for a, recs in arms.items()
        },
        "teacher": teacher,
    }
    steps = fig_data["arms"][next(iter(arms))][0]["step"]
    rows = []
    ends = {a: [curve(r, "rlvr/val_acc")[1][-1] for r in recs] for a, recs in arms.items()}
    for a, recs in arms.items():
        mean = np.mean([curve(r, "rlvr/val_acc")[1] for r in recs], axis=0)
        lo, hi = t_ci(ends[a])
        d = welch_diff_ci(ends["rl"], ends[a]) if "rl" in ends and a != "rl" else None
        rows.append(
            [
                ARM_LABEL.get(a, a),
                len(recs),
                *[f3(x) for x in mean],
                f"[{f3(lo)}, {f3(hi)}]",
                "" if d is None else f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]",
            ]
        )
    t = Table(
        [
            "arm",
            "seeds",
            *[f"step {s}" for s in steps],
            "end: 95% t-interval",
            "end minus outcome RL (Welch 95%)",
        ],
        rows,
    )
    extra = f" The teacher's held-out accuracy: {f3(teacher)}." if teacher is not None else ""
    fig = DocFigure("rm_opd", fig_data, draw_opd, alt="student held-out accuracy per step, per arm")
    text = (
        f"{claim_line(data)}{extra}\n\n{{fig:rm_opd}}\n\nMean held-out accuracy over seeds.\n\n{t.markdown()}"
    )
    return Rendered(text, [fig], [source_line("results/opd", data.get("provenance"))])
