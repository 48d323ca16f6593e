r"""Exact comparison of scalar answer pairs: plain numbers here, anything symbolic in the worker.

What it does: ``scalar_pairs`` decides many (pred, gold) pairs of single values -- a number, an
expression, one equation or inequality -- at once: assignments (``x = 3``) and a shared left-hand
name (``y = ...`` vs ``y = ...``) are read first, a bound variable is renamed (``f(n) = 2n+1`` vs
``f(x) = 2x+1``), plain numbers are compared in-process with ``Fraction`` (percent aware, exact
unless the caller opted into ``rel_tol``), and everything else goes to the SymPy worker in one round
trip (``rewards.math.symbolic``), within the CPU budget and wall-clock ceiling of the current ``equivalent`` call. Power towers,
huge exponents and deep nesting never reach SymPy.

What it does not do: structure (lists, sets, intervals, matrices: ``rewards.math.equiv`` splits those
into scalars) or time limits of its own (the worker enforces the caller's deadline).
"""

from __future__ import annotations

import re
import threading
import time
from fractions import Fraction

from rewards.math.normalize import parse_number, split_top, squash
from rewards.worker import WALL_FACTOR, cpu_total_s, pool

_STATE = threading.local()
_MARGIN_S = 0.01  # leave time to kill a worker and answer within the caller's limit
_MAX_DEPTH = 40
_SPACED_DIGITS = re.compile(r"[+-]?\d[\d.,]*(?:\s+[\d.,]+)+")  # "12 34" (not "\log_2 8")
_ELLIPSIS = re.compile(r"\\[lc]?dots|\\ldots|\.\.\.|…")
_PRIME = re.compile(
    r"(?<=[a-zA-Z)}])\s*(?:'+|\^\s*\{?\s*(?:\\prime\s*)+\}?|(?:\\prime\s*)+)"
)  # f', f'', y^{\prime}
_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{4,}(?![a-zA-Z])")  # "because", "possible": a word, no command
_MATH_NAMES = {"sqrt", "frac", "dfrac", "infty", "cdot", "times", "sinh", "cosh", "tanh", "arcsin", "arccos"}
_MATH_NAMES |= {"arctan", "left", "right", "text", "begin", "pmatrix", "matrix", "cases", "exp", "log"}
_TOWER = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\d\s*\^|\^\s*\{?\s*-?\d{5,}")
# a name set equal to a value: x, a_n, \alpha, f(x), P(A), and named quantities AB, \angle ABC, |AB|
_NAME_RE = (
    r"[a-zA-Z](?:_\{?\w+\}?)?|\\[a-zA-Z]+|[a-zA-Z](?:\^\s*\{\s*-1\s*\}|\^\s*-1)?\s*\([^()=]*\)"
    r"|(?:\\(?:angle|overline|triangle|widehat|arc)\s*\{?\s*)?[A-Z]{2,4}\}?(?:_\{?\w+\}?)?|\|[A-Z]{2,3}\|"
)
_NAMES = r"\(\s*[a-zA-Z](?:_\{?\w+\}?)?(?:\s*,\s*[a-zA-Z](?:_\{?\w+\}?)?)+\s*\)"  # (x, y) = (1, 2)
_ASSIGN = re.compile(rf"^\s*({_NAME_RE}|{_NAMES})\s*(?:=|\\in(?![a-zA-Z]))\s*(?!=)(.+)$")
_ASSIGN_REV = re.compile(r"^([^=<>]+?)\s*=\s*([a-zA-Z])\s*$")  # "3 = x"
_FUNC_LHS = re.compile(
    r"([a-zA-Z])\s*\(\s*([a-zA-Z])\s*\)|(y)()"
)  # f(x), g(t), y: a function of one variable
_SEQ_LHS = re.compile(r"([a-zA-Z])_\{?([a-zA-Z])\}?")  # a_n
_NAME = re.compile(r"^(?:[a-zA-Z](?:_\{?\w+\}?)?|[a-zA-Z]\s*\([^()=]*\))$")  # y, a_n, f(x)


def cpu_used_s() -> float:
    """CPU seconds used by this thread and by the worker for its calls (a difference measures a call)."""
    return time.thread_time() + cpu_total_s()


def begin(rel_tol: float, timeout_s: float = 1.0) -> float:
    """Start one ``equivalent`` call in this thread: no timeout yet, this call's tolerance, a CPU budget
    of ``timeout_s``; returns the call's wall-clock ceiling (``WALL_FACTOR`` times the budget)."""
    _STATE.timed_out = False
    _STATE.rel_tol = float(rel_tol)
    _STATE.cpu_end = cpu_used_s() + float(timeout_s)
    return time.monotonic() + float(timeout_s) * WALL_FACTOR


def rel_tol() -> float:
    """The relative tolerance of the current call (0 = exact)."""
    return float(getattr(_STATE, "rel_tol", 0.0))


def timed_out() -> bool:
    """Did the last ``equivalent`` call in this thread hit its time limit?"""
    return bool(getattr(_STATE, "timed_out", False))


def assignment(s: str) -> tuple[str, str] | None:
    """``(name, value)`` of ``x = 3``, ``f(x) = ...``, ``x \\in S``, ``(x, y) = (1, 2)``; else None."""
    m = _ASSIGN.match(s)
    return (m.group(1).replace(" ", ""), m.group(2).strip()) if m else None


def strip_assign(s: str) -> str:
    """The value of an assignment (``x = 3`` -> ``3``; ``3 = x`` -> ``3``), else ``s``."""
    if a := assignment(s):
        return a[1]
    m = _ASSIGN_REV.match(s)
    return m.group(1).strip() if m else s


def num_equal(p: tuple[Fraction, bool], g: tuple[Fraction, bool], tol: float = 0.0) -> bool:
    """Two parsed numbers ``(value, is_percent)``: equal (a percent sign may be a unit), or within ``tol``."""
    (pv, pp), (gv, gp) = p, g
    cands = [(pv, gv)]  # 25% vs 25, 25 vs 25%: the percent sign is a unit
    if pp and not gp:
        cands.append((pv / 100, gv))
    if gp and not pp:
        cands.append((pv, gv / 100))
    t = Fraction(tol)
    return any(a == b or (t > 0 and abs(a - b) <= t * abs(b)) for a, b in cands)


def _depth(s: str) -> int:
    depth = best = 0
    for c in s:
        if c in "([{":
            depth += 1
            best = max(best, depth)
        elif c in ")]}":
            depth -= 1
    return best


def _prose(s: str) -> bool:
    """Two or more words: text, which SymPy would read as a product of letters (so "cat dog" would
    equal "dog cat") -- and which its parser reads slowly, one token per letter."""
    return sum(w.lower() not in _MATH_NAMES for w in _WORD.findall(s)) >= 2


def _unsafe(s: str) -> bool:
    """Power towers, huge exponents, deep nesting, prose: never handed to SymPy."""
    return bool(_TOWER.search(s)) or s.count("{") > 200 or _depth(s) > _MAX_DEPTH or _prose(s)


def _sympy_ready(s: str) -> str:
    """Plain numbers become exact LaTeX fractions (so ``1e-3`` is not read as ``e - 3``)."""
    num = parse_number(s)
    if num is None:
        return s.replace("\\%", "")
    v = num[0] / 100 if num[1] else num[0]
    return f"\\frac{{{v.numerator}}}{{{v.denominator}}}" if v.denominator != 1 else str(v.numerator)


def rename_bound(p: str, g: str) -> tuple[str, str]:
    """Two definitions of one function or sequence: compare the bodies with one bound name.

    ``f(n) = 2n+1`` vs ``f(x) = 2x+1``; ``y = x^2`` vs ``f(x) = x^2`` vs ``g(x) = x^2`` (a function of x by
    any name); ``a_k = 2^k`` vs ``a_n = 2^n`` (the same sequence). ``y = 3`` vs ``x = 3`` is no such pair.
    """
    ps, gs = split_top(p, "="), split_top(g, "=")
    if not len(ps) == len(gs) == 2:
        return p, g
    for pat in (_FUNC_LHS, _SEQ_LHS):
        mp, mg = pat.fullmatch(ps[0]), pat.fullmatch(gs[0])
        if mp and mg and (pat is _FUNC_LHS or mp.group(1) == mg.group(1)):
            a, b = mp.group(2), mg.group(2)
            body = re.sub(rf"(?<![\\a-zA-Z]){a}(?![a-zA-Z])", b, ps[1]) if a and b and a != b else ps[1]
            return body, gs[1]
    return p, g


def split_eq(p: str, g: str) -> tuple[str, str]:
    """``y = 2x+1`` vs ``y = 1+2x``: when one side of two equations agrees, compare the other side only."""
    ps, gs = split_top(p, "="), split_top(g, "=")
    if len(ps) == len(gs) == 2:  # only a shared *name* (y, f(x)); 34x+...=0 vs -34x-...=0 is a relation
        if squash(ps[0]) == squash(gs[0]) and _NAME.match(ps[0]):
            return ps[1], gs[1]
        if squash(ps[1]) == squash(gs[1]) and _NAME.match(ps[1]):
            return ps[0], gs[0]
    return p, g


def _primes(s: str) -> int:
    """How many prime marks follow names (``f'``, ``y''``, ``g^{\\prime}``) in ``s``."""
    return sum(m.group().count("'") + m.group().count("prime") for m in _PRIME.finditer(s))


def _decide_here(p: str, g: str) -> bool | None:
    """A pair decided without SymPy (identical, both plain numbers, unsafe), or None."""
    pc, gc = squash(p), squash(g)
    if not pc or not gc:
        return False
    if pc == gc:
        return True
    if _primes(p) != _primes(g):
        return False  # f' is not f: the SymPy reader drops primes
    pn, gn = parse_number(p), parse_number(g)
    if pn is not None and gn is not None:
        return num_equal(pn, gn, rel_tol())
    if (pn is None and _SPACED_DIGITS.fullmatch(p)) or (gn is None and _SPACED_DIGITS.fullmatch(g)):
        return False  # "12 34": digits apart that are no number are never multiplied
    if _ELLIPSIS.search(p) or _ELLIPSIS.search(g):
        return False  # "1+2+\cdots+n" names no value to compare (identical strings matched above)
    if _unsafe(p) or _unsafe(g) or (gn is not None and re.fullmatch(r"[\d.,\s+-]+", p)):
        return False
    return None


def scalar_pairs(pairs: list[tuple[str, str]], deadline: float) -> list[bool]:
    """Decide many (pred, gold) scalar pairs; the symbolic ones in one worker round trip."""
    results: list[bool | None] = []
    todo: list[tuple[str, str]] = []
    for p, g in pairs:
        p, g = strip_assign(p) if "=" not in g else p, strip_assign(g) if "=" not in p else g
        p, g = split_eq(*rename_bound(p, g))
        results.append(_decide_here(p, g))
        if results[-1] is None:
            todo.append((p, g))
    if not todo:
        return [bool(r) for r in results]
    req = [[_sympy_ready(p), _sympy_ready(g)] for p, g in todo]
    try:
        wall_left = deadline - time.monotonic() - _MARGIN_S
        cpu_left = min(getattr(_STATE, "cpu_end", float("inf")) - cpu_used_s() - _MARGIN_S, wall_left)
        if cpu_left <= 0:
            raise TimeoutError
        got = iter(pool().call("scalars_equal", [req, rel_tol()], cpu_left, wall_left))
    except TimeoutError:
        _STATE.timed_out = True
        got = iter([False] * len(todo))
    except RuntimeError:
        got = iter([False] * len(todo))
    return [bool(next(got)) if r is None else r for r in results]
