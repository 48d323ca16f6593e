r"""Sets written in different notations, brought to one: intervals, unions, set-builder, ``\in``, ``\pm``.

What it does (string level, on answers already cleaned by ``rewards.normalize``):
- ``as_interval_set``: a condition or set in one variable -> an interval / union string:
  ``0 < x \leq 1`` -> ``(0,1]``; ``x > 3`` / ``3 < x`` -> ``(3,\infty)``; ``x<a or x>b`` -> a union;
  ``x \neq 1`` -> ``(-\infty,1)\cup(1,\infty)``; ``\{x \mid -1<x<1\}`` and ``x \in [0.5,\infty)`` ->
  their set; ``\mathbb{R}`` -> ``(-\infty,\infty)``. None when it is not such a set.
- ``expand_pm``: ``\pm`` inside list / set / tuple items -> every sign choice
  (``1\pm\sqrt5`` -> ``1+\sqrt5``, ``1-\sqrt5``; ``(\pm 2, 0)`` -> ``(2,0)``, ``(-2,0)``).

What it does not do: compare endpoints (``rewards.equiv`` does, exactly), intersect or simplify sets
(``(0,2)\cup(1,3)`` is not ``(0,3)``), or relations with a coefficient on the variable
(``-x > -1`` is compared as a relation by ``rewards.symbolic``, not turned into a set).
"""

from __future__ import annotations

import itertools
import re

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
_REALS = re.compile(r"^\\mathbb\{R\}$|^\(-\\infty,\s*\+?\\infty\)$")
_PM = re.compile(r"\\pm|±|\\mp|∓")
MAX_PM = 3  # at most 2**3 sign choices per item


def _chain_interval(s: str) -> str | None:
    r"""``0 < x \leq 1`` -> ``(0,1]``; ``x > 3`` -> ``(3,\infty)``; None if not a chain in one variable."""
    m = _CHAIN.match(s.replace(" ", ""))
    if not m or (not m.group("lop") and not m.group("hop")):
        return None
    lo, lop, hop, hi = m.group("lo"), m.group("lop"), m.group("hop"), m.group("hi")
    if lop and not hop:  # "3 < x" is "x > 3"
        lo, lop, hop, hi = None, None, _FLIP[lop], lo
    if lop and hop:
        if lop not in ("<", "\\leq") or hop not in ("<", "\\leq"):
            if lop in (">", "\\geq") and hop in (">", "\\geq"):  # 3 > x > 1 is 1 < x < 3
                return f"{_OPEN[hop]}{hi},{lo}{_CLOSE[lop]}"
            return None
        return f"{_OPEN[lop]}{lo},{hi}{_CLOSE[hop]}"
    if hop in (">", "\\geq"):
        return f"{_OPEN[hop]}{hi},\\infty)"
    return f"(-\\infty,{hi}{_CLOSE[hop]}"


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
    if m := _NE.match(s):
        a = m.group(1).strip()
        return f"(-\\infty,{a})\\cup({a},\\infty)"
    parts = [p for p in _OR.split(s) if p.strip()]
    if len(parts) > 1:
        pieces = [_chain_interval(p) for p in parts]
        return "\\cup".join(pieces) if all(pieces) else None  # type: ignore[arg-type]
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
