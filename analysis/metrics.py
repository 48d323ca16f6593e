"""Sampling metrics: unbiased pass@k, maj@k, mean@k, bootstrap intervals and effect sizes.

What it does
- ``pass_at_k(n, c, k)``: the unbiased estimator of Chen et al. 2021 (arXiv:2107.03374, eq. 1),
  ``1 - C(n-c, k) / C(n, k)``, computed in log space with ``gammaln`` so it is stable for
  any n (no overflowing binomials) and vectorised over numpy arrays (broadcasting n, c, k).
- ``maj_at_k``: majority vote over the normalised extracted answers (``pred``) of k samples
  drawn without replacement from the n available. **Ties** are split: when t answers tie for
  the most votes, the vote scores ``(number of correct answers among the tied) / t``, which is
  the expected accuracy of breaking the tie uniformly at random (deterministic, unbiased).
  Samples without an extracted answer (``pred`` None/"") do not vote; if no sample in the
  subset has an answer the vote is wrong (0). Exact for k=1 and k=n; for 1<k<n it averages
  ``n_subsets`` random subsets (seeded), i.e. a Monte Carlo estimate of the subset expectation.
- ``mean_at_k``: the mean accuracy of k samples, whose expectation over subsets is the mean
  over all n samples (veRL's ``mean@n``); reported for k to sit next to pass@k and maj@k.
- ``bootstrap_ci``: percentile bootstrap over prompts (``scipy.stats.bootstrap``).
- ``t_ci``, ``welch_diff_ci`` (``scipy.stats`` t-tests), ``hedges_g``: seed-level summaries for
  comparing arms; ``seeds_needed``: a paired t-test's sample size for a given power (statsmodels).

What it does not do: grade answers (``rewards``), or bias-correct maj@k beyond subset averaging.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats
from scipy.special import gammaln

from core.registry import Registry

FloatArray = NDArray[np.float64]

# Per-prompt sample metrics, looked up by name in evaluation and reports:
# fn(correct: bool[n], preds: list[str|None], k: int, rng) -> float.
SAMPLE_METRICS: Registry[Callable[..., float]] = Registry("sample metric")


def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> FloatArray | float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021).

    Broadcasts over arrays; returns a float for scalar inputs. Raises ``ValueError`` for
    negative counts, ``c > n`` or ``k > n`` (the estimator needs at least k samples) or k < 1.

    >>> pass_at_k(10, 0, 5), pass_at_k(10, 10, 1), round(pass_at_k(4, 1, 2), 6)
    (0.0, 1.0, 0.5)
    >>> np.round(pass_at_k([5, 5], [1, 2], 1), 12).tolist()  # pass@1 = c/n (to ~1e-15)
    [0.2, 0.4]
    """
    n_a, c_a, k_a = np.broadcast_arrays(np.asarray(n), np.asarray(c), np.asarray(k))
    scalar = n_a.ndim == 0
    n_a, c_a, k_a = (np.atleast_1d(x).astype(np.float64) for x in (n_a, c_a, k_a))
    if np.any(c_a < 0) or np.any(n_a < 0):
        raise ValueError("pass_at_k: n and c must be >= 0")
    if np.any(c_a > n_a):
        raise ValueError("pass_at_k: c (correct samples) must be <= n (samples)")
    if np.any(k_a < 1) or np.any(k_a > n_a):
        raise ValueError("pass_at_k: k must satisfy 1 <= k <= n (draw more samples or lower k)")
    wrong = n_a - c_a
    out = np.ones_like(n_a)
    some_fail = wrong >= k_a  # otherwise every k-subset contains a correct sample -> 1.0
    out[some_fail] = -np.expm1(_log_all_fail(n_a[some_fail], c_a[some_fail], k_a[some_fail]))
    out = np.clip(out, 0.0, 1.0) + 0.0  # + 0.0 turns -0.0 into 0.0
    return float(out[0]) if scalar else out


_PRODUCT_MAX_TERMS = 512


