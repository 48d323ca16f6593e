"""Exact parsing of an answer that is a plain number (``parse_number`` -> ``Fraction``).

What it does: integers, decimals, thousands separators in valid groupings (``1,600``; ``32, 349`` is two
numbers), SI groups (``12 345``), ``\\frac``/``a/b``, mixed numbers (``2\\frac{1}{2}``, ``1 1/2``), repeating
decimals, ordinals, scientific notation, percent and number words. Pure Python, bounded
(``MAX_DIGITS``). What it does not do: clean LaTeX first (``rewards.math.normalize.clean`` does, and
re-exports this function) or any algebra (``rewards.math.symbolic``).
"""

from __future__ import annotations

import re
from fractions import Fraction

from rewards.math.forms import words_to_number

MAX_DIGITS = 400  # longer digit strings are compared as strings, never converted
_SPACED_COMMA = re.compile(r",\s")
_SCI = re.compile(
    r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?:(?:\\times|\\cdot|\*|×|x)\s*10\s*\^\s*\{?\s*([+-]?\d{1,4})\s*\}?|[eE]([+-]?\d{1,4}))"
)
_FRAC = re.compile(r"([+-]?)\\frac\{\s*([+-]?[\d.]+)\s*\}\{\s*([+-]?[\d.]+)\s*\}")
_SLASH = re.compile(r"([+-]?[\d.]+)\s*/\s*([+-]?[\d.]+)")
_ORDINAL = re.compile(r"(\d+)\s*(?:\^\s*\{?\s*)?(?:st|nd|rd|th)\s*\}?", re.IGNORECASE)  # 21st, 5^{th}
_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\{(\d+)\}")  # 0.1\overline{6} = 1/6
_DIGIT_SPACE = re.compile(r"\d\s+\d")
_SPACED_MIXED = re.compile(r"([+-]?)(\d+)\s+(\d+)\s*/\s*(\d+)")  # 1 1/2
_SI_GROUPS = re.compile(r"[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?")  # 12 345 (SI thousands)
NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
MIXED = re.compile(r"(\d+)\s*\\frac\{\s*(\d+)\s*\}\{\s*(\d+)\s*\}")


def _spaced_digits(s: str) -> tuple[Fraction, bool] | None:
    """``1 1/2`` (a mixed number) and ``12 345`` (SI groups of three); other spaced digits are no number."""
    if m := _SPACED_MIXED.fullmatch(s):
        whole, num, den = int(m.group(2)), int(m.group(3)), int(m.group(4))
        if 0 < num < den:
            val = whole + Fraction(num, den)
            return (-val if m.group(1) == "-" else val), False
        return None
    pct = s.endswith("%")
    body = s[:-2] if s.endswith("\\%") else s[:-1] if pct else s
    if _SI_GROUPS.fullmatch(body.strip()) and (v := _dec(body.replace(" ", ""))) is not None:
        return v, pct
    return None


def _dec(tok: str) -> Fraction | None:
    digits = sum(c.isdigit() for c in tok)
    if digits == 0 or digits > MAX_DIGITS:
        return None
    try:
        return Fraction(tok)
    except (ValueError, ZeroDivisionError):
        return None


def parse_number(s: str, allow_thousands: bool = True) -> tuple[Fraction, bool] | None:
    r"""Parse a cleaned answer that is a plain number; return ``(value, is_percent)``.

    Exact (``Fraction``) -- no float tolerance. ``None`` when ``s`` is not a plain number.

    >>> parse_number("1,600.00")
    (Fraction(1600, 1), False)
    >>> parse_number(r"-\frac{3}{4}")
    (Fraction(-3, 4), False)
    >>> parse_number(r"12.5\%")
    (Fraction(25, 2), True)
    >>> parse_number(r"2\frac{1}{2}")
    (Fraction(5, 2), False)
    >>> parse_number(r"1.5\times 10^{3}")
    (Fraction(1500, 1), False)
    >>> parse_number("x+1") is None
    True
    """
    s = s.strip()
    if s and s[0].isalpha() and (w := words_to_number(s)) is not None:
        return Fraction(w), False
    if _DIGIT_SPACE.search(s):  # digits apart: a mixed number, SI thousands groups, else not one number
        return _spaced_digits(s)
    if m := _ORDINAL.fullmatch(s):
        return Fraction(int(m.group(1))), False
    spaced_commas = bool(_SPACED_COMMA.search(s))  # "32, 349" is two numbers, never 32349
    s = s.replace(" ", "")
    if len(s) > 2 * MAX_DIGITS or not s:
        return None
    pct = False
    if s.endswith("\\%") or s.endswith("%") or s.endswith("％"):
        pct = True
        s = s[:-2] if s.endswith("\\%") else s[:-1]
    if s.endswith("\\%"):
        return None
    if s.startswith("+"):
        s = s[1:]
    neg = False
    if s.startswith("-") and not s.startswith("--"):
        neg, s = True, s[1:]
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    val: Fraction | None = None
    if NUMBER.fullmatch(s):
        val = _dec(s)
    elif m := _REPEATING.fullmatch(s):
        whole, fixed, rep = m.group(1) or "0", m.group(2), m.group(3)
        if len(fixed) + len(rep) <= MAX_DIGITS:
            val = int(whole) + Fraction(
                int(fixed + rep) - int(fixed or "0"), 10 ** len(fixed) * (10 ** len(rep) - 1)
            )
    elif allow_thousands and not spaced_commas and THOUSANDS.fullmatch(s):
        val = _dec(s.replace(",", ""))
    elif m := _SCI.fullmatch(s):
        base, exp = _dec(m.group(1)), int(m.group(2) or m.group(3))
        if base is not None and abs(exp) <= 400:
            val = base * Fraction(10) ** exp
    elif m := _FRAC.fullmatch(s):
        num, den = _dec(m.group(2)), _dec(m.group(3))
        if num is not None and den:
            val = num / den * (-1 if m.group(1) == "-" else 1)
    elif m := MIXED.fullmatch(s):
        whole, num, den = _dec(m.group(1)), _dec(m.group(2)), _dec(m.group(3))
        if whole is not None and num is not None and den and num < den:
            val = whole + num / den
    elif m := _SLASH.fullmatch(s):
        num, den = _dec(m.group(1)), _dec(m.group(2))
        if num is not None and den:
            val = num / den
    if val is None:
        return None
    return (-val if neg else val), pct
