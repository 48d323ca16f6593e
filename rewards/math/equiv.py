r"""Is an extracted answer equivalent to the gold answer? Structure first, then scalars.

What it does: cleans both sides (``rewards.math.normalize``), reads what a person drops around an answer
(an approximation after an exact value, a bracketed breakdown), decides the forms read by rules
(clock times, ratios, choice letters, words, number words), relations and sets in any notation
(``rewards.math.sets``), then recognises the answer's structure from the gold -- empty set / "no
solution", matrix, union of intervals, set ``\{..\}``, interval or tuple ``(a, b]`` (brackets must
match), bare comma list (unordered, "or"/"and" count as commas), ``\pm`` -- and compares element by
element. A tuple of three or more entries may be written without its brackets, a set of one element
is that element, and one value written twice is that value. Single values go to
``rewards.math.scalars``: exact, plain numbers in-process, anything symbolic in the bounded SymPy worker.
``x = 3`` matches ``3``.

What it does not do: approximate answers (0.333 is not 1/3; 1.414 is not sqrt 2) unless the caller
passes ``rel_tol``, or units conversion (5 m is not 500 cm).
"""

from __future__ import annotations

import re

from rewards.math.forms import clock_time, phrase_value, qualifiers, rename_parameter
from rewards.math.normalize import MAX_ANSWER_CHARS, clean, parse_number, split_top, squash, strip_units
from rewards.math.readings import empty, special_forms, surroundings
from rewards.math.scalars import assignment, begin, scalar_pairs, strip_assign, timed_out
from rewards.math.sets import as_interval_set, expand_pm, iso_intervals, reals

__all__ = ["equivalent", "timed_out"]

_REL = re.compile(r"<|>|\\leq|\\geq|\\ne(?![a-zA-Z])")
_SETLIKE = re.compile(r"<|>|\\leq|\\geq|\\ne(?![a-zA-Z])|\\in(?![a-zA-Z])|\\cup|\\infty|\\mid|\\mathbb\{R\}")
_LABEL = re.compile(r"^\s*[A-Za-z][A-Za-z ]{1,24}?\s*[:=]\s*(?!=)")  # "Max = 9", "Alice: 3" in a list
_MATRIX = re.compile(
    r"^\\begin\{([pbvBV]?matrix|smallmatrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.DOTALL
)
_SCALED_MATRIX = re.compile(r"^([^\\]?.*?)\s*(\\begin\{([pbB]?matrix)\}.*\\end\{\3\})$", re.DOTALL)
_WRAPPED_MATRIX = re.compile(
    r"^[(\[]\s*(\\begin\{(\w+)\}.*\\end\{\2\})\s*[)\]]$", re.DOTALL
)  # (\begin{pmatrix}..)
_IN_FINITE = re.compile(r"^(?:[a-zA-Z](?:_\{?\w+\}?)?|\\[a-zA-Z]+)\s*\\in\s*(\\\{.*\\\})$")  # x \in \{1, 2\}
_CHAIN_OP = re.compile(r"\\leq|\\geq|<|>")
_GROUPS = re.compile(r"\s*(?:;|\bor\b)\s*", re.IGNORECASE)  # "x = 1, y = 2 or x = 2, y = 1"
_SHORT_NAME = re.compile(r"[a-zA-Z](?:_\{?\w+\}?)?")
_FLIP = {"<": ">", ">": "<", "\\leq": "\\geq", "\\geq": "\\leq"}
_OR = re.compile(  # "or", "and", "1, 2, and 3", ";" separate list items
    r"\s*,?\s+(?:or|and)\s+|\s*,?\s*\\(?:text\{\s*)?(?:or|and)\s*\}?\s*|\s*;\s*", re.IGNORECASE
)
_PM = re.compile(r"\\pm|±|\\mp|∓")


def _closes_at_end(s: str) -> bool:
    """Does the bracket opened at s[0] close at the very end?"""
    depth = 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i == len(s) - 1
    return False


