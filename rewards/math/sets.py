r"""Sets written in different notations, brought to one: intervals, unions, set-builder, ``\in``, ``\pm``.

What it does (string level, on answers already cleaned by ``rewards.math.normalize``):
- ``as_interval_set``: a condition or set in one variable -> an interval / union string:
  ``0 < x \leq 1`` -> ``(0,1]``; ``x > 3`` / ``3 < x`` -> ``(3,\infty)``; ``x<a or x>b`` -> a union;
  ``x \neq 1`` -> ``(-\infty,1)\cup(1,\infty)``; ``\{x \mid -1<x<1\}`` and ``x \in [0.5,\infty)`` ->
  their set; ``\mathbb{R}`` / "all real numbers" -> ``(-\infty,\infty)``; ``\mathbb{R}\setminus\{1\}``;
  ``x > 1 \text{ and } x < 3`` -> ``(1,3)``; ``|x - 1| < 3`` -> ``(-2,4)``. Conditions joined by "or" /
  "and" must be on one variable. None when it is not such a set.
- ``iso_intervals``: ISO notation, a reversed bracket is an open end (``]0, 1[`` -> ``(0, 1)``).
- ``expand_pm``: ``\pm`` inside list / set / tuple items -> every sign choice
  (``1\pm\sqrt5`` -> ``1+\sqrt5``, ``1-\sqrt5``; ``(\pm 2, 0)`` -> ``(2,0)``, ``(-2,0)``).

What it does not do: compare endpoints (``rewards.math.equiv`` does, exactly), intersect or simplify sets
(``(0,2)\cup(1,3)`` is not ``(0,3)``), or relations with a coefficient on the variable
(``-x > -1`` is compared as a relation by ``rewards.math.symbolic``, not turned into a set).
"""

from __future__ import annotations

import itertools
import re

from rewards.math.normalize import parse_number

_VAR = r"(?:[a-zA-Z]|\\[a-zA-Z]+)(?:_\{?\w+\}?)?"
_OPS = r"<|>|\\leq|\\geq"
_CHAIN = re.compile(
    rf"^(?:(?P<lo>[^<>=\\]+?|[^<>=]*\\[a-z]+[^<>=]*?)(?P<lop>{_OPS}))?(?P<var>{_VAR})(?:(?P<hop>{_OPS})(?P<hi>[^<>=]+))?$"
)
_FLIP = {"<": ">", ">": "<", "\\leq": "\\geq", "\\geq": "\\leq"}
_OPEN = {"<": "(", ">": "(", "\\leq": "[", "\\geq": "["}
_CLOSE = {"<": ")", ">": ")", "\\leq": "]", "\\geq": "]"}
_BUILDER = re.compile(rf"^\\\{{\s*{_VAR}\s*(?:\\mid|\||:)\s*(.+?)\s*\\\}}$")
_IN = re.compile(rf"^{_VAR}\s*\\in\s*(?![a-zA-Z])(.+)$")
_NE = re.compile(rf"^{_VAR}\s*\\ne\s*([^<>=]+)$")
_OR = re.compile(r"\s*(?:\\text\{\s*or\s*\}|\\lor|\bor\b|\\vee)\s*", re.IGNORECASE)
_REALS = re.compile(
    r"^(?:\\mathbb\{R\}|\(-\\infty,\s*\+?\\infty\)|(?:all|any|every) real(?: numbers?| values?)?|all reals)$",
    re.I,
)
_AND = re.compile(r"\s*(?:\\text\{\s*and\s*\}|\\land|\\wedge|\band\b)\s*", re.IGNORECASE)
_MINUS = re.compile(r"^\\mathbb\{R\}\s*(?:\\setminus|\\backslash|\\smallsetminus|-)\s*\\\{(.+)\\\}$")
_ABS = re.compile(
    r"^\|\s*([a-zA-Z])\s*(?:([+-])\s*([^|]+?))?\s*\|\s*(<|>|\\leq|\\geq)\s*(.+)$"
)  # |x - 1| < 3
_ISO = re.compile(r"(?<!\\)([\[\]])\s*([^\[\](),]+?)\s*,\s*([^\[\](),]+?)\s*([\[\]])")
_PM = re.compile(r"\\pm|±|\\mp|∓")
MAX_PM = 3  # at most 2**3 sign choices per item


