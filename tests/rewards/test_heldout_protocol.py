"""The held-out benchmark's protocol: every row is described and checked, levels and in-sample flags
are read from ``benchmarks/heldout/sources.json``, tuning-table repeats are left out by exact pair.

These test the benchmark's bookkeeping (no verifier verdict on a held-out row is asserted here).
"""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.bench_rewards import _protocol
from benchmarks.heldout import (
    LEVELS,
    Source,
    answer_format,
    golds,
    load_heldout,
    load_tuning,
    sources,
    split_overlap,
)
from benchmarks.heldout.report import render


def test_every_row_has_a_described_source_and_a_level() -> None:
    rows, srcs = load_heldout(), sources()
    assert len(rows) >= 700
    assert {r["source"] for r in rows} == set(srcs)
    assert all(r["level"] in LEVELS and r["origin"].count("@") == 1 for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert {s.level for s in srcs.values()} == set(LEVELS)


def test_a_bad_row_is_refused_naming_file_and_line(tmp_path) -> None:
    (tmp_path / "sources.json").write_text(json.dumps({"s": {"level": "answer", "why": "x"}}))
    row = dict(
        id="a", source="s", origin="o@c:p", case="c", gold="1", response="1", label="yes", original_label=1
    )
    (tmp_path / "bad.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: .*boolean label"):
        load_heldout(tmp_path)
    (tmp_path / "sources.json").write_text(json.dumps({"s": {"level": "sideways", "why": "x"}}))
    with pytest.raises(ValueError, match="needs level in"):
        sources(tmp_path / "sources.json")


def test_in_sample_flags_cover_scorer_variants() -> None:
    s = Source(name="x", level="answer", why="w", in_sample_for=("math-verify",), informed=("ours",))
    assert s.seen_by("math-verify") and s.seen_by("ours (answer_mode=flexible)")
    assert not s.seen_by("veRL math_reward")
    assert sources()["math_verify_tests"].seen_by("math-verify")
    assert not sources()["hardverify_math"].seen_by("ours")


def test_repeats_of_the_tuning_table_are_left_out_by_exact_gold_and_answer() -> None:
    tuning = [dict(gold="x \\geq 5", response="Answer: $5 \\leq x$", label=True)]
    base = dict(origin="o@c:p", case="c", label=True, original_label=1, source="s")
    same = dict(base, id="same", gold="$x \\geq 5$", response="$5 \\leq x$", level="answer")
    other = dict(base, id="other", gold="$x \\geq 5$", response="$x \\geq 5$", level="answer")
    resp = dict(base, id="resp", gold="x \\geq 5", response="So \\boxed{5 \\leq x}.", level="response")
    kept, left = split_overlap([same, other, resp], tuning)
    assert left == ["same", "resp"] and [r["id"] for r in kept] == ["other"]
    assert len(split_overlap(load_heldout(), load_tuning())[1]) < 40


def test_protocol_picks_each_row_at_its_source_level() -> None:
    rows = [{"level": "answer"}, {"level": "response"}]
    assert _protocol(rows, {"answer": [True, True], "response": [False, False]}) == [True, False]


@pytest.mark.parametrize(
    ("gold", "fmt"),
    [
        ("72", "integer"),
        ("0.25", "decimal"),
        ("\\frac{3}{4}", "fraction"),
        ("x < 1", "inequality"),
        ("y = 2x", "equation"),
        ("(1, 2]", "interval/set"),
        ("Monday", "text"),
        ("", "empty"),
    ],
)
def test_answer_format_classes(gold: str, fmt: str) -> None:
    assert answer_format(gold) == fmt


_CELL = dict(n=3, n_pos=2, n_neg=1, FN=1, FP=0, FN_rate=0.5, FP_rate=0.0)


def _results(**extra: object) -> dict:
    """A minimal results file: one held-out source ``s`` and one in-sample part, all cells ``_CELL``."""
    part = {"all": _CELL, "by_source": {"s": _CELL}, "by_format": {"integer": _CELL}, "misses": []}
    return {
        "sources": {"s": {"level": "answer", "in_sample_for": [], "informed": []}},
        "held_out": {"ours": {"answer": part, "response": part, "protocol": part}},
        "totals": {"ours": {"all": _CELL, "out_of_sample_for_both": _CELL, "out_of_sample_for_it": _CELL}},
        "in_sample": {"ours": {"response": part}},
        **extra,
    }


def test_report_renders_cells_from_the_results() -> None:
    lat = {"ours": {"in_sample": {"cold": dict(p50=0.1, p99=9.0, max=12.0, over_limit=0)}}}
    md = render(_results(latency_ms=lat))
    assert "| s | answer | - | 3 (2+/1-) | 1/2 / - | - | 0/1 / - | - |" in md
    assert "| ours | in_sample | cold | 0.10 | 9.0 | 12 | 0 |" in md


def test_remaining_misses_count_overlap_with_math_verify_and_tolerance() -> None:
    from benchmarks.bench_rewards import overlap_of_misses

    rows = [
        dict(id="a", source="hardverify_math", label=True, gold="0.33"),
        dict(id="b", source="hardverify_math", label=True, gold="x = 1"),
        dict(id="c", source="math_verify_tests", label=True, gold="2"),  # in-sample for math-verify: left out
    ]
    res = {
        "held_out": {
            "ours": {"protocol": {"misses": ["a", "b", "c"]}},
            "math-verify": {"protocol": {"misses": ["b", "c"]}},
            "ours (rel_tol=0.01)": {"protocol": {"misses": ["b"]}},
        }
    }
    by = overlap_of_misses(res, rows)["by_format"]
    assert by["all"] == {"ours": 2, "math_verify_too": 1, "credited_with_tolerance": 1}
    assert by["decimal"]["credited_with_tolerance"] == 1 and by["equation"]["math_verify_too"] == 1


def test_development_split_is_cited_marked_in_sample_and_never_repeats_a_held_out_pair() -> None:
    from benchmarks.devset import HERE as DEV
    from benchmarks.devset import load_dev

    dev, left = load_dev()
    held = {(g, r["response"]) for r in load_heldout() for g in golds(r)}
    assert dev and left  # TinyV's prompts share examples with HardVerify-Math: those are left out
    assert not any((g, r["response"]) in held for r in dev for g in golds(r))
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S.*", r["origin"]) for r in dev)
    assert all(s.seen_by("ours") for s in sources(DEV / "sources.json").values())


def test_report_renders_the_development_split() -> None:
    res = _results(
        development_sources={"d": {"level": "response", "in_sample_for": ["ours"]}},
        development={"ours": {"all": _CELL, "by_source": {"d": _CELL}, "by_format": {}, "misses": []}},
    )
    assert "| d | response | 3 (2+/1-) | 1/2 / - | - | 0/1 / - | - |" in render(res)
