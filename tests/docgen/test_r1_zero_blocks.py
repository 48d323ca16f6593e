"""docgen.r1_zero: README's R1-Zero headline is built from the arms' records (and, once recorded,
the last reproduce record, in a sentence); the record made before the optimizer fix is a two-machine
table in docs/provenance.md, not in the README."""

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


def test_the_two_machine_table_renders_in_provenance_not_in_the_headline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from docgen import status

    two = r1_zero.r1_zero_two_machines()
    assert "| first (records of the time) |" in two.markdown and "[why](first_run.md#" in two.markdown
    assert any(f"results/reproduce/{status.UNFUSED}.json" in s for s in two.sources)
    head = r1_zero.r1_zero_headline()
    assert "first (records of the time)" not in head.markdown
    assert not any(status.UNFUSED in s for s in head.sources)
    monkeypatch.setattr("docgen.status.reproduce_record", lambda name="latest": None)
    assert r1_zero.r1_zero_two_machines().markdown.startswith("*Not run yet")