def _matrix_factor(s: str) -> tuple[str, str]:
    """``2\\begin{pmatrix}..\\end{pmatrix}`` -> ``("2", matrix)``: a number in front multiplies every entry."""
    m = _SCALED_MATRIX.match(s)
    if m and not re.search(r"[=&a-zA-Z]", re.sub(r"\\(?:frac|sqrt|pi|cdot|times)", "", m.group(1))):
        return re.sub(r"\s*\\(?:cdot|times)\s*$", "", m.group(1).strip()), m.group(2)
    return "", s


def _structure(s: str, thousands: bool) -> tuple[str, list[str]]:
    """Classify a cleaned answer: (kind, items). Kinds: scalar, list, set, bracket:<o><c>, matrix, union."""
    coef, s = _matrix_factor(s)
    if m := _MATRIX.match(s):
        rows = [
            [f"({coef})({c})" if coef else c for c in r.split("&")]
            for r in m.group(2).split(r"\\")
            if r.strip()
        ]
        shape = "x".join(str(len(r)) for r in rows)
        cells = [c.strip() for r in rows for c in r]
        if len(cells) >= 2 and (len(rows) == 1 or all(len(r) == 1 for r in rows)):
            return "bracket:()", cells  # a column or row vector is the tuple of its entries
        return "matrix", [shape] + cells
    if r"\cup" in s:
        return "union", [x.strip() for x in s.split(r"\cup")]
    if s.startswith(r"\{") and s.endswith(r"\}"):
        inner = s[2:-2].strip()
        return "set", expand_pm([x for x in split_top(_OR.sub(",", inner)) if x]) if inner else []
    if (
        len(s) >= 2
        and s[0] in "(["
        and s[-1] in ")]"
        and _closes_at_end(s.replace(r"\{", "").replace(r"\}", ""))
    ):
        inner = s[1:-1].strip()
        if s[0] + s[-1] == "()" and inner[:1] == "(" and inner[-1:] == ")" and _closes_at_end(inner):
            return _structure(inner, thousands)  # ((1, 2)): the outer parentheses group nothing
        items = split_top(inner)
        if len(items) == 1 and ";" in inner:
            items = [x.strip() for x in inner.split(";")] if "," not in inner else items  # (1; 2; 3)
        if len(items) >= 2 and _PM.search(s) and s[0] + s[-1] == "()":
            return "list", expand_pm([s])  # (\pm 2, 0): two points
        if len(items) >= 2:
            return f"bracket:{s[0]}{s[-1]}", items
    if thousands and parse_number(s) is not None:
        return "scalar", [s]
    items = split_top(_OR.sub(",", s))
    if len(items) >= 2 or _PM.search(s):
        items = expand_pm(
            [
                strip_units(_LABEL.sub("", strip_assign(x))) if len(items) >= 2 else strip_assign(x)
                for x in items
            ]
        )
        return ("list", items) if len(items) >= 2 else ("scalar", items)
    return "scalar", [s]


def _match_unordered(ps: list[str], gs: list[str], deadline: float) -> bool:
    if len(ps) != len(gs):
        return False
    if len(gs) > 12:
        return sorted(map(squash, ps)) == sorted(map(squash, gs))
    if any(_structure(x, thousands=False)[0] != "scalar" for x in ps + gs):
        return _match_pieces(ps, gs, deadline)  # a list of tuples / intervals: element by element
    grid = scalar_pairs([(p, g) for p in ps for g in gs], deadline)
    used: set[int] = set()
    for i in range(len(ps)):
        j = next((j for j in range(len(gs)) if j not in used and grid[i * len(gs) + j]), None)
        if j is None:
            return False
        used.add(j)
    return True


