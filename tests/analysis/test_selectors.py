"""Selectors for parallel sampling: exact values, subsampling against enumeration, the scaling table."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from omegaconf import OmegaConf

from analysis.metrics import pass_at_k
from analysis.selectors import best_of_n, subsample, weighted_vote
from analysis.tts import table


def exact(selector, correct, preds, scores, k):
    """The selector's expectation over every k-subset (the quantity ``subsample`` estimates)."""
    vals = [
        selector(np.asarray(correct)[list(s)], [preds[i] for i in s], np.asarray(scores)[list(s)])
        for s in itertools.combinations(range(len(correct)), k)
    ]
    return float(np.mean(vals))


CASES = [
    ([1, 0, 0, 1, 0, 0], ["7", "8", "8", "7", "9", None], [0.9, 0.4, 0.5, 0.2, 0.95, 0.1]),
    ([0, 0, 0, 1, 0, 1], ["3", "3", "4", "5", "3", "5"], [0.3, 0.3, 0.1, 0.8, 0.2, 0.7]),
]


@pytest.mark.parametrize("correct,preds,scores", CASES)
@pytest.mark.parametrize("selector", [best_of_n, weighted_vote])
@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_subsample_matches_enumeration(correct, preds, scores, selector, k):
    got = subsample(selector, correct, preds, scores, k, subsets=4000, rng=np.random.default_rng(0))
    assert got == pytest.approx(exact(selector, correct, preds, scores, k), abs=0.02)


def test_perfect_scorer_reaches_pass_at_k_and_inverted_scorer_falls_below_mean():
    correct = np.array([1, 0, 0, 0, 1, 0, 0, 0], dtype=float)
    preds = [str(i) for i in range(8)]
    for k in (1, 2, 4, 8):
        top = subsample(best_of_n, correct, preds, correct, k, subsets=3000, rng=np.random.default_rng(1))
        assert top == pytest.approx(pass_at_k(8, 2, k), abs=0.02)
        bottom = subsample(
            best_of_n, correct, preds, 1 - correct, k, subsets=3000, rng=np.random.default_rng(1)
        )
        assert bottom <= correct.mean() + 1e-9


def test_weighted_vote_ignores_samples_without_an_answer():
    assert weighted_vote(np.array([1.0, 0.0]), ["5", None], np.array([0.1, 0.9])) == 1.0
    assert weighted_vote(np.array([0.0, 0.0]), [None, ""], np.array([0.1, 0.9])) == 0.0


def test_scaling_table_orders_the_ceiling_above_every_selector():
    rng = np.random.default_rng(0)
    records = []
    for p in range(12):
        for _j in range(8):
            ok = rng.random() < 0.3
            records.append(
                {
                    "acc": ok,
                    "vote": str(p * 10 + (0 if ok else rng.integers(1, 4))),
                    "scores": {"orm": float(ok) * 0.5 + rng.random() * 0.5},
                }
            )
    cfg = OmegaConf.create({"seed": 0, "subsets": 64, "bootstrap": 200})
    t = table(
        records, 8, [1, 2, 8], [("bon_orm", "orm", "best_of_n"), ("wvote_orm", "orm", "weighted_vote")], cfg
    )
    m = t["metrics"]
    for k in ("1", "2", "8"):
        for sel in ("maj", "bon_orm", "wvote_orm"):
            assert m[sel][k]["mean"] <= m["pass"][k]["mean"] + 1e-9
            assert t["gap_to_pass"][sel][k] >= -1e-9
        assert m["pass"][k]["lo"] <= m["pass"][k]["mean"] <= m["pass"][k]["hi"]
    assert m["pass"]["1"]["mean"] == pytest.approx(m["mean"]["1"]["mean"])
    assert m["bon_orm"]["8"]["mean"] > m["mean"]["1"]["mean"]  # an informative scorer helps
