"""Tag-answer tasks: ``arithmetic`` (the embedded laptop task) and ``overtime_pay`` (the seed's task).

What it does:
- ``arithmetic``: credited iff the response has exactly one ``<answer>...</answer>``, not inside
  the reasoning, whose stripped content is the gold integer (optional ``-``; leading zeros are
  allowed since the task's own trace pads digits -- ``01278`` is 1278; ``1,278``, ``+1278``,
  ``1278.0`` and inner spaces are refused). Pure regex, a few microseconds, no worker. With
  ``answer_mode="flexible"`` (``extra_info["answer_mode"]``, set by ``compute_score``) a response
  with no answer tag at all is also credited when everything after its one ``</think>`` is the
  gold integer (a bare final answer); several tags still score 0.
- ``overtime_pay``: exactly one ``<answer>`` tag holding an amount in yuan, written as money is written
  (``1600``, ``1,600``, ``1600.00 元``, ``¥1600``, ``人民币1600元``, ``约1600元``, a breakdown in brackets
  after the total: ``1600元（8700÷21.75×2×2）``); compared after rounding both to 0.01 yuan (1600.1
  is not 1600, "about" or not).
  The rule the gold follows: daily wage = monthly / 21.75 (hourly = daily / 8); weekday overtime
  150% per hour, rest day without compensatory leave 200%, statutory holiday 300%
  (``overtime_gold`` recomputes it independently of the generator).

What it does not do: read ``\\boxed{}`` or ``Answer:`` lines (these tasks require the tag).
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from rewards.registry import register, result

_INT = re.compile(r"-?\d{1,200}")
_ABOUT = r"(?:约为|大约|约|approximately|approx\.?|about|≈)?"
# how money is written: "人民币1,600元", "约1600.00元", "¥1600", "1600元（8700÷21.75×2×2）"
_YUAN = re.compile(
    rf"\s*{_ABOUT}\s*(?:人民币|[¥￥]|RMB|CNY)?\s*{_ABOUT}\s*"
    r"([+-]?(?:\d{1,3}(?:,\d{3})+|\d{1,15})(?:\.\d{1,6})?)\s*(?:元整|元|yuan|RMB|CNY|块)?\s*"
    r"(?:[(（](?=[^()（）]*[×÷*/+=-])[\d\s.,+\-*/×÷=·%元天小时倍xX]{1,200}[)）])?\s*[。.]?\s*",
    re.IGNORECASE,
)
_RATES = {"weekday": Decimal("1.5"), "rest_day": Decimal("2"), "holiday": Decimal("3")}
_CENT = Decimal("0.01")


def single_tag_answer(text: str) -> str | None:
    """Content of the one ``<answer>`` tag that follows the reasoning, or None.

    >>> single_tag_answer("<think>x</think><answer> 7 </answer>")
    ' 7 '
    >>> single_tag_answer("<think><answer>7</answer></think>") is None
    True
    """
    if text.count("<answer>") != 1 or text.count("</answer>") != 1:
        return None
    a = text.find("<answer>")
    b = text.find("</answer>")
    if b < a:
        return None
    close = text.rfind("</think>")
    if (close >= 0 and a < close) or (close < 0 and "<think>" in text):
        return None
    return text[a + 8 : b]


def _bare_answer(text: str) -> str | None:
    """Flexible mode: the text after the one ``</think>`` when no answer tag appears anywhere.

    >>> _bare_answer("<think>4+4+0=08</think> 8"), _bare_answer("<think>x</think><answer>8")
    (' 8', None)
    """
    if "<answer>" in text or "</answer>" in text or text.count("</think>") != 1:
        return None
    return text.split("</think>", 1)[1]


@register("arithmetic")
def verify_arithmetic(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Integer in the single answer tag equals the gold integer.

    >>> verify_arithmetic("<think>4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>", "1278", {}, 1.0)["acc"]
    True
    >>> verify_arithmetic("<answer>1278</answer><answer>1279</answer>", "1278", {}, 1.0)["acc"]
    False
    """
    inner = single_tag_answer(solution_str)
    if inner is None and extra_info.get("answer_mode") == "flexible":
        inner = _bare_answer(solution_str)
    if inner is None:
        return result(False, None, "need exactly one <answer> tag after the reasoning")
    pred = inner.strip()
    gold = str(ground_truth).strip()
    if not _INT.fullmatch(pred):
        return result(False, pred or None, "answer is not an integer")
    if not _INT.fullmatch(gold):
        return result(False, pred, "gold is not an integer")
    return result(int(pred) == int(gold), str(int(pred)))


def _yuan(s: str) -> Decimal | None:
    m = _YUAN.fullmatch(s.strip())
    if not m:
        return None
    try:
        return Decimal(m.group(1).replace(",", "")).quantize(_CENT, rounding=ROUND_HALF_UP)
    except InvalidOperation:
        return None


def overtime_gold(
    monthly: float | str,
    weekday_hours: float | str = 0,
    rest_days: float | str = 0,
    comp_days: float | str = 0,
    holiday_days: float | str = 0,
) -> str:
    """Overtime pay in yuan, 2 decimals, computed independently of the data generator (to re-check golds).

    daily = monthly / 21.75, hourly = daily / 8; weekday hours x 150%, rest days without
    compensatory leave x 200%, statutory holidays x 300%.

    >>> overtime_gold(8700, rest_days=2)
    '1600.00'
    """
    d = {
        k: Decimal(str(v)) for k, v in dict(w=weekday_hours, r=rest_days, c=comp_days, h=holiday_days).items()
    }
    if not 0 <= d["c"] <= d["r"]:
        raise ValueError(f"comp_days ({comp_days}) must lie in 0..rest_days ({rest_days})")
    daily = Decimal(str(monthly)) / Decimal("21.75")
    pay = (
        daily / 8 * _RATES["weekday"] * d["w"]
        + daily * _RATES["rest_day"] * (d["r"] - d["c"])
        + daily * _RATES["holiday"] * d["h"]
    )
    return str(pay.quantize(_CENT, rounding=ROUND_HALF_UP))


@register("overtime_pay")
def verify_overtime(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Amount in the single answer tag equals the gold at 0.01-yuan precision.

    >>> verify_overtime("<think>8700/21.75=400, 400*2*2</think><answer>1,600 元</answer>", "1600.00", {}, 1.0)["acc"]
    True
    >>> verify_overtime("<answer>1600.1</answer>", "1600", {}, 1.0)["acc"]
    False
    >>> verify_overtime("<answer>人民币1,600元（8700÷21.75×2×2）</answer>", "1600", {}, 1.0)["acc"]
    True
    """
    inner = single_tag_answer(solution_str)
    if inner is None and extra_info.get("answer_mode") == "flexible":
        inner = _bare_answer(solution_str)
    if inner is None:
        return result(False, None, "need exactly one <answer> tag after the reasoning")
    pred, gold = _yuan(inner), _yuan(str(ground_truth))
    if pred is None:
        return result(False, None, "answer is not an amount in yuan")
    if gold is None:
        return result(False, str(pred), "gold is not an amount")
    return result(pred == gold, str(pred))
