"""``overtime_pay``: the seed's overtime-pay questions, asked in Chinese as a person would ask.

Rules (a teaching example, not legal advice; stated in every prompt unless ``include_rules=False``):
daily wage = monthly wage ÷ 21.75, hourly wage = daily ÷ 8; weekday overtime 150% of the hourly
wage per hour; rest-day overtime without compensatory leave 200% of the daily wage per day
(days given compensatory leave are not paid); statutory-holiday overtime 300% per day
(compensatory leave does not offset it). Gold = the amount in yuan, exact rational arithmetic,
rounded half-up to 0.01 and written as a plain number ("1600", "1234.48").

The seed's worked example: 8,700 a month, 2 rest days without leave -> 400 x 2 x 200% = 1,600.
Monthly wages, day/hour counts, which kinds of overtime appear, the person, the month, the
holiday and the phrasing are all randomised.

**Laptop variant** (``daily_wages=[...]``, a designed simplification for a ~1M-parameter model):
the same rules and question phrasing, but the monthly wage is 21.75 x a daily wage drawn from
``daily_wages`` (each a multiple of 8, so the daily and hourly wages are round: the seed's 8,700 ->
400/day, 50/hour), weekday overtime hours are even (2..``max_hours``, so 150% of the hourly wage
gives whole yuan), rest days 1..``max_days`` (sometimes partly given compensatory leave), holiday
days 1..``max_holiday_days``; the difficulty ``k`` (``extra_info``) is the number of overtime kinds
(1..3). The full task's answers like 1234.74 are out of the tiny model's reach; this keeps the
structure (21.75 days, 8 hours, 150/200/300%, compensatory leave) with numbers it can work out.
Not covered: partial days, overtime caps, local rules, 21.75 vs 20.83 day conventions.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import draw_in_split, make_row, resolve_template, task_rng

RULES = (
    "计算规则：日工资 = 月工资 ÷ 21.75，小时工资 = 日工资 ÷ 8；工作日延时加班按小时工资的 150% 计算，"
    "休息日加班且未安排补休按日工资的 200% 计算（已补休的天数不再支付加班费），"
    "法定节假日加班按日工资的 300% 计算（补休不抵扣）。"
)
ANSWER_HINT = "请把最终金额（单位：元，四舍五入到分，只写数字）写在 <answer></answer> 标签里。"

PEOPLE = ("我", "小林", "小王", "老张", "我老婆", "我同事", "小陈", "刘姐")
MONTHS = ("这个月", "上个月", "3月份", "本月", "10月")
HOLIDAYS = ("国庆节", "春节", "五一", "元旦", "端午节", "中秋节", "清明节")
CN = dict(enumerate("零一两三四五六七八九十", start=0))
ASKS = (
    "加班费应该是多少？",
    "按规定加班费一共多少元？",
    "能拿多少加班费？",
    "公司应该付多少加班费？",
    "加班费怎么算，一共多少钱？",
)


@dataclass(frozen=True)
class OvertimeCase:
    """One month's overtime: wage in yuan, weekday overtime hours, rest days (and how many of
    them got compensatory leave), statutory-holiday days."""

    monthly: int
    weekday_hours: int = 0
    rest_days: int = 0
    comp_days: int = 0
    holiday_days: int = 0


def overtime_pay(case: OvertimeCase) -> Fraction:
    """Exact overtime pay in yuan.

    >>> overtime_pay(OvertimeCase(monthly=8700, rest_days=2))
    Fraction(1600, 1)
    """
    if not 0 <= case.comp_days <= case.rest_days:
        raise ValueError(f"comp_days ({case.comp_days}) must lie in 0..rest_days ({case.rest_days})")
    daily = Fraction(case.monthly) / Fraction("21.75")
    hourly = daily / 8
    return (
        hourly * Fraction(3, 2) * case.weekday_hours
        + daily * 2 * (case.rest_days - case.comp_days)
        + daily * 3 * case.holiday_days
    )


def format_yuan(amount: Fraction) -> str:
    """Round half-up to 0.01 yuan and drop trailing zeros.

    >>> format_yuan(Fraction(1600)), format_yuan(Fraction(246948, 200)), format_yuan(Fraction(1, 200))
    ('1600', '1234.74', '0.01')
    """
    cents = (Decimal(amount.numerator) / Decimal(amount.denominator)).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )
    text = f"{cents:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _days(rng: random.Random, n: int) -> str:
    return CN[n] if n <= 10 and rng.random() < 0.5 else str(n)


def _wage(rng: random.Random, monthly: int) -> str:
    return f"{monthly:,}" if rng.random() < 0.4 else str(monthly)


def question_for(case: OvertimeCase, rng: random.Random) -> str:
    """A Chinese question about ``case`` as a person would ask it (phrasing drawn from ``rng``)."""
    parts = []
    if case.weekday_hours:
        h = case.weekday_hours
        parts.append(rng.choice((f"工作日晚上累计加班{h}小时", f"平时下班后一共加了{h}个小时的班")))
    if case.rest_days:
        d, c = case.rest_days, case.comp_days
        if c == 0:
            parts.append(
                rng.choice(
                    (f"休息日加了{_days(rng, d)}天班，没补休", f"周末加班{_days(rng, d)}天，公司没有安排补休")
                )
            )
        else:
            parts.append(f"休息日加班{_days(rng, d)}天，其中{_days(rng, c)}天已经补休")
    if case.holiday_days:
        parts.append(f"{rng.choice(HOLIDAYS)}法定假日加班{_days(rng, case.holiday_days)}天")
    who, month = rng.choice(PEOPLE), rng.choice(MONTHS)
    return f"{who}月薪{_wage(rng, case.monthly)}元，{month}{'，'.join(parts)}，{rng.choice(ASKS)}"


def prompt_for(question: str, include_rules: bool = True, include_hint: bool = True) -> str:
    """The question wrapped with the rules and where to write the answer (each optional)."""
    return "\n".join(
        [*([RULES] if include_rules else []), question, *([ANSWER_HINT] if include_hint else [])]
    )


#: the combinations of overtime kinds a case draws from
KINDS = (
    ("rest",),
    ("weekday",),
    ("holiday",),
    ("rest", "weekday"),
    ("rest", "holiday"),
    ("weekday", "holiday"),
    ("rest", "weekday", "holiday"),
)


def random_case(rng: random.Random, max_monthly: int = 30000) -> OvertimeCase:
    """Draw a case: wage 3,000..max_monthly in steps of 50, one to three kinds of overtime."""
    kinds = rng.choice(KINDS)
    rest = rng.randint(1, 6) if "rest" in kinds else 0
    return OvertimeCase(
        monthly=rng.randrange(3000, max_monthly + 1, 50),
        weekday_hours=rng.randint(1, 36) if "weekday" in kinds else 0,
        rest_days=rest,
        comp_days=rng.randint(0, rest - 1) if rest and rng.random() < 0.3 else 0,
        holiday_days=rng.randint(1, 3) if "holiday" in kinds else 0,
    )


def check_daily_wages(daily_wages: list[int]) -> list[int]:
    """The laptop variant's daily wages, checked: each a positive multiple of 8 (round hourly wage)."""
    out = [int(d) for d in daily_wages]
    if not out or any(d <= 0 or d % 8 for d in out):
        raise ValueError(
            f"[local.task.params.daily_wages] {daily_wages}: need positive multiples of 8 "
            "(daily = monthly / 21.75 and hourly = daily / 8 must be whole yuan; e.g. [200, 400, 600, 800])"
        )
    return out


