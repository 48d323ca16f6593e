"""Check 3: do the training forward and the rollout engine give the same log-probabilities?

Per sample (``rollout_log_prob`` vs ``old_log_prob`` in the dumps): their correlation and mean
absolute difference, plotted against the diagonal; from the logs, veRL 0.9.1's mismatch metrics
(``MISMATCH_KEYS``, first found wins) and the pearson r. Verdict ``warn`` when r <= 0.9 or a
difference exceeds 0.05: suspect numerics (the LM head's precision first).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from analysis.diagnose.registry import CHECKS, Context, check, key_of, not_logged
from analysis.render import Section

# Logged train/rollout mismatch metrics, first found wins (veRL 0.9.1 names).
MISMATCH_KEYS = ("training/rollout_probs_diff_mean", "rollout_corr/log_ppl_abs_diff", "rollout_corr/kl")


@check("logprob_alignment", 3, "3. Train vs rollout log-probabilities")
def logprob_alignment(ctx: Context) -> Section:
    title = CHECKS.get("logprob_alignment").title
    pairs = np.array(
        [
            [float(r["rollout_log_prob"]), float(r["old_log_prob"])]
            for r in ctx.samples
            if r.get("rollout_log_prob") is not None and r.get("old_log_prob") is not None
        ],
        dtype=np.float64,
    ).reshape(-1, 2)
    diff = ctx.run.series(MISMATCH_KEYS[0], *MISMATCH_KEYS[1:])
    logged_r = ctx.run.series("training/rollout_actor_probs_pearson_corr")
    if pairs.shape[0] < 2 and diff is None and logged_r is None:
        return not_logged(
            title, "rollout_log_prob/old_log_prob per sample, " + ", ".join(MISMATCH_KEYS) + " or a pearson r"
        )
    sec = Section(title, "ok")
    parts = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    if pairs.shape[0] >= 2:
        corr = (
            float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1])
            if np.ptp(pairs, axis=0).min() > 0
            else float("nan")
        )
        mad = float(np.mean(np.abs(pairs[:, 0] - pairs[:, 1])))
        axes[0].scatter(pairs[:, 0], pairs[:, 1], s=4, alpha=0.5)
        lo, hi = float(pairs.min()), float(pairs.max())
        axes[0].plot([lo, hi], [lo, hi], "r-", lw=1)
        axes[0].set(
            xlabel="rollout (inference) mean log-prob",
            ylabel="training mean log-prob",
            title=f"r={corr:.3f}, mean |diff|={mad:.3g}",
        )
        parts.append(
            f"per-sample mean log-prob r={corr:.3f}, mean |diff| {mad:.3g} over {pairs.shape[0]} samples"
        )
        if not corr > 0.9 or mad > 0.05:
            sec.status = "warn"
    else:
        axes[0].axis("off")
    if diff is not None or logged_r is not None:
        for s, label in ((diff, "diff"), (logged_r, "pearson r")):
            if s is not None:
                axes[1].plot(s.steps, s.values, label=label)
        axes[1].set(xlabel="step", ylabel="rollout vs training", title="logged mismatch")
        axes[1].legend(fontsize=8)
        if diff is not None:
            parts.append(f"logged mismatch ({key_of(ctx, diff)}): last {float(diff.window(0.1).mean()):.3g}")
            if float(np.nanmax(diff.values)) > 0.05:
                sec.status = "warn"
        if logged_r is not None:
            parts.append(f"logged pearson r: min {float(np.nanmin(logged_r.values)):.3f}")
            if float(np.nanmin(logged_r.values)) < 0.9:
                sec.status = "warn"
    else:
        axes[1].axis("off")
    sec.figures.append(ctx.doc.save_figure(fig, "logprob_alignment"))
    tail = (
        "; off the diagonal — suspect numerics (LM head precision first)"
        if sec.status == "warn"
        else "; on the diagonal (thresholds: r > 0.9, |diff| <= 0.05)"
    )
    sec.verdict = "; ".join(parts) + tail
    return sec
