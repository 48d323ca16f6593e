"""Verdicts on paired differences: does a claim's predicted direction hold over seeds?

- :func:`paired`: per-seed differences arm - baseline of one metric, over the seeds both arms
  finished (every arm of seed ``s`` starts from the same checkpoint, so the pairs share a start);
- :func:`verdict`: *reproduced* when the paired Student-t 95% interval excludes zero in the
  claimed direction, *opposite* when it excludes zero the other way, otherwise *inconclusive*.

The intervals themselves and the power arithmetic are ``analysis.metrics`` (``t_ci``,
``welch_diff_ci``, ``seeds_needed``, ``paired_power``). Does not render anything (``docgen`` does)
and does not correct for multiple comparisons (one primary metric per claim).
"""

from __future__ import annotations

import numpy as np

from analysis.ablations import RunValues
from analysis.metrics import t_ci
from core.sweeps import Metric


def paired(base: list[RunValues], arm: list[RunValues], m: Metric) -> np.ndarray:
    """Per-seed differences arm - baseline over the seeds both arms finished."""
    b = {r.seed: r.value(m) for r in base}
    return np.array([r.value(m) - b[r.seed] for r in arm if r.seed in b])


def verdict(d: np.ndarray, direction: int) -> str:
    """Verdict on per-seed differences for a claim predicting their sign ``direction``.

    >>> verdict(np.array([0.10, 0.12, 0.08, 0.11, 0.09]), +1), verdict(np.array([0.1, -0.1, 0.05, 0, -0.02]), +1)
    ('reproduced', 'inconclusive (interval spans zero)')
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
    return "inconclusive (interval spans zero)"
