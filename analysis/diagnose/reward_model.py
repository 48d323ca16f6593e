"""Check 8: a learned reward that the policy over-optimises (proxy reward up, gold accuracy down).

Seed 004 §8: a reward model in the RL loop can be optimised against -- the proxy reward keeps
rising while the verifiable accuracy peaks and falls. For a run trained on a learned reward
(``reward_model=orm|prm``: the engine logs ``rlvr/proxy_score`` and the verifier's
``rlvr/gold_acc`` every step) :func:`divergence` smooths both curves (a centred rolling mean over
10% of the steps), finds the step where gold accuracy peaked and compares what each curve did
after it. Verdict ``warn`` when, after the peak, the proxy rose by more than ``rise`` while gold
fell by more than ``drop`` (defaults 0.05 each, on [0, 1] scales) -- over-optimisation. Held-out
accuracy (``rlvr/val_acc``), when logged, is shown next to them. A heuristic that points at the
curves; it proves nothing. Runs on the verifier's own reward have no proxy: "not logged".
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from analysis.diagnose.registry import CHECKS, Context, check, not_logged
from analysis.render import Section, fmt
from core.runs import Series

PROXY, GOLD, HELDOUT = "rlvr/proxy_score", "rlvr/gold_acc", "rlvr/val_acc"


def smooth(values: np.ndarray, frac: float = 0.1) -> np.ndarray:
    """Centred rolling mean over ``frac`` of the points, ``2 * (w // 2) + 1`` wide (edges: what exists).

    >>> smooth(np.array([0.0, 0.0, 3.0, 0.0, 0.0]), frac=0.6).tolist()
    [0.0, 1.0, 1.0, 1.0, 0.0]
    """
    half = max(1, int(round(values.size * frac))) // 2
    n = values.size
    return np.array([values[max(0, i - half) : min(n, i + half + 1)].mean() for i in range(n)])


@dataclass
class Divergence:
    """What the proxy and gold curves did after gold accuracy's (smoothed) peak."""

    peak_step: int
    gold_peak: float
    gold_end: float
    proxy_at_peak: float
    proxy_end: float

    @property
    def gold_drop(self) -> float:
        return self.gold_peak - self.gold_end

    @property
    def proxy_rise(self) -> float:
        return self.proxy_end - self.proxy_at_peak

    def diverged(self, rise: float = 0.05, drop: float = 0.05) -> bool:
        return self.proxy_rise > rise and self.gold_drop > drop


def divergence(proxy: Series, gold: Series, frac: float = 0.1) -> Divergence:
    """Compare the smoothed curves after the step where smoothed gold accuracy peaked.

    >>> steps = np.arange(20)
    >>> gold = Series(steps, np.r_[np.linspace(0.3, 0.6, 10), np.linspace(0.6, 0.2, 10)])
    >>> proxy = Series(steps, np.linspace(0.4, 0.95, 20))
    >>> d = divergence(proxy, gold)
    >>> d.diverged(), d.peak_step
    (True, 9)
    """
    common = np.intersect1d(proxy.steps, gold.steps)
    p = np.array([proxy.values[proxy.steps == s][-1] for s in common], dtype=float)
    g = np.array([gold.values[gold.steps == s][-1] for s in common], dtype=float)
    ps, gs = smooth(p, frac), smooth(g, frac)
    i = int(np.argmax(gs))
    return Divergence(int(common[i]), float(gs[i]), float(gs[-1]), float(ps[i]), float(ps[-1]))


@check("proxy_gold", 8, "8. Learned reward vs gold accuracy")
def proxy_gold(ctx: Context) -> Section:
    title = CHECKS.get("proxy_gold").title
    proxy, gold = ctx.run.series(PROXY), ctx.run.series(GOLD)
    if proxy is None or gold is None or len(proxy) < 5:
        return not_logged(title, f"{PROXY} and {GOLD} (a run on a learned reward: reward_model=orm|prm)")
    d = divergence(proxy, gold)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(proxy.steps, smooth(proxy.values), label="proxy (reward model)")
    ax.plot(gold.steps, smooth(gold.values), label="gold (verifier accuracy, rollouts)")
    held = ctx.run.series(HELDOUT)
    if held is not None:
        ax.plot(held.steps, held.values, "o--", label="gold (held-out)")
    ax.axvline(d.peak_step, color="grey", lw=0.8, ls=":")
    ax.set(xlabel="step", ylabel="score / accuracy", title="learned reward vs verifiable accuracy")
    ax.legend(fontsize=7)
    sec = Section(title, figures=[ctx.doc.save_figure(fig, "proxy_gold")])
    what = (
        f"gold accuracy peaked at step {d.peak_step} ({fmt(d.gold_peak)}) and ended at {fmt(d.gold_end)}, "
        f"while the proxy reward went {fmt(d.proxy_at_peak)} → {fmt(d.proxy_end)}"
    )
    if d.diverged():
        sec.status = "warn"
        sec.verdict = (
            f"{what}: the policy is over-optimising the learned reward (proxy up, gold down); train on the "
            "verifier, stop at the gold peak, or retrain the reward model on the policy's current samples"
        )
    else:
        sec.status = "ok"
        sec.verdict = f"{what} (flag: proxy +0.05 and gold -0.05 after the gold peak)"
    return sec
