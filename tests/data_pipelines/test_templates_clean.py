"""Prompt templates (conf/template) and dedup / decontamination reports."""

from __future__ import annotations

import pytest

from data_pipelines import clean
from data_pipelines.tasks._common import make_row
from data_pipelines.templates import TEMPLATES, get_template


def _row(q: str, gold: str = "1", source: str = "math") -> dict:
    return make_row(
        data_source=source,
        question=q,
        answer=gold,
        ability="math",
        split="train",
        index=0,
        template=get_template("plain"),
    )


def test_templates_render():
    assert {"r1_zero", "boxed", "dapo", "plain"} <= set(TEMPLATES.names())
    r1 = get_template("r1_zero").render("2+2?")
    assert r1[0]["role"] == "system" and "<answer>" in r1[0]["content"] and r1[1]["content"] == "2+2?"
    assert get_template("boxed").render(r"\frac{1}{2}?")[0]["content"].startswith(r"\frac{1}{2}?")
    dapo = get_template("dapo").render("Q")[0]["content"]
    assert dapo.startswith("Solve the following math problem") and 'after "Answer:"' in dapo
    with pytest.raises(KeyError, match="known: boxed, dapo"):
        get_template("nope")


def test_dedup_normalises_and_reports():
    rows = [_row("What is 1+1?"), _row("what  is 1+1?"), _row("What is 1+1?", gold="3"), _row("What is 2+2?")]
    kept, rep = clean.dedup(rows)
    assert len(kept) == 2
    assert rep["removed"] == 2 and rep["conflicting_gold"] == 1 and rep["input"] == 4


def test_decontaminate_ngram_and_boilerplate():
    prefix = "Spell this word backward (example: sun -> nus): "
    evals = [_row(prefix + w) for w in ["apple", "banana", "cherry", "durian", "elder"]]
    train = [_row(prefix + w) for w in ["apple", "grape", "melon"]]
    kept, rep = clean.decontaminate(train, evals, n=8)
    assert [clean.text_of(r)[len(prefix) :] for r in kept] == ["grape", "melon"]  # boilerplate ignored
    assert rep["removed"] == 1 and rep["examples"]
    long_eval = [_row("Let x be the number of ways to tile a 3 by 10 board with dominoes; find x mod 7.")]
    para = [
        _row("Compute: let x be the number of ways to tile a 3 by 10 board with dominoes; find x mod 7 now.")
    ]
    assert clean.decontaminate(para, long_eval, n=13)[1]["removed"] == 1
    assert (
        clean.decontaminate([_row("Totally different question about primes.")], long_eval)[1]["removed"] == 0
    )


def test_cjk_tokens_and_exact_mode():
    assert clean.tokens("小林月薪8700元") == ["小", "林", "月", "薪", "8700", "元"]
    a, b = _row("我月薪8700元，休息日加了两天班，没补休"), _row("我月薪8700元，休息日加了三天班，没补休")
    kept, rep = clean.decontaminate([a, b], [a], mode="exact")
    assert kept == [b] and rep["mode"] == "exact"
    with pytest.raises(ValueError, match="mode"):
        clean.decontaminate([a], [a], mode="fuzzy")
