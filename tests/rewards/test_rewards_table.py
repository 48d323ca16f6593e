"""The labelled regression table (math_table.jsonl, built by build_table.py): error-rate targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rewards

ROWS = [json.loads(line) for line in Path(__file__).with_name("math_table.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def scored() -> list[tuple[dict, bool]]:
    return [(r, rewards.compute_score(r["data_source"], r["response"], r["gold"])["acc"]) for r in ROWS]


def test_table_is_large_and_balanced() -> None:
    assert len(ROWS) >= 300
    assert sum(r["label"] for r in ROWS) >= 150
    assert sum(r["adversarial"] for r in ROWS) >= 40
    assert len({r["category"] for r in ROWS}) >= 20


def test_false_negative_rate(scored) -> None:
    pos = [(r, a) for r, a in scored if r["label"]]
    misses = [(r["id"], r["gold"], r["response"][-60:]) for r, a in pos if not a]
    assert len(misses) / len(pos) <= 0.02, misses


def test_false_positive_rate(scored) -> None:
    neg = [(r, a) for r, a in scored if not r["label"]]
    wrong = [(r["id"], r["gold"], r["response"][-60:]) for r, a in neg if a]
    assert len(wrong) / len(neg) <= 0.01, wrong


def test_no_adversarial_row_is_credited(scored) -> None:
    assert [r["id"] for r, a in scored if r["adversarial"] and a] == []


@pytest.mark.parametrize("category", sorted({r["category"] for r in ROWS}))
def test_every_category_mostly_right(scored, category: str) -> None:
    rows = [(r, a) for r, a in scored if r["category"] == category]
    right = sum(a == r["label"] for r, a in rows)
    assert right / len(rows) >= 0.9, [(r["id"], r["gold"], r["label"]) for r, a in rows if a != r["label"]]
