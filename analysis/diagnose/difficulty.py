"""Check 2: difficulty -- the pass rates of the prompt groups, and the groups that give no gradient.

From the rollout dumps (groups: ``uid`` or repeated prompts, >= 2 graded samples) a histogram of
group pass rates and, over steps, the share of all-wrong and all-right groups, beside the logged
``rlvr/zero_var_group_frac`` when there is one (a dynamic filter may have dropped groups from the
dumps; the log sees them all). Verdict ``warn`` above 50% zero-variance groups: filter or re-band
the data. ``score_flat_share`` counts groups whose scores are all equal (with partial credit that is
what gives a group-normalised advantage of zero).
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from analysis.diagnose.registry import CHECKS, Context, check, not_logged
from analysis.render import Section
from core.runs import ZERO_VAR_KEYS, group_key, is_correct


def group_pass_rates(rows: list[dict[str, Any]]) -> dict[int, np.ndarray]:
    """{step: pass rate of each prompt group with >= 2 graded samples}."""
    groups: dict[tuple[int, str], list[bool]] = {}
    for r in rows:
        c = is_correct(r)
        if c is not None:
            groups.setdefault((int(r.get("step", 0)), group_key(r)), []).append(c)
    out: dict[int, list[float]] = {}
    for (step, _), vals in groups.items():
        if len(vals) >= 2:
            out.setdefault(step, []).append(float(np.mean(vals)))
    return {s: np.asarray(v) for s, v in sorted(out.items())}


def score_flat_share(rows: list[dict[str, Any]]) -> float:
    """Share of groups whose scores are all equal (std 0) -- with partial credit this differs
    from all-right/all-wrong, and it is what gives a group-normalised advantage of zero."""
    groups: dict[tuple[int, str], list[float]] = {}
    for r in rows:
        if isinstance(r.get("score"), (int, float)):
            groups.setdefault((int(r.get("step", 0)), group_key(r)), []).append(float(r["score"]))
    flat = [np.ptp(v) == 0 for v in groups.values() if len(v) >= 2]
    return float(np.mean(flat)) if flat else float("nan")


@check("difficulty", 2, "2. Difficulty: group pass rates")
def difficulty(ctx: Context) -> Section:
    title = CHECKS.get("difficulty").title
    rates = group_pass_rates(ctx.rollouts)
    zv = ctx.run.series(*ZERO_VAR_KEYS)
    if not rates and zv is None:
        return not_logged(
            title, "no rollout groups (uid or repeated prompts) and no rlvr/zero_var_group_frac"
        )
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    sec = Section(title)
    if rates:
        allr = np.concatenate(list(rates.values()))
        axes[0].hist(allr, bins=np.linspace(0, 1, 11), color="tab:blue", edgecolor="k")
        axes[0].set(xlabel="group pass rate", ylabel="groups", title=f"{allr.size} groups, all steps")
        steps = np.array(list(rates))
        wrong = np.array([np.mean(v == 0) for v in rates.values()])
        right = np.array([np.mean(v == 1) for v in rates.values()])
        axes[1].plot(steps, wrong, label="all wrong")
        axes[1].plot(steps, right, label="all right")
        zero_share, w_share, r_share = (
            np.mean((allr == 0) | (allr == 1)),
            np.mean(allr == 0),
            np.mean(allr == 1),
        )
        flat = score_flat_share(ctx.rollouts)
        verdict = (
            f"zero-variance groups {zero_share:.0%} (all wrong {w_share:.0%}, all right {r_share:.0%}) "
            f"over {allr.size} groups; equal scores (no advantage signal) in {flat:.0%}"
        )
    else:
        zero_share = float(np.nanmean(zv.values))
        verdict = f"zero-variance group share {zero_share:.0%} (rlvr/zero_var_group_frac; no group dumps)"
    if zv is not None:
        axes[1].plot(zv.steps, zv.values, "k--", label="zero-var (logged)")
        if rates:  # dumps may hold only the groups a dynamic filter kept; the log sees all
            verdict += f"; logged zero-variance share {float(np.nanmean(zv.values)):.0%}"
            zero_share = max(zero_share, float(np.nanmean(zv.values)))
    axes[1].set(xlabel="step", ylabel="share of groups", ylim=(-0.02, 1.02), title="zero-variance groups")
    axes[1].legend(fontsize=8)
    if not rates:
        axes[0].axis("off")
    sec.figures.append(ctx.doc.save_figure(fig, "difficulty"))
    sec.status = "warn" if zero_share > 0.5 else "ok"
    sec.verdict = verdict + (
        "; >50% give no gradient — filter or re-band the data" if zero_share > 0.5 else ""
    )
    return sec