def _match_pieces(ps: list[str], gs: list[str], deadline: float) -> bool:
    """Unordered match of union pieces (intervals / sets), endpoints compared as scalars in one batch."""
    if len(ps) != len(gs) or len(gs) > 12:
        return False
    ps_s = [_structure(x, thousands=False) for x in ps]
    gs_s = [_structure(x, thousands=False) for x in gs]
    batch: list[tuple[str, str]] = []
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    for i, (pk, pi) in enumerate(ps_s):
        for j, (gk, gi) in enumerate(gs_s):
            if pk == gk and len(pi) == len(gi):
                spans[i, j] = (len(batch), len(batch) + len(pi))
                batch.extend(zip(pi, gi, strict=True))
    got = scalar_pairs(batch, deadline) if batch else []
    used: set[int] = set()
    for i in range(len(ps)):
        j = next(
            (
                j
                for j in range(len(gs))
                if j not in used and (i, j) in spans and all(got[slice(*spans[i, j])])
            ),
            None,
        )
        if j is None:
            return False
        used.add(j)
    return True


def _nested_matrix(s: str) -> str:
    """``[[1, 2], [3, 4]]`` as a ``pmatrix`` (rows of equal length), else ``s``."""
    if not (s[:1] in "([" and _closes_at_end(s)):
        return s
    rows = [split_top(r[1:-1]) for r in split_top(s[1:-1]) if r[:1] == s[0] and _closes_at_end(r)]
    if not rows or len(rows) != len(split_top(s[1:-1])) or len({len(r) for r in rows}) != 1:
        return s
    return "\\begin{pmatrix}" + "\\\\".join("&".join(r) for r in rows) + "\\end{pmatrix}"


def _named(s: str) -> list[tuple[str, str]] | None:
    """``x = 1, y = 2`` and ``x = y = 1`` as (name, value) pairs; None unless every item names a value."""
    out = []
    for item in split_top(s):
        sides = split_top(item, "=")
        if len(sides) > 2 and all(_SHORT_NAME.fullmatch(x) for x in sides[:-1]):
            out += [(x, sides[-1]) for x in sides[:-1]]  # x = y = 1
        elif a := assignment(item):
            out.append(a)
        else:
            return None
    return out


def _as_named(s: str) -> str:
    """One value for several names spelled out (``x = y = 1`` -> ``x = 1, y = 1``); alternatives made of
    named values as tuples in the order written (``x = 1, y = 2 or x = 2, y = 1`` -> ``(1, 2), (2, 1)``)."""
    groups = [g for g in _GROUPS.split(s) if g.strip()]
    named = [_named(g) for g in groups]
    if not all(named):
        return s
    if len(groups) == 1:
        return ", ".join(f"{n} = {v}" for n, v in named[0]) if "=" in s and len(named[0]) > 1 else s  # type: ignore[index]
    if len({tuple(n for n, _ in x) for x in named}) != 1 or len(named[0]) < 2:  # type: ignore[arg-type, index]
        return s
    return ", ".join("(" + ", ".join(v for _, v in x) + ")" for x in named)  # type: ignore[union-attr]


def _read_forms(p: str, g: str) -> tuple[str, str]:
    """Notations with one meaning, read on both sides before anything is compared."""
    (p, pp), (g, gp) = qualifiers(p), qualifiers(g)  # "..., k \in \mathbb{Z}", "for all x"
    p = rename_parameter(p, g, pp, gp)
    out = []
    for a, b in ((p, g), (g, p)):
        a = _as_named(iso_intervals(a))
        if m := _WRAPPED_MATRIX.match(a) or _IN_FINITE.match(a):
            a = m.group(1)
        if "\\begin{" in b:
            a = _nested_matrix(a)
        a = "\\mathbb{R}" if reals(a) else a  # "all real numbers" is the set, whichever side it is on
        out.append(a if clock_time(a) is not None else phrase_value(a) or a)
    return out[0], out[1]


def _chain(s: str) -> tuple[list[str], list[str]] | None:
    """Terms and operators of a chain of two or more inequalities, read left to right as ``<``/``\\leq``."""
    ops = _CHAIN_OP.findall(s)
    if len(ops) < 2 or "=" in _CHAIN_OP.sub("", s):
        return None
    terms = [t.strip() for t in _CHAIN_OP.split(s)]
    if all(o in ("<", "\\leq") for o in ops):
        return terms, ops
    if all(o in (">", "\\geq") for o in ops):  # f(4) > f(1) > f(2) is f(2) < f(1) < f(4)
        return terms[::-1], [_FLIP[o] for o in ops[::-1]]
    return None