def _chain(s: str) -> tuple[str, str, str] | None:
    r"""``(variable, interval, sides)`` of a one-variable chain: ``0 < x \leq 1`` -> ``("x", "(0,1]", "both")``;
    ``x > 3`` -> ``("x", "(3,\infty)", "low")`` (only a lower bound). None if it is not one."""
    m = _CHAIN.match(s.replace(" ", ""))
    if not m or (not m.group("lop") and not m.group("hop")):
        return None
    var, lo, lop, hop, hi = m.group("var"), m.group("lo"), m.group("lop"), m.group("hop"), m.group("hi")
    if lop and not hop:  # "3 < x" is "x > 3"
        lo, lop, hop, hi = None, None, _FLIP[lop], lo
    if lop and hop:
        if lop not in ("<", "\\leq") or hop not in ("<", "\\leq"):
            if lop in (">", "\\geq") and hop in (">", "\\geq"):  # 3 > x > 1 is 1 < x < 3
                return var, f"{_OPEN[hop]}{hi},{lo}{_CLOSE[lop]}", "both"
            return None
        return var, f"{_OPEN[lop]}{lo},{hi}{_CLOSE[hop]}", "both"
    if hop in (">", "\\geq"):
        return var, f"{_OPEN[hop]}{hi},\\infty)", "low"
    return var, f"(-\\infty,{hi}{_CLOSE[hop]}", "high"


def _chain_interval(s: str) -> str | None:
    c = _chain(s)
    return c[1] if c else None


def _conjunction(parts: list[str]) -> str | None:
    r"""``x > 1 and x < 3`` -> ``(1,3)``: one lower and one upper bound of the same variable."""
    cs = [_chain(p) for p in parts]
    if len(cs) != 2 or not all(cs) or cs[0][0] != cs[1][0]:  # type: ignore[index]
        return None
    by_side = {c[2]: c[1] for c in cs}  # type: ignore[index]
    if set(by_side) != {"low", "high"}:
        return None
    low, high = by_side["low"], by_side["high"]
    return low[: low.index(",")] + high[high.index(",") :]


def _minus_points(s: str) -> str | None:
    r"""``\mathbb{R} \setminus \{1, 3\}`` -> ``(-\infty,1)\cup(1,3)\cup(3,\infty)`` (the points must be numbers
    to be put in order, unless there is one)."""
    m = _MINUS.match(s)
    if not m:
        return None
    pts = [p.strip() for p in m.group(1).split(",") if p.strip()]
    if len(pts) > 1:
        nums = [parse_number(p) for p in pts]
        if any(n is None or n[1] for n in nums):
            return None
        pts = [p for _, p in sorted(zip([n[0] for n in nums], pts, strict=True))]  # type: ignore[index]
    ends = ["-\\infty", *pts, "\\infty"]
    return "\\cup".join(f"({a},{b})" for a, b in zip(ends, ends[1:], strict=False))


def _abs_condition(s: str) -> str | None:
    r"""``|x - a| < b`` -> ``(a-b,a+b)``; ``|x| \geq b`` -> ``(-\infty,-b]\cup[b,\infty)`` (numbers only)."""
    m = _ABS.match(s)
    if not m:
        return None
    shift, bound = parse_number(m.group(3) or "0"), parse_number(m.group(5))
    if shift is None or bound is None or shift[1] or bound[1] or bound[0] <= 0:
        return None
    mid = shift[0] if m.group(2) == "-" else -shift[0]
    lo, hi, op = mid - bound[0], mid + bound[0], m.group(4)
    if op in ("<", "\\leq"):
        return f"{_OPEN[op]}{lo},{hi}{_CLOSE[op]}"
    return f"(-\\infty,{lo}{_CLOSE[op]}\\cup{_OPEN[op]}{hi},\\infty)"