def _log_all_fail(n: FloatArray, c: FloatArray, k: FloatArray) -> FloatArray:
    """log(C(n-c, k) / C(n, k)) for n - c >= k, elementwise.

    First ``gammaln`` differences (fast; absolute error ~1e-16 * n log n). Where that error
    would exceed 1e-12 of the result (pass@k close to 0, i.e. c*k << n), recompute with the
    product form ``sum_{j<m} log1p(-M / (n - j))``, ``m = min(c, k)``, ``M = max(c, k)``
    (Chen et al.'s stable form, symmetric in c and k), on padded chunks sorted by m.
    """
    w = n - c
    parts = (gammaln(w + 1), gammaln(w - k + 1), gammaln(n + 1), gammaln(n - k + 1))
    out = parts[0] - parts[1] - parts[2] + parts[3]
    err = 4.5e-16 * sum(np.abs(p) for p in parts) + 1e-300
    m = np.minimum(c, k)
    # relative error of pass@k = -expm1(out) caused by err in out; refine above 1e-12
    rel = err * np.exp(out) / np.maximum(-np.expm1(out), 1e-300)
    refine = (rel > 1e-12) & (m <= _PRODUCT_MAX_TERMS) & (m > 0)
    idx = np.flatnonzero(refine)
    idx = idx[np.argsort(m[idx], kind="stable")]
    big_m = np.maximum(c, k)
    start = 0
    while start < idx.size:
        rows = max(256, (1 << 21) // max(int(m[idx[min(start + 255, idx.size - 1)]]), 1))
        sel = idx[start : start + rows]
        j = np.arange(max(int(m[sel[-1]]), 1), dtype=np.float64)
        live = j < m[sel, None]
        ratio = np.divide(big_m[sel, None], n[sel, None] - j, out=np.zeros(live.shape), where=live)
        out[sel] = np.log1p(-ratio).sum(axis=1)
        start += sel.size
    out[m == 0] = 0.0
    return out


def _as_ids(preds: Sequence[str | None]) -> tuple[NDArray[np.int64], int]:
    """Map answers to ids 0..m-1 (first appearance order); None/"" -> -1."""
    ids: dict[str, int] = {}
    out = np.empty(len(preds), dtype=np.int64)
    for i, p in enumerate(preds):
        if p is None or (isinstance(p, str) and not p.strip()):
            out[i] = -1
        else:
            out[i] = ids.setdefault(str(p).strip(), len(ids))
    return out, len(ids)


def _vote(subsets: NDArray[np.int64], answer_correct: FloatArray, m: int) -> FloatArray:
    """Tie-split majority-vote score of each row of ``subsets`` (answer ids, -1 = no answer)."""
    r = subsets.shape[0]
    valid = subsets >= 0
    flat = (np.arange(r)[:, None] * m + np.where(valid, subsets, 0))[valid]
    counts = np.bincount(flat, minlength=r * m).reshape(r, m).astype(np.float64)
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top) & (top > 0)
    n_tied = tied.sum(axis=1)
    hits = (tied * answer_correct[None, :]).sum(axis=1)
    return np.where(n_tied > 0, hits / np.maximum(n_tied, 1), 0.0)


def maj_at_k(
    correct: ArrayLike,
    preds: Sequence[str | None],
    k: int,
    n_subsets: int = 256,
    rng: np.random.Generator | None = None,
) -> float:
    """Majority-vote accuracy of k samples of one prompt (ties split; see module docstring).

    ``correct[i]`` says whether sample i was graded correct, ``preds[i]`` its normalised answer.
    An answer counts as correct if the mean grade of the samples giving it is > 0.5.

    >>> maj_at_k([1, 1, 0], ["4", "4", "5"], 3)
    1.0
    >>> maj_at_k([1, 0], ["4", "5"], 2)  # a 1-1 tie with one right answer
    0.5
    >>> maj_at_k([0, 0, 1], [None, None, "7"], 3)  # samples without an answer do not vote
    1.0
    """
    corr = np.asarray(correct, dtype=np.float64).ravel()
    n = corr.size
    if len(preds) != n:
        raise ValueError(f"maj_at_k: {len(preds)} preds for {n} grades")
    if not 1 <= k <= n:
        raise ValueError(f"maj_at_k: k={k} must satisfy 1 <= k <= n={n}")
    ids, m = _as_ids(preds)
    if m == 0:
        return 0.0
    answer_correct = (
        np.bincount(ids[ids >= 0], weights=corr[ids >= 0], minlength=m)
        / np.maximum(np.bincount(ids[ids >= 0], minlength=m), 1)
    ) > 0.5
    answer_correct = answer_correct.astype(np.float64)
    if k == 1:  # a single vote: exact
        return float(np.where(ids >= 0, answer_correct[np.maximum(ids, 0)], 0.0).mean())
    if k == n:
        return float(_vote(ids[None, :], answer_correct, m)[0])
    rng = rng if rng is not None else np.random.default_rng(0)
    order = np.argsort(rng.random((n_subsets, n)), axis=1)[:, :k]
    return float(_vote(ids[order], answer_correct, m).mean())


def mean_at_k(correct: ArrayLike, k: int) -> float:
    """Expected mean accuracy of k samples drawn from the n graded ones (= the mean over n).

    >>> mean_at_k([1, 0, 0, 1], 2)
    0.5
    """
    corr = np.asarray(correct, dtype=np.float64).ravel()
    if not 1 <= k <= corr.size:
        raise ValueError(f"mean_at_k: k={k} must satisfy 1 <= k <= n={corr.size}")
    return float(corr.mean())