def _by_name(p: str, g: str, deadline: float) -> bool | None:
    """Lists of named values (``a = 2, b = 3``) match name by name, never by position."""
    ps, gs = split_top(_OR.sub(",", p)), split_top(_OR.sub(",", g))
    pa, ga = [assignment(x) for x in ps], [assignment(x) for x in gs]
    if len(ps) < 2 or len(gs) < 2 or not all(pa) or not all(ga):
        return None
    pn, gn = [a[0] for a in pa if a], [a[0] for a in ga if a]
    if len(set(pn)) != len(pn) or len(set(gn)) != len(gn):
        return None  # "x = 1 or x = 2": several values of one name
    if set(pn) != set(gn):
        return False
    gv = dict(a for a in ga if a)
    return all(scalar_pairs([(v, gv[n]) for n, v in (a for a in pa if a)], deadline))


def _named_list(s: str, in_order: bool = False) -> bool:
    """Is ``s`` a list of two or more named values (``x = 2, y = 3``)? ``in_order``: names in alphabetical
    order too, so reading it as a tuple cannot reorder it (``y = 3, x = 2`` is no tuple reading)."""
    items = split_top(_OR.sub(",", s))
    names = [a[0] if (a := assignment(x)) else None for x in items]
    if len(items) < 2 or not all(names):
        return False
    return not in_order or (names == sorted(names) and len(set(names)) == len(names))  # type: ignore[type-var]


def _bare_tuple(p: str, pk: str, pi: list[str], gk: str, gi: list[str]) -> tuple[str, str]:
    """A tuple or bracketed list of three or more entries written without its brackets (``1, 2, 3``)
    on either side: against a bracketed gold it is that tuple in the order written; against a bare gold
    list it is compared as that list (unordered). Two entries stay apart: ``(1, 2)`` may be an interval,
    and items joined by "or" / "and" are alternatives, not coordinates."""
    if len(pi) != len(gi) or len(gi) < 3 or _OR.search(p) or _PM.search(p):
        return pk, gk
    if gk in ("bracket:()", "bracket:[]") and pk == "list":
        return gk, gk
    if gk == "list" and pk in ("bracket:()", "bracket:[]"):
        return gk, gk
    return pk, gk


def _last_side(p: str) -> str:
    """``5+5+1 = 11`` -> ``11`` (a derivation ending in its value); ``72 = 73`` stays as it is."""
    sides = split_top(p, "=")
    if len(sides) < 2 or not sides[-1] or len(split_top(_OR.sub(",", p))) > 1:  # lists keep their "x = "
        return p
    nums = {parse_number(x) for x in sides if parse_number(x) is not None}
    return sides[-1] if len(nums) <= 1 else p


def _as_sets(p: str, g: str, deadline: float) -> bool | None:
    """Relations and sets in any notation: relation vs relation first, then both as interval sets."""
    if not (_SETLIKE.search(g) or _SETLIKE.search(p)):
        return None
    cp, cg = _chain(p), _chain(g)
    if cp and cg:  # f(2) < f(1) < f(4) vs f(4) > f(1) > f(2): the same operators between the same terms
        same_shape = cp[1] == cg[1] and len(cp[0]) == len(cg[0])
        return same_shape and all(scalar_pairs(list(zip(cp[0], cg[0], strict=True)), deadline))
    if _REL.search(g) and _REL.search(p) and scalar_pairs([(p, g)], deadline)[0]:
        return True  # -x > -1 vs x < 1; 2y > 4 vs y > 2 (worker: up to a factor, sign-aware)
    sp, sg = as_interval_set(p), as_interval_set(g)
    sp = sp if sp is not None else (p if "\\cup" in p or p[:1] in "([" else None)
    sg = sg if sg is not None else (g if "\\cup" in g or g[:1] in "([" else None)
    if sp is None or sg is None or (sp == p and sg == g):
        return None
    ps, gs = [x.strip() for x in sp.split("\\cup")], [x.strip() for x in sg.split("\\cup")]
    return _match_pieces(ps, gs, deadline)