def iso_intervals(s: str) -> str:
    r"""ISO interval notation, where a reversed bracket is an open end: ``]0, 1[`` -> ``(0, 1)``.

    >>> iso_intervals("]0, 1["), iso_intervals("[0, 1[ \\cup ]2, 3]"), iso_intervals("[0, 1]")
    ('(0, 1)', '[0, 1) \\cup (2, 3]', '[0, 1]')
    """

    def one(m: re.Match[str]) -> str:
        o, a, b, c = m.groups()
        if o == "[" and c == "]":
            return m.group(0)
        return ("(" if o == "]" else "[") + f"{a}, {b}" + (")" if c == "[" else "]")

    return _ISO.sub(one, s)


def reals(s: str) -> bool:
    """Is ``s`` the set of all real numbers in words or notation (``all real numbers``, ``\\mathbb{R}``)?"""
    return bool(_REALS.match(s.strip()))


def as_interval_set(s: str) -> str | None:
    r"""The interval or union that a one-variable condition or set notation describes, or None.

    >>> as_interval_set(r"\{x \mid -1<x<1\}"), as_interval_set(r"x \in [0.5,\infty)")
    ('(-1,1)', '[0.5,\\infty)')
    >>> as_interval_set(r"x < -1 \text{ or } x > 1")
    '(-\\infty,-1)\\cup(1,\\infty)'
    >>> as_interval_set(r"k \ne 2"), as_interval_set("x + y < 1")
    ('(-\\infty,2)\\cup(2,\\infty)', None)
    """
    s = s.strip()
    if m := _BUILDER.match(s):
        s = m.group(1)
    if m := _IN.match(s):
        s = m.group(1).strip()
        return s if s[:1] in "([" or s.startswith("\\{") or "\\cup" in s else None
    if _REALS.match(s):
        return "(-\\infty,\\infty)"
    if minus := _minus_points(s) or _abs_condition(s):
        return minus
    if m := _NE.match(s):
        a = m.group(1).strip()
        return f"(-\\infty,{a})\\cup({a},\\infty)"
    parts = [p for p in _OR.split(s) if p.strip()]
    if len(parts) > 1:
        cs = [_chain(p) for p in parts]
        if not all(cs) or len({c[0] for c in cs}) != 1:  # type: ignore[index]
            return None  # "x < 1 or y > 2" is no set of one variable
        return "\\cup".join(c[1] for c in cs)  # type: ignore[index]
    if len(both := [p for p in _AND.split(s) if p.strip()]) > 1:
        return _conjunction(both)
    return _chain_interval(s)


def _pm_variants(item: str) -> list[str]:
    """Every sign choice of the ``\\pm`` in one item (``a \\pm b`` -> ``a+b``, ``a-b``)."""
    pieces = _PM.split(item)
    signs = _PM.findall(item)
    if not signs or len(signs) > MAX_PM:
        return [item]
    out = []
    for choice in itertools.product((0, 1), repeat=len(signs)):
        buf = [pieces[0]]
        for sign, pick, rest in zip(signs, choice, pieces[1:], strict=True):
            minus_first = sign in ("\\mp", "∓")
            buf.append("-" if pick != minus_first else "+")
            buf.append(rest)
        txt = re.sub(r"\s*([+-])\s*", r"\1", "".join(buf))
        out.append(re.sub(r"(^|[(,\[])\+", r"\1", txt).strip())
    return out


def expand_pm(items: list[str]) -> list[str]:
    r"""Items with every ``\pm`` expanded (list, set and tuple items alike).

    >>> expand_pm([r"1\pm\sqrt{5}", "-2"])
    ['1+\\sqrt{5}', '1-\\sqrt{5}', '-2']
    >>> expand_pm([r"(\pm 2, 0)"])
    ['(2, 0)', '(-2, 0)']
    """
    out: list[str] = []
    for it in items:
        out.extend(_pm_variants(it))
    return out
