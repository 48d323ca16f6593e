r"""Answer forms read by rules, not by SymPy: number words, clock times, ratios, phrases, qualifiers.

What it does:
- ``words_to_number``: English number words to an integer (``"One thousand six hundred twenty-five"``
  -> 1625; ``"minus twelve"`` -> -12; ordinals: ``"twenty-first"`` -> 21). The whole string must be
  number words.
- ``clock_time``: ``"12:00"``, ``"1:05 pm"``, ``"13:30:15"`` -> ``(h, m, s, suffix)``; two times are
  the same time only when they name the same moment (``1:00`` is not ``12:00``; ``1:00 pm`` is
  ``13:00``).
- ``ratio``: ``"20:3"``, ``"1:2:3"`` -> the terms scaled to a first term of 1, for ratio-vs-ratio
  comparison (``2:4:6`` is ``1:2:3``; not a clock time; a ratio is never equal to a bare number here).
- ``phrase_value``: the one value of a short phrase (``"The minimum value is 5"`` -> ``5``), unless a
  word there could change it ("at least", "or", "not", "million", ...).
- ``qualifiers`` / ``rename_parameter``: trailing domain qualifiers (``, k \in \mathbb{Z}``,
  ``for all x``) dropped, and an integer parameter given the gold's name.
- ``DMS`` / ``dms``: an angle in degrees and minutes (and seconds) -- ``60^\circ 42'``, ``12°30'15''``
  -- as its exact number of degrees (``\frac{607}{10}``), for ``rewards.math.normalize.clean``.

What it does not do: fractions in words ("three quarters", "one third"), other
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
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fifth": 5, "eighth": 8, "ninth": 9, "twelfth": 12,
    **{w + "th": n for w, n in _UNITS.items() if n in (4, 6, 7, 10, 11) or 13 <= n <= 19},
    **{w[:-1] + "ieth": n for w, n in _TENS.items()},
    "hundredth": 100, "thousandth": 1000, "millionth": 10**6,
}  # fmt: skip
_WORD_TOKENS = re.compile(r"[a-z]+")
_TIME = re.compile(
    r"(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\s*(?:\\text\{\s*)?([ap])?\.?\s*(?:m\.?)?\s*\}?",
    re.IGNORECASE,
)
_RATIO = re.compile(r"\d+(?:\.\d+)?(?:\s*:\s*\d+(?:\.\d+)?)+")


def words_to_number(s: str) -> int | None:
    """Integer named by English number words, or None if ``s`` is not only number words.

    >>> words_to_number("One thousand six hundred twenty-five")
    1625
    >>> words_to_number("two hundred and five"), words_to_number("minus twelve")
    (205, -12)
    >>> words_to_number("five apples") is None
    True
    >>> words_to_number("twenty-first"), words_to_number("the twelfth"), words_to_number("one third") is None
    (21, 12, True)
    """
    low = s.strip().lower().replace("-", " ").replace(",", " ")
    if not low or len(low) > 200:
        return None
    toks = _WORD_TOKENS.findall(low)
    if not toks or "".join(toks) != re.sub(r"\s+", "", low):
        return None
    sign = 1
    if toks[0] == "the" and len(toks) > 1:  # "the twelfth"
        toks = toks[1:]
    if toks[0] in ("minus", "negative"):
        sign, toks = -1, toks[1:]
    if toks and toks[-1] in _ORDINALS:  # an ordinal ends a number: "twenty-first", never "one third"
        if len(toks) > 1 and toks[-2] not in _TENS and toks[-2] not in ("hundred", "and", *_SCALES):
            return None
        rest = words_to_number(" ".join(toks[:-1])) if len(toks) > 1 else 0
        return None if rest is None else sign * (rest + _ORDINALS[toks[-1]])
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


def ratio(s: str) -> tuple[Fraction, ...] | None:
    """An ``a:b`` or ``a:b:c`` ratio that is not a clock time, scaled so its first term is 1; else None.

    >>> ratio("20:3"), ratio("2 : 4 : 6")
    ((Fraction(1, 1), Fraction(3, 20)), (Fraction(1, 1), Fraction(2, 1), Fraction(3, 1)))
    >>> ratio("12:00") is None, ratio("0:1") is None
    (True, True)
    """
    if clock_time(s) is not None:
        return None
    m = _RATIO.fullmatch(s.strip())
    if not m:
        return None
    terms = [Fraction(t) for t in re.split(r"\s*:\s*", s.strip())]
    if terms[0] == 0:
        return None
    return tuple(t / terms[0] for t in terms)


_PROSE_WORD = re.compile(r"[A-Za-z][a-z'-]+[.,:;!]?")  # AB is a name, not a word
# words that change or qualify the value next to them: a phrase holding one is not read
_CHANGES = frozenset(
    """not no never none neither nor except unless if when whenever while at least most more less greater
    fewer smaller larger bigger higher lower than or and between to up from over under above below within
    beyond approximately approx about around nearly almost roughly plus minus times divided multiplied per
    each every half quarter double twice triple squared cubed square cube root roots power reciprocal inverse
    negative positive opposite sum product difference quotient percent hundred hundreds thousand thousands
    million millions billion billions dozen dozens mod modulo maybe perhaps possibly probably""".split()
)
MAX_PHRASE_WORDS = 8


def phrase_value(s: str) -> str | None:
    """The one value of a short phrase (``"The minimum value is 5"`` -> ``"5"``; ``"15th day"`` -> ``"15th"``).

    None when ``s`` is not words around one contiguous value (a digit, a LaTeX command or ``=`` in it),
    or a word could change the value ("at least 5", "5 or 6", "not 5", "5 million").

    >>> phrase_value("The minimum value is 5"), phrase_value("only x=0"), phrase_value("Day 15")
    ('5', 'x=0', '15')
    >>> phrase_value("at least 5") is None, phrase_value("5 when n is odd") is None, phrase_value("42") is None
    (True, True, True)
    """
    toks = s.split()
    if len(toks) < 2:
        return None
    prose = [
        bool(_PROSE_WORD.fullmatch(t)) and words_to_number(t.rstrip(".,:;!")) is None and "\\" not in t
        for t in toks
    ]
    if not any(prose) or all(prose) or sum(prose) > MAX_PHRASE_WORDS:
        return None
    if any(t.rstrip(".,:;!").lower() in _CHANGES for t, w in zip(toks, prose, strict=True) if w):
        return None
    first = prose.index(False)
    last = len(prose) - 1 - prose[::-1].index(False)
    if not all(not w for w in prose[first : last + 1]):
        return None  # prose between two values
    value = " ".join(toks[first : last + 1]).rstrip(".,:;")
    if value.startswith("="):
        return None
    return value if re.search(r"[\d\\=]", value) or words_to_number(value) is not None else None


_SEP = r"(?:[,;]\s*|\(\s*|(?:where|for|with)\s+)"
_INTEGERS = r"\\mathbb\s*\{\s*[ZN]\s*\}|\\mathbf\s*\{\s*[ZN]\s*\}|[ZN](?![a-zA-Z])"
_INT_PARAM = re.compile(
    rf"\s*{_SEP}(?:\\forall\s*)?([a-zA-Z])\s*(?:\\in\s*(?:{_INTEGERS})|is an? (?:integer|natural number))\s*\)?\s*$"
)
_REAL_DOMAIN = re.compile(
    rf"\s*{_SEP}(?:\\forall\s*[a-zA-Z]\s*(?:\\in\s*\\mathbb\s*\{{\s*R\s*\}})?|all(?: real(?: numbers?)?)? [a-zA-Z]"
    rf"|[a-zA-Z]\s*\\in\s*\\mathbb\s*\{{\s*R\s*\}})\s*\)?\s*$"
)
_LETTER = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z](?![a-zA-Z])")


def qualifiers(s: str) -> tuple[str, set[str]]:
    r"""Drop trailing domain qualifiers; return the rest and the integer parameters they declared.

    >>> qualifiers(r"\frac{\pi}{4} + k\pi, k \in \mathbb{Z}"), qualifiers("f(x) = 2x for all x")
    (('\\frac{\\pi}{4} + k\\pi', {'k'}), ('f(x) = 2x', set()))
    >>> qualifiers(r"x \in \mathbb{R}")  # the whole answer is no qualifier
    ('x \\in \\mathbb{R}', set())
    """
    params: set[str] = set()
    for _ in range(3):
        m = _INT_PARAM.search(s) or _REAL_DOMAIN.search(s)
        if m is None or not s[: m.start()].strip():
            break
        if m.re is _INT_PARAM:
            params.add(m.group(1))
        s = s[: m.start()].strip()
    return s, params


def rename_parameter(p: str, g: str, pp: set[str], gp: set[str]) -> str:
    r"""Give the prediction's integer parameter the gold's name (``2k\pi`` vs ``2n\pi, n \in \mathbb{Z}``).

    The parameter is the declared one, else the one letter only that side has; at least one side must
    have declared it.

    >>> rename_parameter(r"2k\pi", r"2n\pi", set(), {"n"})
    '2n\\pi'
    """
    if not (pp or gp):
        return p
    lp, lg = set(_LETTER.findall(p)), set(_LETTER.findall(g))
    src = pp if len(pp) == 1 else (lp - lg if not pp else set())
    dst = gp if len(gp) == 1 else (lg - lp if not gp else set())
    if len(src) != 1 or len(dst) != 1 or src == dst:
        return p
    a, b = next(iter(src)), next(iter(dst))
    return re.sub(rf"(?<![\\a-zA-Z]){a}(?![a-zA-Z])", b, p)


_DEG = r"\s*(?:\^\s*\{?\s*\\(?:circ|textcirc|degree)\s*\}?|°|\\(?:textdegree|degree)(?![a-zA-Z]))\s*"
DMS = re.compile(  # degrees, minutes and optionally seconds: 60^\circ 42' / 12°30'15''
    r"(?<![\d.])(\d+(?:\.\d+)?)" + _DEG + r"(\d+(?:\.\d+)?)\s*(?:'|′|\\prime|\^\s*\{?\s*\\prime\s*\}?)(?!')"
    r"(?:\s*(\d+(?:\.\d+)?)\s*(?:''|″|\\prime\s*\\prime|\^\s*\{?\s*\\prime\s*\\prime\s*\}?))?"
)


def dms(m: re.Match[str]) -> str:
    r"""A ``DMS`` match -> the exact number of degrees: ``60^\circ 42'`` -> ``\frac{607}{10}``."""
    total = Fraction(m.group(1)) + Fraction(m.group(2)) / 60 + Fraction(m.group(3) or 0) / 3600
    return (
        str(total.numerator)
        if total.denominator == 1
        else f"\\frac{{{total.numerator}}}{{{total.denominator}}}"
    )
