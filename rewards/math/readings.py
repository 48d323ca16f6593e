"""Answers read by rules before any structure: clock times, ratios, choice letters, numbers, words.

What it does: ``special_forms`` decides (True/False) the forms with one reading -- a clock time is
never a number (1:00 is not 12:00), ratios, a choice letter (two options are no answer), numbers
written as words or with a decimal comma, word answers (a leading article dropped; "Yes, <reason>"
is "Yes" unless the reason hedges or offers another answer) -- and returns None for everything else;
``surroundings`` drops what a reader drops around an answer (an approximation after an exact value,
a breakdown in brackets after a number); ``empty`` recognises "no solution" answers.
What it does not do: structure (sets, tuples, matrices) or algebra: ``rewards.math.equiv``.
"""

from __future__ import annotations

import re

from rewards.math import scalars
from rewards.math.forms import clock_time, ratio
from rewards.math.normalize import parse_number
from rewards.math.scalars import num_equal

_EMPTY = {
    r"\emptyset",
    r"\{\}",
    "{}",
    "none",
    "nosolution",
    "nosolutions",
    "norealsolution",
    "norealsolutions",
    "therearenosolutions",
    "thereisnosolution",
    "无解",
}
_CHOICE_GOLD = re.compile(r"\(?([A-E])\)?")
_CHOICE_PRED = re.compile(
    r"\(([A-E])\)(?:\s.*)?|([A-E])(?:[.:)]\s*.*)?|(?:option|choice)\s*\(?([A-E])\)?",
    re.IGNORECASE | re.DOTALL,
)
_SECOND_CHOICE = re.compile(r"\([A-E]\)|\b[A-E]\b|\b(?:or|and)\b", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]{2,}(?: [A-Za-z'-]+)*")  # "Monday", "even", "not possible"
_ARTICLE = re.compile(r"^(?:the|a|an)\s+(?=\S)")
_YES_NO = re.compile(r"^\s*(yes|no)\s*[,.;:!\-–—]\s*(.+)$", re.IGNORECASE | re.DOTALL)
_OTHER_ANSWER = re.compile(
    r"\b(?:yes|no|or|unless|except|maybe|perhaps|possibly|probably|depends|sometimes|if)\b", re.IGNORECASE
)
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,(?:\d{1,2}|\d{4,})")  # 3,14: a decimal comma (3,140 groups thousands)
_APPROX = re.compile(r"\s*(?:\\approx|≈)\s*[+-]?\d[\d.]*\s*$")  # "\frac{1}{3} \approx 0.33": the exact part
_BREAKDOWN = re.compile(r"^(.*?\S)\s*[(（]([^()（）]*)[)）]$")  # "1600 (400 x 4)"


def empty(s: str) -> bool:
    return re.sub(r"[\s.]", "", s).lower() in _EMPTY


def special_forms(p: str, g: str) -> bool | None:
    """Clock times, ratios, choices, words: decided here (True/False), or None to go on."""
    tp, tg = clock_time(p), clock_time(g)
    if tp is not None or tg is not None:
        return tp == tg  # 1:00 is not 12:00, and a time is never a number
    rp, rg = ratio(p), ratio(g)
    if rp is not None and rg is not None:
        return rp == rg
    if m := _CHOICE_GOLD.fullmatch(g):
        pm = _CHOICE_PRED.fullmatch(p)
        if pm is None:
            return False
        k = next(i for i in (1, 2, 3) if pm.group(i))
        if _SECOND_CHOICE.search(p[pm.end(k) :]):
            return False  # "(C) or (A)": two options
        return pm.group(k).upper() == m.group(1)
    pn, gn = parse_number(p), parse_number(g)
    if gn is not None and "." in g and _DECIMAL_COMMA.fullmatch(p):  # 3,14 for the decimal 3.14
        pn = parse_number(p.replace(",", "."))
    if pn is not None and gn is not None:  # "five" vs "5", "One thousand ..." vs "1625"
        return num_equal(pn, gn, scalars.rel_tol())
    if _WORDS.fullmatch(g) or g.lower() in ("yes", "no"):
        return _letters(_yes_no(p, g)) == _letters(g)
    return None


def _letters(s: str) -> str:
    """A word answer as a reader compares it: lower case, letters and digits, no leading article."""
    return re.sub(r"[^a-z0-9]", "", _ARTICLE.sub("", s.strip().lower()))


def _yes_no(p: str, g: str) -> str:
    """``Yes, it is possible.`` answers a yes/no question with ``Yes`` -- unless the rest offers another
    answer or hedges (``Yes or no``, ``No, unless n is odd``)."""
    m = _YES_NO.match(p)
    if m and g.strip().lower() in ("yes", "no") and not _OTHER_ANSWER.search(m.group(2)):
        return m.group(1)
    return p


def surroundings(p: str, g: str) -> tuple[str, str]:
    """What a reader drops: an approximation after an exact value, a breakdown in brackets after a number."""
    p, g = _APPROX.sub("", p) or p, _APPROX.sub("", g) or g
    if parse_number(g) is not None and (m := _BREAKDOWN.match(p)) and parse_number(m.group(1)) is not None:
        if re.fullmatch(r"[\d\s.,+\-*/×÷=\\a-z{}^()]*", m.group(2)) and re.search(r"\d", m.group(2)):
            p = m.group(1)
    return p, g
