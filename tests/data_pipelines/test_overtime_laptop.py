"""The overtime-pay task's laptop variant (round daily wages) and its corpus family."""

from __future__ import annotations

import random
from fractions import Fraction
from pathlib import Path

import pytest

from core.model import build_tokenizer
from data_pipelines.corpus import build_corpus, describe
from data_pipelines.corpus.charset import task_characters
from data_pipelines.corpus.overtime_pay import hasty_answer, worked_text, write
from data_pipelines.tasks.overtime_pay import (
    ANSWER_HINT,
    RULES,
    OvertimeCase,
    case_key,
    check_daily_wages,
    format_yuan,
    generate,
    grid_case,
    overtime_pay,
    split_case,
)
from rewards import compute_score

ROOT = Path(__file__).resolve().parents[2]
GRID = [200, 400, 600, 800]
MIX = {"overtime_pay": 1.0}


def _laptop_rows(n: int = 300, split: str = "train", grid: list[int] = GRID) -> list[dict]:
    return generate(n, 0, split, template="plain", include_rules=False, include_hint=False, daily_wages=grid)


def _case(row: dict) -> OvertimeCase:
    x = row["extra_info"]
    return OvertimeCase(
        **{k: x[k] for k in ("monthly", "weekday_hours", "rest_days", "comp_days", "holiday_days")}
    )


def test_test_cases_are_distinct_and_never_in_the_train_split_or_the_corpus(monkeypatch) -> None:
    """The laptop test split (conf/dataset/overtime_pay_laptop.yaml's sizes) is held out by case."""
    from omegaconf import OmegaConf

    from data_pipelines.corpus import overtime_pay as family

    task = OmegaConf.load(ROOT / "conf" / "dataset" / "overtime_pay_laptop.yaml").local.task
    grid = list(task.params.daily_wages)
    test = [case_key(_case(r)) for r in _laptop_rows(int(task.val_n), "test", grid)]
    assert len(set(test)) == len(test) == int(task.val_n)
    train = {case_key(_case(r)) for r in _laptop_rows(5000, "train", grid)}
    assert len(train) > 300 and not train & set(test)
    # every case the corpus family writes a document about (in any phrasing) is outside the test split
    written: list[OvertimeCase] = []
    real = family.question_for
    monkeypatch.setattr(family, "question_for", lambda case, rng: written.append(case) or real(case, rng))
    rng = random.Random(1)
    for _ in range(5000):
        write(rng, daily_wages=grid)
    corpus = {case_key(c) for c in written}
    assert len(written) == 5000 and len(corpus) > 300 and not corpus & set(test)


def test_too_many_test_rows_are_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"local\.task\.val_n.*no distinct held-out case"):
        _laptop_rows(200, "test")  # four wages hold about 80 held-out cases


def test_seed_example_gold_is_exact() -> None:
    """Seed 000: 8,700 a month, 2 rest days without leave -> 400 x 2 x 200% = 1,600."""
    assert format_yuan(overtime_pay(OvertimeCase(monthly=8700, rest_days=2))) == "1600"
    assert format_yuan(overtime_pay(OvertimeCase(monthly=8700, rest_days=3, comp_days=1))) == "1600"
    assert format_yuan(overtime_pay(OvertimeCase(monthly=8700, weekday_hours=4, holiday_days=1))) == "1500"


def test_grid_wages_give_round_daily_and_hourly_wages_and_whole_yuan() -> None:
    rows = _laptop_rows(400)
    seen = set()
    for row in rows:
        x = row["extra_info"]
        daily = Fraction(x["monthly"]) / Fraction("21.75")
        assert daily.denominator == 1 and int(daily) in GRID
        assert (daily / 8).denominator == 1
        assert x["weekday_hours"] % 2 == 0 and x["weekday_hours"] <= 8
        assert 1 <= x["k"] == sum(v > 0 for v in (x["weekday_hours"], x["rest_days"], x["holiday_days"])) <= 3
        assert "." not in row["reward_model"]["ground_truth"]
        seen.add(int(daily))
    assert seen == set(GRID)
    assert {r["extra_info"]["k"] for r in rows} == {1, 2, 3}


