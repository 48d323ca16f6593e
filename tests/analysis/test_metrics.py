"""pass@k against brute-force enumeration and the exact closed form; maj@k ties; CIs; effect sizes."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from analysis import metrics
from analysis.metrics import bootstrap_ci, hedges_g, maj_at_k, mean_at_k, pass_at_k, t_ci, welch_diff_ci


def brute_pass(n: int, c: int, k: int) -> float:
    """Share of k-subsets of n samples (c correct) containing at least one correct sample."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


def brute_maj(correct: list[int], preds: list, k: int) -> float:
    """Exact expectation of the tie-split vote over every k-subset."""
    total = 0.0
    subsets = list(itertools.combinations(range(len(preds)), k))
    ans_ok = {}
    for p, c in zip(preds, correct, strict=True):
        if p is not None:
            ans_ok.setdefault(p, []).append(c)
    for s in subsets:
        votes: dict = {}
        for i in s:
            if preds[i] is not None:
                votes[preds[i]] = votes.get(preds[i], 0) + 1
        if not votes:
            continue
        top = max(votes.values())
        tied = [a for a, v in votes.items() if v == top]
        total += sum(np.mean(ans_ok[a]) > 0.5 for a in tied) / len(tied)
    return total / len(subsets)


@pytest.mark.parametrize("n", range(1, 9))
def test_pass_at_k_matches_enumeration(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass(n, c, k), abs=1e-12), (n, c, k)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (200, 3, 50),
        (1000, 1, 1),
        (1000, 10, 100),
        (5000, 7, 1000),
        (10000, 9990, 2),
        (64, 0, 64),
        (64, 1, 64),
        (100000, 5, 10),
    ],
)
def test_pass_at_k_matches_exact_closed_form(n: int, c: int, k: int) -> None:
    exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), rel=1e-10, abs=1e-12)


def test_pass_at_k_vectorised_and_broadcast() -> None:
    rng = np.random.default_rng(0)
    n = rng.integers(1, 300, size=5000)
    c = rng.integers(0, n + 1)
    k = np.minimum(rng.integers(1, 64, size=5000), n)
    got = pass_at_k(n, c, k)
    assert got.shape == (5000,)
    want = [
        1 - math.comb(int(a - b), int(q)) / math.comb(int(a), int(q))
        for a, b, q in zip(n[:200], c[:200], k[:200], strict=True)
    ]
    np.testing.assert_allclose(got[:200], want, rtol=1e-9, atol=1e-12)
    grid = pass_at_k(64, np.arange(65)[:, None], np.array([1, 4, 16, 64])[None, :])
    assert grid.shape == (65, 4)
    assert np.all(np.diff(grid, axis=0) >= -1e-15) and np.all(
        np.diff(grid, axis=1) >= -1e-15
    )  # monotone in c, k
    np.testing.assert_allclose(grid[:, 0], np.arange(65) / 64)  # pass@1 = c/n


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 1, 5), (4, 1, 0)])
def test_pass_at_k_rejects_bad_input(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_biased_best_of_n_differs() -> None:
    # veRL's best@N-style estimate (max over one k-subset) is not what we compute: with n=4, c=1,
    # k=2 the unbiased answer is exactly 0.5, not 1 or 0.
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)


def test_maj_ties_are_split_and_documented() -> None:
    assert maj_at_k([1, 0], ["4", "5"], 2) == 0.5
    assert maj_at_k([1, 0, 0], ["4", "5", "6"], 3) == pytest.approx(1 / 3)
    assert maj_at_k([0, 0, 1, 1], ["5", "5", "4", "4"], 4) == 0.5
    assert maj_at_k([0, 0, 1], ["5", "5", "4"], 3) == 0.0
    assert maj_at_k([0, 0, 0], [None, "", None], 3) == 0.0  # nobody voted
    assert maj_at_k([0, 0, 1], [None, None, "7"], 3) == 1.0  # abstentions do not vote
    assert "Ties" in metrics.__doc__


@pytest.mark.parametrize("seed", range(4))
def test_maj_at_k_matches_subset_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 7
    preds = [rng.choice(["1", "2", "3", None]) for _ in range(n)]
    correct = [int(p == "1") for p in preds]
    for k in range(1, n + 1):
        exact = brute_maj(correct, preds, k)
        got = maj_at_k(correct, preds, k, n_subsets=20000, rng=np.random.default_rng(1))
        tol = 1e-12 if k in (1, n) else 0.02  # exact at k=1 and k=n, Monte Carlo between
        assert got == pytest.approx(exact, abs=tol), (k, preds)


def test_mean_at_k_and_registry() -> None:
    assert mean_at_k([1, 0, 0, 1], 3) == 0.5
    assert metrics.SAMPLE_METRICS.names() == ["maj", "mean", "pass"]
    with pytest.raises(KeyError, match="known: maj, mean, pass"):
        metrics.SAMPLE_METRICS.get("best")


def test_bootstrap_ci_covers_and_shrinks() -> None:
    rng = np.random.default_rng(0)
    small = rng.binomial(1, 0.3, 50).astype(float)
    big = rng.binomial(1, 0.3, 5000).astype(float)
    lo_s, hi_s = bootstrap_ci(small)
    lo_b, hi_b = bootstrap_ci(big)
    assert lo_b < 0.3 < hi_b
    assert (hi_b - lo_b) < (hi_s - lo_s) / 5
    ref = stats.bootstrap(
        (big,), np.mean, n_resamples=2000, method="percentile", random_state=0
    ).confidence_interval
    assert lo_b == pytest.approx(ref.low, abs=0.005) and hi_b == pytest.approx(ref.high, abs=0.005)
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    assert bootstrap_ci([0.7]) == (0.7, 0.7)


def test_t_ci_hedges_welch_against_scipy() -> None:
    a, b = np.array([0.50, 0.52, 0.47, 0.55]), np.array([0.61, 0.58, 0.66, 0.63, 0.60])
    lo, hi = t_ci(a)
    ref = stats.t.interval(0.95, len(a) - 1, loc=a.mean(), scale=stats.sem(a))
    assert (lo, hi) == pytest.approx(ref)
    d, dlo, dhi = welch_diff_ci(a, b)
    tt = stats.ttest_ind(b, a, equal_var=False).confidence_interval(0.95)
    assert (d, dlo, dhi) == pytest.approx((b.mean() - a.mean(), tt.low, tt.high))
    pooled = np.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2))
    assert hedges_g(a, b) == pytest.approx((b.mean() - a.mean()) / pooled * (1 - 3 / (4 * 7 - 1)))
    assert math.isnan(hedges_g([1.0], [2.0, 3.0])) and math.isnan(t_ci([1.0])[0])
