"""Check 9: self-checks and corrections -- the share of responses that re-check or correct themselves.

R1-Zero's "aha moment" is responses that re-check or correct themselves growing during RL (seed
002 §3.5). From the run's held-out dumps (``validation/<step>.jsonl``; the training rollouts when
there are none) this check reports the share of responses with a self-check or a correction, and
each separately, with the share of worked responses, at the first and the last dumped step (95%
percentile-bootstrap intervals over responses) and plots them over steps. The phrasings are the
laptop corpus' (``analysis.diagnose.response_kinds``), so on other models the shares read zero: a
count, not a verdict on reflection in general.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from analysis.diagnose.registry import CHECKS, Context, check, not_logged
from analysis.diagnose.response_kinds import KINDS, response_kind, shares_by_step
from analysis.metrics import bootstrap_ci
from analysis.render import Section, Table, fmt

LABELS = {
    "check_or_fix": "self-check or correction",
    "check": "self-check",
    "fix": "correction",
    "worked": "worked",
}


def _ci(rows: list[dict], key: str) -> str:
    kinds = [response_kind(str(r.get("output", ""))) for r in rows]
    x = [float(k["check"] or k["fix"]) if key == "check_or_fix" else float(k[key]) for k in kinds]
    lo, hi = bootstrap_ci(x, n_resamples=1000)
    return f"{fmt(float(np.mean(x)))} [{fmt(lo)}, {fmt(hi)}]"


@check("self_checks", 9, "9. Self-checks and corrections over steps")
def self_checks(ctx: Context) -> Section:
    title = CHECKS.get("self_checks").title
    kind = "validation" if ctx.validation else "rollouts"
    rows = ctx.validation or ctx.rollouts
    if not rows:
        return not_logged(title, "sample dumps (validation/ or rollouts/)")
    shares = shares_by_step(rows)
    steps = sorted(shares)
    first, last = steps[0], steps[-1]
    at = {s: [r for r in rows if int(r.get("step", 0)) == s] for s in (first, last)}
    keys = ("check_or_fix", "check", "fix", "worked")
    table = Table(
        ["share of responses", f"step {first}", f"step {last}", "change"],
        [
            [LABELS[k], _ci(at[first], k), _ci(at[last], k), f"{shares[last][k] - shares[first][k]:+.3f}"]
            for k in keys
        ],
    )
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for k in ("check_or_fix", *KINDS):
        ax.plot(steps, [shares[s][k] for s in steps], "o-", ms=3, label=LABELS[k])
    ax.set(xlabel="step", ylabel="share of responses", ylim=(-0.02, 1.02), title=f"{kind} responses by kind")
    ax.legend(fontsize=7)
    a, b = shares[first]["check_or_fix"], shares[last]["check_or_fix"]
    trend = "rising" if b > a else "falling" if b < a else "flat"
    verdict = (
        f"{LABELS['check_or_fix']} share of {kind} responses {fmt(a)} (step {first}, n={shares[first]['n']}) → "
        f"{fmt(b)} (step {last}, n={shares[last]['n']}): {trend}; worked {fmt(shares[first]['worked'])} → "
        f"{fmt(shares[last]['worked'])} (the corpus' 'check … ok' / 'no … so' phrasings)"
    )
    return Section(title, "info", verdict, tables=[table], figures=[ctx.doc.save_figure(fig, "self_checks")])