SAMPLE_METRICS.add(
    "pass",
    lambda correct, preds, k, rng=None: float(
        pass_at_k(len(correct), int(np.sum(np.asarray(correct, dtype=float) > 0.5)), k)
    ),
)
SAMPLE_METRICS.add("maj", lambda correct, preds, k, rng=None: maj_at_k(correct, preds, k, rng=rng))
SAMPLE_METRICS.add("mean", lambda correct, preds, k, rng=None: mean_at_k(correct, k))


def bootstrap_ci(
    values: ArrayLike,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    statistic: Callable[..., FloatArray] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a statistic (default: the mean) over prompts, by
    ``scipy.stats.bootstrap``. ``statistic(sample, axis)`` follows scipy's vectorised convention.
    Non-finite values are dropped; empty input gives (nan, nan); one value gives (v, v).

    >>> lo, hi = bootstrap_ci([0.0, 1.0] * 50)
    >>> 0.38 < lo < 0.5 < hi < 0.62
    True
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1:
        return (float(x[0]), float(x[0]))
    ci = stats.bootstrap(
        (x,),
        statistic or np.mean,
        n_resamples=n_resamples,
        confidence_level=level,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    return (float(ci.low), float(ci.high))


def _finite(values: ArrayLike) -> FloatArray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def t_ci(values: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean (``scipy.stats.ttest_1samp``; for a handful of seeds, or of
    paired per-seed differences); (nan, nan) below 2 values.

    >>> [round(v, 3) for v in t_ci([0.5, 0.6, 0.7])]
    [0.352, 0.848]
    """
    x = _finite(values)
    if x.size < 2:
        return (float("nan"), float("nan"))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero spread: the interval is the mean itself
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(level)
    return (float(ci.low), float(ci.high))


def hedges_g(a: ArrayLike, b: ArrayLike) -> float:
    """Bias-corrected standardised mean difference (b - a); nan if either side has < 2 values.

    >>> round(hedges_g([0, 1, 2], [1, 2, 3]), 3)
    0.8
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size < 2 or y.size < 2:
        return float("nan")
    dof = x.size + y.size - 2
    pooled = np.sqrt(((x.size - 1) * x.var(ddof=1) + (y.size - 1) * y.var(ddof=1)) / dof)
    if pooled == 0:
        return float("nan") if y.mean() == x.mean() else float(np.sign(y.mean() - x.mean()) * np.inf)
    return float((y.mean() - x.mean()) / pooled * (1 - 3 / (4 * dof - 1)))


def welch_diff_ci(a: ArrayLike, b: ArrayLike, level: float = 0.95) -> tuple[float, float, float]:
    """(mean(b) - mean(a), lo, hi) with a Welch-t interval (``scipy.stats.ttest_ind``,
    ``equal_var=False``); nan bounds with < 2 values a side."""
    x, y = _finite(a), _finite(b)
    if x.size == 0 or y.size == 0:
        return (float("nan"),) * 3
    diff = float(y.mean() - x.mean())
    if x.size < 2 or y.size < 2:
        return (diff, float("nan"), float("nan"))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # zero spread on both sides: the difference itself
        ci = stats.ttest_ind(y, x, equal_var=False).confidence_interval(level)
    return (diff, float(ci.low), float(ci.high))


def paired_power(effect: float, n: int, alpha: float = 0.05) -> float:
    """Power of a two-sided paired t-test with ``n`` pairs at standardised effect ``effect`` (the
    noncentral t; where SciPy's noncentral t returns nan for a large noncentrality, the normal
    approximation, which is then within rounding of 1)."""
    df, nc = n - 1, abs(effect) * np.sqrt(n)
    tc = stats.t.ppf(1 - alpha / 2, df)
    p = stats.nct.sf(tc, df, nc) + stats.nct.cdf(-tc, df, nc)
    if not np.isfinite(p):
        p = stats.norm.sf(tc - nc) + stats.norm.cdf(-tc - nc)
    return float(p)


def seeds_needed(diffs: ArrayLike, delta: float, power: float = 0.8, alpha: float = 0.05) -> int | None:
    """Seeds for ``power`` to detect a mean paired difference ``delta`` with a two-sided ``alpha``
    paired t-test, given the spread of the observed per-seed differences (:func:`paired_power`);
    None with fewer than 2 finite differences or no spread.

    >>> seeds_needed([0.01, -0.03, 0.02, 0.0, -0.01], 0.03), seeds_needed([0.0055, 0.0065], 0.02)
    (6, 2)
    """
    d = np.asarray(diffs, dtype=np.float64).ravel()
    if d.size < 2 or not np.isfinite(d).all() or d.std(ddof=1) == 0:
        return None
    effect = delta / d.std(ddof=1)
    for n in range(2, 501):
        if paired_power(effect, n, alpha) >= power:
            return n
    # beyond 500 pairs the normal approximation is exact enough
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return int(np.ceil((z / effect) ** 2)) + 1
