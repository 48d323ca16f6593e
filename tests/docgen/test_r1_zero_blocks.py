"""docgen.r1_zero: README's R1-Zero headline is built from the arms' records (and, once recorded,
the reproduce records: the last one in a sentence, the one made before the optimizer fix as a
two-machine table)."""

from __future__ import annotations

import pytest

from docgen import r1_zero


def test_headline_without_a_reproduce_record_is_the_arms_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("docgen.status.reproduce_record", lambda name="latest": None)
    head, arms = r1_zero.r1_zero_headline().markdown, r1_zero.r1_zero_arms().markdown
    table = r1_zero._arms()["summary"].markdown()
    assert table in head and table in arms
    for _, label in r1_zero.ARMS:
        assert f"| {label} | " in head
    assert "Per seed" not in head and "Per seed" in arms
    assert r1_zero.r1_zero_headline().sources == r1_zero.r1_zero_arms().sources
