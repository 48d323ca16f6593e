"""Selectors for parallel sampling (seed 004 §4, route two): pick one of N samples, score the pick.

A selector sees, for one prompt, N samples' grades (``correct``), extracted answers (``preds``)
and a scorer's scores, and returns the expected accuracy of its pick -- ties are split (the mean
correctness of the tied picks, as ``analysis.metrics.maj_at_k`` splits vote ties):

- ``best_of_n``: the sample with the highest score (an ORM's or a PRM's reading);
- ``weighted_vote``: the answer whose samples' scores sum highest (reward-weighted majority
  vote, Uesato et al. 2022, arXiv:2211.14275 §3); samples without an answer do not vote.

:func:`subsample` estimates a selector at N < the samples drawn: the mean over ``subsets``
random N-subsets of the prompt's samples (exact at N = all, or when N = 1: the mean over
samples). Intervals come from ``analysis.metrics.bootstrap_ci`` over prompts.
Not covered: learned selectors that read all N at once, sequential (tree) search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from core.registry import Registry

Selector = Callable[[np.ndarray, Sequence[str | None], np.ndarray], float]
SELECTORS: Registry[Selector] = Registry("selector")


@SELECTORS.register("best_of_n")
def best_of_n(correct: np.ndarray, preds: Sequence[str | None], scores: np.ndarray) -> float:
    """Accuracy of the highest-scored sample (ties split).

    >>> best_of_n(np.array([0.0, 1.0, 0.0]), [None] * 3, np.array([0.2, 0.9, 0.9]))
    0.5
    """
    top = scores == scores.max()
    return float(correct[top].mean())


@SELECTORS.register("weighted_vote")
def weighted_vote(correct: np.ndarray, preds: Sequence[str | None], scores: np.ndarray) -> float:
    """Accuracy of the answer with the largest summed score (ties split; no answer: 0).

    An answer counts as correct if most of its samples were graded correct.

    >>> weighted_vote(np.array([1.0, 0.0, 0.0]), ["7", "8", "8"], np.array([0.9, 0.3, 0.4]))
    1.0
    >>> weighted_vote(np.array([1.0, 0.0, 0.0]), ["7", "8", "8"], np.array([0.5, 0.3, 0.4]))
    0.0
    """
    totals: dict[str, float] = {}
    right: dict[str, list[float]] = {}
    for c, p, s in zip(correct, preds, scores, strict=True):
        if p is None or not str(p).strip():
            continue
        totals[p] = totals.get(p, 0.0) + float(s)
        right.setdefault(p, []).append(float(c))
    if not totals:
        return 0.0
    best = max(totals.values())
    tied = [p for p, t in totals.items() if t == best]
    return float(np.mean([np.mean(right[p]) > 0.5 for p in tied]))


def subsample(
    selector: Selector,
    correct: ArrayLike,
    preds: Sequence[str | None],
    scores: ArrayLike,
    k: int,
    subsets: int = 256,
    rng: np.random.Generator | None = None,
) -> float:
    """Expected accuracy of ``selector`` on ``k`` of the prompt's samples drawn without replacement.

    >>> subsample(best_of_n, [1, 0, 0, 0], [None] * 4, [0.9, 0.1, 0.2, 0.3], 1)
    0.25
    >>> subsample(best_of_n, [1, 0, 0, 0], [None] * 4, [0.9, 0.1, 0.2, 0.3], 4)
    1.0
    """
    c = np.asarray(correct, dtype=np.float64).ravel()
    s = np.asarray(scores, dtype=np.float64).ravel()
    n = c.size
    if not 1 <= k <= n or s.size != n or len(preds) != n:
        raise ValueError(f"subsample: k={k} must satisfy 1 <= k <= n={n}, with n scores and answers")
    if k == n:
        return selector(c, preds, s)
    if k == 1:
        return float(np.mean([selector(c[i : i + 1], [preds[i]], s[i : i + 1]) for i in range(n)]))
    rng = rng if rng is not None else np.random.default_rng(0)
    idx = np.argsort(rng.random((subsets, n)), axis=1)[:, :k]
    return float(np.mean([selector(c[row], [preds[j] for j in row], s[row]) for row in idx]))