def test_laptop_prompts_leave_out_the_rules_and_hint_and_are_deterministic() -> None:
    rows = _laptop_rows(50)
    text = rows[0]["prompt"][-1]["content"]
    assert RULES not in text and ANSWER_HINT not in text and "月薪" in text
    assert rows == _laptop_rows(50)
    assert generate(5, 0, "test")[0]["prompt"][-1]["content"].startswith(RULES)  # the full task is unchanged
    assert "k" not in generate(5, 0, "test")[0]["extra_info"]


@pytest.mark.parametrize("bad", [[], [100], [0, 400], [-8]])
def test_daily_wages_off_the_grid_are_refused_with_the_key(bad) -> None:
    with pytest.raises(ValueError, match="daily_wages"):
        check_daily_wages(bad)


def test_worked_solutions_are_true_and_end_in_the_gold() -> None:
    """Every step of a worked solution is a true equality; a fix's slip is wrong and its repair right."""
    rng = random.Random(0)
    for _ in range(300):
        case = grid_case(rng, GRID)
        gold = overtime_pay(case)
        for style in ("peel", "check", "fix"):
            text = worked_text(case, style, rng)
            body = text.split(" check ")[0]
            last = body.split("=")[-1].split(" ")[0]
            assert Fraction(last) == gold, (style, text)
            for chain in (t for t in text.replace("天", "").split() if "=" in t):
                values = {Fraction(eval(e.replace("÷", "/"))).limit_denominator() for e in chain.split("=")}  # noqa: S307
                assert len(values) == 1, text  # every expression of a chain has the same value
            if style == "fix":
                slip, _, repair = text.partition(" no ")
                slip_pay, repair_pay = slip.split("=")[-1], repair.split(" ")[0].split("=")[-1]
                assert Fraction(slip_pay) != Fraction(repair_pay), text


def test_hasty_answers_are_wrong() -> None:
    rng = random.Random(1)
    for _ in range(300):
        case = grid_case(rng, GRID)
        assert hasty_answer(case, rng) != overtime_pay(case)


def test_corpus_holds_the_designed_shares_and_noise_rates() -> None:
    params = {
        "overtime_pay": {
            "chat": 0.5,
            "worked_chat": 0.2,
            "worked_plain": 0.9,
            "tag": 0.7,
            "tag_plain": 0.1,
            "direct_noise": [0.1, 0.5, 0.9],
        }
    }
    docs = build_corpus(4000, 0, MIX, params)
    d = describe(docs)
    assert d["chat/worked"] == pytest.approx(0.5 * 0.2, abs=0.03)
    assert d["plain/worked"] == pytest.approx(0.5 * 0.9, abs=0.03)
    chat = [x for x in docs if x.prompt is not None]
    assert sum("<answer>" in x.text for x in chat) / len(chat) == pytest.approx(0.7, abs=0.04)
    for k, rate in ((1, 0.1), (2, 0.5), (3, 0.9)):
        direct = [x for x in docs if x.meta["mode"] == "direct" and x.meta["k"] == k]
        wrong = sum(not x.meta["correct"] for x in direct) / len(direct)
        assert wrong == pytest.approx(rate, abs=0.08), k
    assert all(x.meta["correct"] for x in docs if x.meta["mode"] == "worked")


def test_corpus_answers_score_as_the_meta_says_and_every_character_is_in_the_tokenizer() -> None:
    """A tagged chat document scores 1 with the task's verifier iff the corpus marked it correct;
    every character the corpus writes is ASCII or one of the task tokenizer's characters."""
    rng, docs, golds = random.Random(3), [], []
    for _ in range(600):
        twin = random.Random()
        twin.setstate(rng.getstate())  # the writer draws its case first: the twin draws the same one
        golds.append(format_yuan(overtime_pay(split_case(twin, "pretrain", lambda r: grid_case(r, GRID)))))
        docs.append(write(rng, direct_noise=0.5))
    tok = build_tokenizer("task_chars")
    chars = set(task_characters())
    outcomes = set()
    for doc, gold in zip(docs, golds, strict=True):
        text = (doc.prompt or "") + doc.text
        assert all(ord(c) < 128 or c in chars for c in text)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.unk_token_id not in ids and tok.decode(ids) == text
        if doc.prompt is not None and "<answer>" in doc.text:
            acc = compute_score("overtime_pay", doc.text, gold)["acc"]
            assert bool(acc) == doc.meta["correct"], doc
            outcomes.add((doc.meta["mode"], bool(acc)))
    assert outcomes == {("worked", True), ("direct", True), ("direct", False)}
