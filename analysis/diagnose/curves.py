"""Checks 4 and 5: the training curves -- entropy, and response length against accuracy.

Heuristics (windows are the first / last 10% of logged steps):
- entropy (check 4): collapse when last < 20% of first; no movement when |last - first| < 5% of first.
- length vs accuracy (check 5): "length rising, accuracy flat" when the mean length grows > 20% while
  accuracy moves < 0.02 (absolute); the length of correct and incorrect samples is shown apart
  (``length_by_correctness``, also used by the sweep report and the ablations).
They point at what to read; they are not proofs.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from analysis.diagnose.registry import CHECKS, Context, check, key_of, not_logged
from analysis.render import Section, Table, fmt
from core.runs import Series, is_correct, response_length

ACC_KEYS = ("^val-core/.*/acc/mean@", "^val-core/.*/reward/mean@", "critic/score/mean")


def _first_last(s: Series, frac: float = 0.1) -> tuple[float, float]:
    return float(s.window(frac, last=False).mean()), float(s.window(frac, last=True).mean())


@check("entropy", 4, "4. Entropy")
def entropy(ctx: Context) -> Section:
    title = CHECKS.get("entropy").title
    s = ctx.run.series("actor/entropy", "actor/entropy_loss")
    if s is None or len(s) < 2:
        return not_logged(title, "actor/entropy (needs >= 2 steps)")
    first, last = _first_last(s)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(s.steps, s.values)
    ax.set(xlabel="step", ylabel="entropy", title="policy entropy")
    sec = Section(title, figures=[ctx.doc.save_figure(fig, "entropy")])
    rel = (last - first) / abs(first) if first else float("nan")
    if first > 0 and last < 0.2 * first:
        sec.status, what = (
            "warn",
            "collapsed — exploration stopped (raise clip_ratio_high, lower lr, check KL)",
        )
    elif abs(rel) < 0.05:
        sec.status, what = "warn", "did not move — the policy may not be learning"
    else:
        sec.status, what = "ok", "moving without collapse"
    sec.verdict = f"entropy {fmt(first)} → {fmt(last)} ({rel:+.0%}): {what}"
    return sec


def length_by_correctness(rows: list[dict[str, Any]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"correct"/"incorrect": (steps, mean response length)} from sample dumps."""
    acc: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        c = is_correct(r)
        if c is not None:
            acc.setdefault(("correct" if c else "incorrect", int(r.get("step", 0))), []).append(
                response_length(r)
            )
    out = {}
    for label in ("correct", "incorrect"):
        steps = sorted(s for lab, s in acc if lab == label)
        if steps:
            out[label] = (np.array(steps), np.array([np.mean(acc[(label, s)]) for s in steps]))
    return out


@check("length_vs_accuracy", 5, "5. Response length vs accuracy")
def length_vs_accuracy(ctx: Context) -> Section:
    title = CHECKS.get("length_vs_accuracy").title
    length = ctx.run.series("response_length/mean")
    accuracy = ctx.run.series(*ACC_KEYS)
    split = length_by_correctness(ctx.rollouts)
    if length is None and not split:
        return not_logged(title, "response_length/mean and sample dumps")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    if length is not None:
        axes[0].plot(length.steps, length.values, label="all (logged)", color="k")
    for label, (st, val) in split.items():
        axes[0].plot(st, val, label=label, alpha=0.8)
    axes[0].set(xlabel="step", ylabel="response length", title="length")
    axes[0].legend(fontsize=8)
    if accuracy is not None:
        axes[1].plot(accuracy.steps, accuracy.values, color="tab:green")
        axes[1].set(xlabel="step", ylabel="accuracy", title=key_of(ctx, accuracy))
    else:
        axes[1].axis("off")
    sec = Section(title, figures=[ctx.doc.save_figure(fig, "length_vs_accuracy")])
    if length is None or accuracy is None or len(length) < 2 or len(accuracy) < 2:
        sec.status = "info"
        sec.verdict = "length split shown; not logged: " + (
            "response_length/mean" if length is None else "an accuracy/score curve"
        )
        return sec
    l0, l1 = _first_last(length)
    a0, a1 = _first_last(accuracy)
    grow = (l1 - l0) / l0 if l0 else float("nan")
    if grow > 0.2 and abs(a1 - a0) < 0.02:
        sec.status = "warn"
        tail = "length rising, accuracy flat — check loss aggregation and the length penalty"
    else:
        sec.status, tail = "ok", "no 'length rising, accuracy flat' pattern"
    sec.verdict = f"length {fmt(l0)} → {fmt(l1)} ({grow:+.0%}), accuracy {fmt(a0)} → {fmt(a1)}: {tail}"
    if split:
        sec.tables.append(
            Table(
                ["samples", "mean length (last 10% of dumps)"],
                [[k, float(v[1][-max(1, len(v[1]) // 10) :].mean())] for k, v in split.items()],
            )
        )
    return sec