def equivalent(pred: str, gold: str, timeout_s: float = 1.0, rel_tol: float = 0.0) -> bool:
    r"""Exact mathematical equivalence of an extracted answer and a gold answer.

    ``rel_tol`` (default 0: exact) lets plain numbers and numeric constants differ by that relative
    amount -- an explicit opt-in for tasks whose golds are rounded.

    >>> equivalent(r"\dfrac{1}{2}", "0.5")
    True
    >>> equivalent("1600.1", "1600"), equivalent("1600.1", "1600", rel_tol=1e-3)
    (False, True)
    >>> equivalent(r"x = 3", "3")
    True
    >>> equivalent("3, 1, 2", "1, 2, 3")
    True
    >>> equivalent("(2, 1)", "(1, 2)")
    False
    >>> equivalent(r"\{-2, 1+\sqrt5, 1-\sqrt5\}", r"\{1\pm\sqrt5, -2\}")
    True
    >>> equivalent(r"\{x \mid -1<x<1\}", "(-1, 1)"), equivalent("-x > -1", "x < 1"), equivalent("1:00", "12:00")
    (True, True, False)
    """
    deadline = begin(rel_tol, timeout_s)  # timeout_s of CPU time; the wall-clock ceiling is a multiple
    if len(pred) > MAX_ANSWER_CHARS or len(gold) > MAX_ANSWER_CHARS:
        return False
    p, g = clean(pred), clean(gold)
    if not p or not g:
        return False
    if squash(p) == squash(g):
        return True
    if empty(g) or empty(p):
        return empty(g) and empty(p)
    p, g = _read_forms(*surroundings(p, g))
    if squash(p) == squash(g):
        return True
    if (decided := special_forms(p, g)) is not None or (decided := _by_name(p, g, deadline)) is not None:
        return decided
    named, gnamed = _named_list(p), _named_list(g, in_order=True)
    if (decided := _as_sets(p, g, deadline)) is not None:
        return decided
    if "=" not in g and "\\in" not in g:
        p = _last_side(strip_assign(p))
    elif "=" not in p and "\\in" not in p:
        g = strip_assign(g)
    if (decided := special_forms(p, g)) is not None:
        return decided
    gk, gi = _structure(g, thousands=True)
    pk, pi = _structure(p, thousands=gk == "scalar")
    if (gk == "set") != (pk == "set"):  # \{(1, 2)\} for (1, 2): a set of one element against its element
        gk, gi = _structure(gi[0], thousands=True) if gk == "set" and len(gi) == 1 else (gk, gi)
        pk, pi = _structure(pi[0], thousands=gk == "scalar") if pk == "set" and len(pi) == 1 else (pk, pi)
    if gk == "scalar" and pk == "list" and len({squash(x) for x in pi}) == 1:
        pk, pi = "scalar", pi[:1]  # "x = 2 or x = 2": one value written twice is that value
    if gk == "bracket:()" and pk == "list" and named:
        pk = gk  # "x = 2, y = 3" for the ordered pair (2, 3)
    if pk == "bracket:()" and gk == "list" and gnamed:
        gk = pk  # the gold "x = 2, y = 3" (names in order) is the pair (2, 3), as the other way round
    pk, gk = _bare_tuple(p, pk, pi, gk, gi)
    if "\\begin{" in p + g and {gk, pk} <= {"bracket:()", "bracket:[]"}:
        pk = gk  # a column / row vector is its entries in order, in ( ) or [ ]
    if {gk, pk} <= {"list", "set"}:
        return _match_unordered(pi, gi, deadline)
    if gk != pk or len(pi) != len(gi):
        return False
    if gk == "union":
        return _match_pieces(pi, gi, deadline)
    if gk == "scalar":
        return scalar_pairs([(pi[0], gi[0])], deadline)[0]
    if gk == "matrix" and pi[0] != gi[0]:
        return False
    return all(scalar_pairs(list(zip(pi, gi, strict=True)), deadline))
