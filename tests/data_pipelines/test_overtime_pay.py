"""overtime_pay: the seed's worked example, and every generated gold re-derived independently
from the Chinese question text alone (a regex reading of what a person would read)."""

from __future__ import annotations

import random
import re
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal, getcontext

import pytest

from data_pipelines.tasks import TASKS
from data_pipelines.tasks.overtime_pay import OvertimeCase, format_yuan, overtime_pay, row_for

CN = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}


def _num(s: str) -> int:
    return int(s) if s.isdigit() else CN[s]


def independent_gold(question: str) -> str:
    """Re-read the question and recompute the pay with Decimal and per-hour arithmetic."""
    getcontext().prec = 60
    monthly = Decimal(re.search(r"月薪([\d,]+)元", question).group(1).replace(",", ""))
    hours = re.search(r"(?:累计加班|一共加了)(\d+)(?:小时|个小时)", question)
    rest = re.search(r"(?:休息日加了|周末加班|休息日加班)([\d一两三四五六七八九十]+)天", question)
    comp = re.search(r"其中([\d一两三四五六七八九十]+)天已经补休", question)
    holiday = re.search(r"法定假日加班([\d一两三四五六七八九十]+)天", question)
    hourly = monthly / Decimal("21.75") / 8
    total = Decimal(0)
    if hours:
        total += hourly * Decimal("1.5") * int(hours.group(1))
    if rest:
        total += hourly * 8 * 2 * (_num(rest.group(1)) - (_num(comp.group(1)) if comp else 0))
    if holiday:
        total += hourly * 8 * 3 * _num(holiday.group(1))
    cents = total.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return str(cents.normalize()) if cents != cents.to_integral() else str(int(cents))


def test_seed_worked_example():
    """8,700 a month, 2 rest days without compensatory leave -> 400 x 2 x 200% = 1,600 yuan."""
    case = OvertimeCase(monthly=8700, rest_days=2)
    assert overtime_pay(case) == 1600
    row = row_for(case, 0, "test", random.Random(0))
    assert row["reward_model"]["ground_truth"] == "1600"
    q = row["extra_info"]["question"]
    assert ("8700" in q or "8,700" in q) and "补休" in q
    assert independent_gold(q) == "1600"


def test_rounding_and_format():
    assert (
        format_yuan(overtime_pay(OvertimeCase(monthly=10000, weekday_hours=1))) == "86.21"
    )  # 10000/21.75/8*1.5
    assert format_yuan(overtime_pay(OvertimeCase(monthly=8700, rest_days=3, comp_days=1))) == "1600"
    assert format_yuan(overtime_pay(OvertimeCase(monthly=8700, holiday_days=1))) == "1200"
    with pytest.raises(ValueError, match="comp_days"):
        overtime_pay(OvertimeCase(monthly=8700, rest_days=1, comp_days=2))


def test_generated_gold_matches_independent_reading():
    rows = TASKS.get("overtime_pay")(n=400, seed=7, split="train")
    for r in rows:
        assert r["reward_model"]["ground_truth"] == independent_gold(r["extra_info"]["question"]), r[
            "extra_info"
        ]
        user = r["prompt"][-1]["content"]
        assert "21.75" in user and "<answer></answer>" in user


def test_randomised_and_no_answer_dominates():
    rows = TASKS.get("overtime_pay")(n=500, seed=1, split="train")
    golds = Counter(r["reward_model"]["ground_truth"] for r in rows)
    assert golds.most_common(1)[0][1] / len(rows) < 0.02
    kinds = Counter(
        (
            r["extra_info"]["weekday_hours"] > 0,
            r["extra_info"]["rest_days"] > 0,
            r["extra_info"]["holiday_days"] > 0,
        )
        for r in rows
    )
    assert len(kinds) == 7  # every non-empty combination of overtime kinds appears
    assert len({r["extra_info"]["question"][:6] for r in rows}) > 5  # varied phrasing


def test_deterministic_and_splits_differ():
    gen = TASKS.get("overtime_pay")
    assert gen(n=20, seed=3, split="train") == gen(n=20, seed=3, split="train")
    assert gen(n=20, seed=3, split="train")[:10] == gen(n=10, seed=3, split="train")  # prefix-stable
    train = {r["extra_info"]["question"] for r in gen(n=50, seed=3, split="train")}
    test = {r["extra_info"]["question"] for r in gen(n=50, seed=3, split="test")}
    assert train != test


def test_rewards_credit_the_gold():
    rewards = pytest.importorskip("rewards")
    row = row_for(OvertimeCase(monthly=8700, rest_days=2), 0, "test", random.Random(0))
    good = rewards.compute_score(
        "overtime_pay",
        "<think>8700/21.75=400, 400*2*2</think><answer>1600</answer>",
        row["reward_model"]["ground_truth"],
        extra_info=row["extra_info"],
    )
    bad = rewards.compute_score(
        "overtime_pay",
        "<answer>1200</answer>",
        row["reward_model"]["ground_truth"],
        extra_info=row["extra_info"],
    )
    assert good["acc"] and not bad["acc"]


def test_incompatible_template_refused():
    with pytest.raises(ValueError, match="overtime_pay.*template="):
        TASKS.get("overtime_pay")(n=1, seed=0, split="train", template="boxed")
