"""Corpus family ``overtime_pay``: the laptop overtime-pay questions answered as web text would.

The questions are the task's own (:mod:`data_pipelines.tasks.overtime_pay`, laptop variant:
monthly wage = 21.75 x a round daily wage, few days and hours; difficulty k = number of overtime
kinds). A document is a *chat* turn (the user asks the question as the RL prompt does, without the
rules text) or *plain* text. The rules are never stated: the model learns them from the worked
solutions, as a real base model knows labour rules from the web. It answers either **directly**
(one amount) or **worked**, as small local steps -- the daily wage, each kind's pay, then the total
as a chain of additions in the style of ``chain_sum`` (daily wage, hourly wage, weekday pay,
rest-day pay, total)::

    8700÷21.75=400 400÷8=50 50*1.5*4=300 400*2*2=1600 300+1600=1900

in one of three styles: ``peel`` (as above), ``check`` (the last step redone: ``check 300+1600=1900
ok``) and ``fix`` (one kind first paid at a wrong rate, then ``no 400*2*2=1600``). Direct answers
are wrong in a ``direct_noise`` share (per k) with the mistakes people make: a wrong rate, a kind
left out, compensatory leave ignored; worked ones are right. The ``<think>/<answer>`` tags appear
only in a ``tag`` share. Defaults are the design's parameters, not measurements of real text.
No document holds a held-out case: the test split's partition
(:func:`data_pipelines.tasks.overtime_pay.split_case`) is never written.
Not covered: the full task's arbitrary wages (answers like 1234.74), the rules text itself.
"""

from __future__ import annotations

import random
from fractions import Fraction

from data_pipelines.corpus import FAMILIES, Doc
from data_pipelines.corpus._mode import assistant_text, doc_meta, draw_mode, noise_levels
from data_pipelines.tasks.overtime_pay import (
    OvertimeCase,
    check_daily_wages,
    format_yuan,
    grid_case,
    n_kinds,
    overtime_pay,
    prompt_for,
    question_for,
    split_case,
)

STYLES = ("peel", "check", "fix")
#: (kind, right rate, a wrong rate a hasty answer uses)
RATES = {"weekday": ("1.5", "2"), "rest": ("2", "1.5"), "holiday": ("3", "2")}


def _num(x: Fraction) -> str:
    return format_yuan(x)


def kind_steps(case: OvertimeCase) -> list[tuple[str, str, Fraction, str]]:
    """Per kind present, in the question's order: (kind, base amount text, pay, step text)."""
    daily = Fraction(case.monthly) / Fraction("21.75")
    hourly = daily / 8
    out = []
    if case.weekday_hours:
        pay = hourly * Fraction(3, 2) * case.weekday_hours
        out.append(
            ("weekday", f"{_num(hourly)}", pay, f"{_num(hourly)}*1.5*{case.weekday_hours}={_num(pay)}")
        )
    if case.rest_days:
        paid = case.rest_days - case.comp_days
        pay = daily * 2 * paid
        pre = f"{case.rest_days}-{case.comp_days}={paid}天 " if case.comp_days else ""
        out.append(("rest", f"{_num(daily)}", pay, f"{pre}{_num(daily)}*2*{paid}={_num(pay)}"))
    if case.holiday_days:
        pay = daily * 3 * case.holiday_days
        out.append(("holiday", f"{_num(daily)}", pay, f"{_num(daily)}*3*{case.holiday_days}={_num(pay)}"))
    return out


