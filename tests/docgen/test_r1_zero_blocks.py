"""docgen.r1_zero: README's R1-Zero headline is the arms block's summary, from the same records."""

from __future__ import annotations

from docgen import r1_zero


def test_headline_is_the_arms_summary_without_the_per_seed_rows() -> None:
    head, arms = r1_zero.r1_zero_headline().markdown, r1_zero.r1_zero_arms().markdown
    summary = arms.split("<details>")[0]
    assert head.startswith(summary.strip())  # figure, per-arm table and length-share sentence
    for _, label in r1_zero.ARMS:
        assert f"| {label} | " in head
    assert "Per seed" not in head and "Per seed" in arms
    assert r1_zero.r1_zero_headline().sources[:3] == r1_zero.r1_zero_arms().sources
