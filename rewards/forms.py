r"""Answer forms read by rules, not by SymPy: number words, clock times and ratios.

What it does:
- ``words_to_number``: English number words to an integer (``"One thousand six hundred twenty-five"``
  -> 1625; ``"minus twelve"`` -> -12). The whole string must be number words.
- ``clock_time``: ``"12:00"``, ``"1:05 pm"``, ``"13:30:15"`` -> ``(h, m, s, suffix)``; two times are
  the same time only when they name the same moment (``1:00`` is not ``12:00``; ``1:00 pm`` is
  ``13:00``).
- ``ratio``: ``"20:3"`` -> ``Fraction(20, 3)`` for ratio-vs-ratio comparison (a ``a:b`` that is not a
  clock time; a ratio is never equal to a bare number here).

What it does not do: ordinals ("fifteenth"), fractions in words ("three quarters"), other
languages, or time zones / durations ("1 h 30 min" is a quantity, not a clock time).
"""

from __future__ import annotations

import re
from fractions import Fraction

_UNITS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split()
    )
}
_TENS = {
    w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_WORD_TOKENS = re.compile(r"[a-z]+")
_TIME = re.compile(
    r"(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\s*(?:\\text\{\s*)?([ap])?\.?\s*(?:m\.?)?\s*\}?",
    re.IGNORECASE,
)
_RATIO = re.compile(r"(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)")


def words_to_number(s: str) -> int | None:
    """Integer named by English number words, or None if ``s`` is not only number words.

    >>> words_to_number("One thousand six hundred twenty-five")
    1625
    >>> words_to_number("two hundred and five"), words_to_number("minus twelve")
    (205, -12)
    >>> words_to_number("five apples") is None
    True
    """
    low = s.strip().lower().replace("-", " ").replace(",", " ")
    if not low or len(low) > 200:
        return None
    toks = _WORD_TOKENS.findall(low)
    if not toks or "".join(toks) != re.sub(r"\s+", "", low):
        return None
    sign = 1
    if toks[0] in ("minus", "negative"):
        sign, toks = -1, toks[1:]
    total = current = 0
    seen = False
    for t in toks:
        if t == "and" and seen:
            continue
        if t in _UNITS:
            current += _UNITS[t]
        elif t in _TENS:
            current += _TENS[t]
        elif t == "hundred" and seen:
            current = max(current, 1) * 100
        elif t in _SCALES and seen:
            total += max(current, 1) * _SCALES[t]
            current = 0
        else:
            return None
        seen = True
    return sign * (total + current) if seen else None


def clock_time(s: str) -> tuple[int, int, int] | None:
    """``(hour 0-23 when am/pm is given, else as written, minute, second)`` of a clock time, or None.

    >>> clock_time("12:00"), clock_time("1:00"), clock_time("1:05 p.m."), clock_time("12:30 am")
    ((12, 0, 0), (1, 0, 0), (13, 5, 0), (0, 30, 0))
    >>> clock_time("20:3") is None
    True
    """
    m = _TIME.fullmatch(s.strip())
    if not m:
        return None
    h, mi, sec, ap = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), (m.group(4) or "").lower()
    if ap:
        if not 1 <= h <= 12:
            return None
        h = (h % 12) + (12 if ap == "p" else 0)
    elif h > 23:
        return None
    return h, mi, sec


def ratio(s: str) -> Fraction | None:
    """Value of an ``a:b`` ratio that is not a clock time, or None.

    >>> ratio("20:3"), ratio("2 : 1")
    (Fraction(20, 3), Fraction(2, 1))
    >>> ratio("12:00") is None
    True
    """
    if clock_time(s) is not None:
        return None
    m = _RATIO.fullmatch(s.strip())
    if not m or float(m.group(2)) == 0:
        return None
    return Fraction(m.group(1)) / Fraction(m.group(2))