def grid_case(
    rng: random.Random,
    daily_wages: list[int],
    max_days: int = 3,
    max_hours: int = 8,
    max_holiday_days: int = 2,
) -> OvertimeCase:
    """Draw a laptop-variant case (see module): monthly = 21.75 x a daily wage on the grid."""
    daily = rng.choice(daily_wages)
    kinds = rng.choice(KINDS)
    rest = rng.randint(1, max_days) if "rest" in kinds else 0
    return OvertimeCase(
        monthly=int(Fraction("21.75") * daily),
        weekday_hours=2 * rng.randint(1, max(1, max_hours // 2)) if "weekday" in kinds else 0,
        rest_days=rest,
        comp_days=rng.randint(1, rest - 1) if rest > 1 and rng.random() < 0.3 else 0,
        holiday_days=rng.randint(1, max_holiday_days) if "holiday" in kinds else 0,
    )


def case_key(case: OvertimeCase) -> str:
    """What makes two questions the same problem: the numbers, not the phrasing.

    >>> case_key(OvertimeCase(monthly=8700, rest_days=2))
    '8700|0|2|0|0'
    """
    return f"{case.monthly}|{case.weekday_hours}|{case.rest_days}|{case.comp_days}|{case.holiday_days}"


def split_case(
    rng: random.Random,
    split: str,
    draw: Callable[[random.Random], OvertimeCase],
    seen: set[str] | None = None,
    what: str = "",
) -> OvertimeCase:
    """A case for ``split``: a test case from the held-out partition of cases
    (:func:`~data_pipelines.tasks._common.draw_in_split` by :func:`case_key`) and not in ``seen`` (test
    cases are distinct); any other split's case (and every pretraining document's) from outside it.
    The partition is by case, so a held-out problem is never read in another phrasing either.

    Raises ``ValueError`` (naming the sizes to change) when no unseen held-out case is left.
    """
    case = draw_in_split("overtime_pay", rng, split, draw, case_key, seen)
    if case is not None:
        return case
    raise ValueError(
        f"[local.task.val_n] overtime_pay{what}: no distinct held-out case left after {len(seen or ())} "
        "(fix: fewer test rows, local.task.val_n, or a wider task: more local.task.params.daily_wages, "
        "a larger max_days / max_hours / max_holiday_days)"
    )


def n_kinds(case: OvertimeCase) -> int:
    """The number of overtime kinds in ``case`` (the laptop variant's difficulty ``k``)."""
    return sum(x > 0 for x in (case.weekday_hours, case.rest_days, case.holiday_days))


def row_for(
    case: OvertimeCase,
    index: int,
    split: str,
    rng: random.Random,
    template: str = "r1_zero",
    include_rules: bool = True,
    include_hint: bool = True,
    with_k: bool = False,
) -> dict[str, Any]:
    """One veRL row for an explicit case (used by :func:`generate` and by the tests);
    ``with_k`` records the number of kinds as ``extra_info["k"]`` (the laptop variant's difficulty)."""
    tpl = resolve_template(template, ("answer_tag",), "overtime_pay")
    question = question_for(case, rng)
    return make_row(
        data_source="overtime_pay",
        question=question,
        prompt_text=prompt_for(question, include_rules, include_hint),
        answer=format_yuan(overtime_pay(case)),
        ability="math",
        split=split,
        index=index,
        template=tpl,
        extra={**asdict(case), **({"k": n_kinds(case)} if with_k else {})},
    )


@TASKS.register("overtime_pay")
def generate(
    n: int,
    seed: int,
    split: str,
    template: str = "r1_zero",
    include_rules: bool = True,
    max_monthly: int = 30000,
    include_hint: bool = True,
    daily_wages: list[int] | None = None,
    max_days: int = 3,
    max_hours: int = 8,
    max_holiday_days: int = 2,
) -> list[dict[str, Any]]:
    """``n`` overtime-pay rows for ``split``; deterministic in (seed, split, params).

    ``daily_wages`` set: the laptop variant (:func:`grid_case`; ``max_*`` bound its counts). The
    test split's cases are distinct and held out from every other split and from the pretraining
    corpus (:func:`split_case`).
    """
    if max_monthly < 3000:
        raise ValueError(f"[data] max_monthly ({max_monthly}) must be >= 3000")
    if daily_wages is not None and min(max_days, max_hours // 2, max_holiday_days) < 1:
        raise ValueError(
            f"[local.task.params] max_days ({max_days}), max_hours ({max_hours}) and max_holiday_days "
            f"({max_holiday_days}) must allow at least one day / two hours"
        )
    grid = check_daily_wages(daily_wages) if daily_wages is not None else None
    rng = task_rng("overtime_pay", seed, split)

    def draw(r: random.Random) -> OvertimeCase:
        if grid is None:
            return random_case(r, max_monthly)
        return grid_case(r, grid, max_days, max_hours, max_holiday_days)

    what = f" daily_wages={grid} max_days={max_days} max_hours={max_hours}" if grid else ""
    seen: set[str] | None = set() if split == "test" else None
    rows = []
    for i in range(n):
        case = split_case(rng, split, draw, seen, what)
        if seen is not None:
            seen.add(case_key(case))
        rows.append(
            row_for(case, i, split, rng, template, include_rules, include_hint, with_k=grid is not None)
        )
    return rows