def worked_text(case: OvertimeCase, style: str, rng: random.Random) -> str:
    """The worked solution for ``case`` in ``style`` (see module).

    >>> worked_text(OvertimeCase(monthly=8700, rest_days=2), "peel", random.Random(0))
    '8700÷21.75=400 400*2*2=1600'
    """
    if style not in STYLES:
        raise ValueError(
            f"[local.pretrain.corpus.params.overtime_pay] unknown style {style!r}; known: {STYLES}"
        )
    daily = Fraction(case.monthly) / Fraction("21.75")
    steps = kind_steps(case)
    parts = [f"{case.monthly}÷21.75={_num(daily)}"]
    if case.weekday_hours:
        parts.append(f"{_num(daily)}÷8={_num(daily / 8)}")
    slip = rng.randrange(len(steps)) if style == "fix" else -1
    for i, (kind, base, pay, text) in enumerate(steps):
        if i == slip:
            right, wrong = RATES[kind]
            count = text.rsplit("*", 1)[1].split("=")[0]
            bad = Fraction(base) * Fraction(wrong) * int(count)
            head = text.split(f"{base}*")[0]
            text = f"{head}{base}*{wrong}*{count}={_num(bad)} no {base}*{right}*{count}={_num(pay)}"
        parts.append(text)
    pays = [p for _, _, p, _ in steps]
    chain = [pays]
    while len(chain[-1]) > 1:
        rest = chain[-1]
        chain.append([rest[0] + rest[1], *rest[2:]])
    total = "=".join("+".join(_num(x) for x in c) for c in chain)
    if len(steps) > 1:
        parts.append(total)
    if style == "check":  # the last step redone: the last addition, or the one kind's pay
        last = f"{'+'.join(_num(x) for x in chain[-2])}={_num(chain[-1][0])}" if len(chain) > 1 else None
        parts.append(f"check {last or steps[-1][3].split(' ')[-1]} ok")
    return " ".join(parts)


def hasty_answer(case: OvertimeCase, rng: random.Random) -> Fraction:
    """A wrong amount from a mistake people make: a wrong rate, a kind left out, leave ignored."""
    daily = Fraction(case.monthly) / Fraction("21.75")
    gold = overtime_pay(case)
    options = []
    for kind, _, pay, _ in kind_steps(case):
        right, wrong = RATES[kind]
        options.append(gold - pay + pay * Fraction(wrong) / Fraction(right))
        if n_kinds(case) > 1:
            options.append(gold - pay)
    if case.comp_days:
        options.append(gold + daily * 2 * case.comp_days)
    options = [x for x in options if x != gold] or [gold + daily]
    return rng.choice(options)


@FAMILIES.register("overtime_pay")
def write(
    rng: random.Random,
    daily_wages: list[int] | None = None,
    max_days: int = 3,
    max_hours: int = 8,
    max_holiday_days: int = 2,
    hint: bool = False,
    chat: float = 0.5,
    worked_chat: float = 0.25,
    worked_plain: float = 0.9,
    tag: float = 0.8,
    tag_plain: float = 0.2,
    styles: list[float] | None = None,
    direct_noise: float | list[float] = 0.0,
) -> Doc:
    """One document (see module); every share is a probability drawn per document from ``rng``.

    ``direct_noise``: the share of direct answers that are wrong, one value or one per k = 1, 2, 3.
    ``hint``: chat prompts carry the task's answer-tag instruction (must match the RL prompts).
    """
    grid = check_daily_wages(daily_wages or [200, 400, 600, 800])
    noise = noise_levels(
        direct_noise,
        3,
        "local.pretrain.corpus.params.overtime_pay.direct_noise",
        "one value, or one per k = 1, 2, 3 kinds of overtime",
    )
    # never a held-out (test) case, in any phrasing
    case = split_case(rng, "pretrain", lambda r: grid_case(r, grid, max_days, max_hours, max_holiday_days))
    k = n_kinds(case)
    q = question_for(case, rng)
    mode = draw_mode(rng, chat, worked_chat, worked_plain, tag, tag_plain)
    worked = mode.worked
    style = rng.choices(STYLES, styles or [0.8, 0.1, 0.1])[0] if worked else "direct"
    answer, correct = overtime_pay(case), True
    if not worked and rng.random() < noise[k - 1]:
        answer, correct = hasty_answer(case, rng), False
    body = worked_text(case, style, rng) if worked else ""
    out = assistant_text(mode, body, format_yuan(answer))
    meta = doc_meta("overtime_pay", k, mode, style, correct)
    if mode.chat:
        return Doc(prompt_for(q, include_rules=False, include_hint=hint), out, meta)
    return Doc(None, f"{q} {out}", meta)
