"""Exact symbolic comparison of two scalar LaTeX answers (runs inside the reward worker).

What it does: parses both sides with ``rewards.math.fastlatex`` when both are in its common subset, else
both with latex2sympy2_extended (the parser math-verify uses; 1-250 ms per expression) -- only a plain
number (no symbol, function or infinity) read by the fast parser is kept beside the other, turns
every decimal literal into an exact ``Rational`` (so 0.866 is never sqrt(3)/2), then
decides equality by (1) structural equality, (2) for constants, a 40-digit numeric evaluation of
the difference, (3) for expressions in the same free symbols, the difference at six fixed
rational points (polynomial-identity style; every symbol replaced at once, ``_at``), (4) ``simplify``
as a last resort (its first-call import is paid by ``warmup``). Parsed answers are cached by their
string, so a gold shared by a group of samples is parsed once. Equations are
equal when their ``lhs - rhs`` are proportional by a nonzero constant.

What it does not do: structure (sets, tuples, intervals, matrices: ``rewards.math.equiv`` splits those
into scalars first), approximate matching (no tolerance beyond 1e-25 relative on exact values),
or time limits -- the caller's worker process is killed when it runs over (``rewards.worker``).
It never evaluates model text as Python.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import suppress
from functools import lru_cache
from typing import Any

import sympy
from latex2sympy2_extended import latex2sympy
from latex2sympy2_extended.math_normalization import NormalizationConfig
from sympy.calculus.accumulationbounds import AccumBounds
from sympy.concrete.expr_with_limits import ExprWithLimits
from sympy.logic.boolalg import BooleanFunction
from sympy.sets.conditionset import ConditionSet

from rewards.math.fastlatex import fast_parse
from rewards.math.warm_forms import WARM_PAIRS, WARMUP

_NORM = NormalizationConfig(
    basic_latex=True, units=False, malformed_operators=True, nits=False, boxed="none", equations=False
)
_POINTS = [
    sympy.Rational(7, 3),
    sympy.Rational(-5, 11),
    sympy.Rational(13, 7),
    sympy.Rational(3, 17),
    sympy.Rational(-19, 5),
    sympy.Rational(23, 29),
]
_EPS = sympy.Rational(1, 10**25)
# nodes whose ``subs`` is more than replacing a symbol in the arguments (bound variables, conditions)
_SUBS_HOOKS = (ExprWithLimits, sympy.Derivative, sympy.Subs, sympy.Lambda, sympy.Piecewise, sympy.Order)
_SUBS_HOOKS += (BooleanFunction, AccumBounds, ConditionSet)


@lru_cache(maxsize=4096)  # a group of 8-16 samples shares its gold; repeated answers are common
def parse(s: str) -> Any:
    r"""LaTeX -> SymPy with decimals made exact.

    >>> parse(r"2\sqrt{3}")
    2*sqrt(3)
    >>> parse("0.25")
    1/4
    """
    expr = latex2sympy(s, is_real=True, convert_degrees=False, normalization_config=_NORM)
    if isinstance(expr, sympy.Basic):
        expr = expr.replace(lambda e: isinstance(e, sympy.Float), lambda f: sympy.Rational(str(f)))
    return expr


def _at(e: Any, point: dict[Any, Any]) -> Any:
    """``e.subs(point)`` for symbols -> numbers: ``xreplace`` of every symbol at once (2-4x faster: no
    partly substituted expression is built and evaluated), kept when it is a finite number; else, or when
    a node of ``e`` treats a substitution specially (bound variables, conditions), ``subs`` itself -- so
    a point where one order of substitution meets ``0 * oo`` is decided as before."""
    if not e.has(*_SUBS_HOOKS):
        v = e.xreplace(point)
        if v.is_number and not v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
            return v
    return e.subs(point)


def _is_zero(d: sympy.Expr) -> bool | None:
    if d == 0:
        return True
    syms = sorted(d.free_symbols, key=str)
    if not syms:
        v = sympy.N(d, 40)
        if not v.is_number or v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
            return None
        return bool(abs(v) < _EPS)
    hits = 0
    for k in range(len(_POINTS)):
        sub = {s: _POINTS[(k + i) % len(_POINTS)] for i, s in enumerate(syms)}
        v = sympy.N(_at(d, sub), 40)
        if not v.is_number or v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo) or not v.is_real:
            continue
        if abs(v) > _EPS:
            return False
        hits += 1
    if hits >= 3:
        return True
    return bool(sympy.simplify(d) == 0)


def _constant_ratio(a: sympy.Expr, b: sympy.Expr) -> Any | None:
    """The constant ``a / b`` if it is the same nonzero number at every sample point, else None."""
    syms = sorted(a.free_symbols | b.free_symbols, key=str)
    ref = None
    hits = 0
    for k in range(len(_POINTS)):
        sub = {s: _POINTS[(k + i) % len(_POINTS)] for i, s in enumerate(syms)}
        va, vb = sympy.N(_at(a, sub), 40), sympy.N(_at(b, sub), 40)
        if not (va.is_number and vb.is_number and va.is_real and vb.is_real) or abs(vb) < _EPS:
            continue
        r = va / vb
        if abs(r) < _EPS:
            return None
        if ref is None:
            ref = r
        elif abs(r - ref) > _EPS * (1 + abs(ref)):
            return None
        hits += 1
    return ref if hits >= 3 or (hits >= 1 and not syms) else None


def _expr_equal(p: Any, g: Any) -> bool:
    if p == g:
        return True
    if isinstance(p, sympy.Equality) and isinstance(g, sympy.Equality):
        dp, dg = p.lhs - p.rhs, g.lhs - g.rhs
        if dp.free_symbols != dg.free_symbols or dg == 0:
            return False
        return _constant_ratio(dp, dg) is not None
    if not (isinstance(p, sympy.Expr) and isinstance(g, sympy.Expr)):
        return False
    if p.has(sympy.oo, -sympy.oo, sympy.zoo) or g.has(sympy.oo, -sympy.oo, sympy.zoo):
        return bool(p == g)
    if p.free_symbols != g.free_symbols:
        return False
    return _is_zero(p - g) is True or _complex_equal(p, g)


_IMAGINARY = sympy.Symbol("i", real=True)


def _complex_equal(p: sympy.Expr, g: sympy.Expr) -> bool:
    """Answers whose only letter is ``i`` are complex numbers: ``i(2-i)`` is ``1+2i``."""
    if p.free_symbols != {_IMAGINARY} or g.free_symbols != {_IMAGINARY}:
        return False
    d = _at(p - g, {_IMAGINARY: sympy.I})
    return not d.free_symbols and _is_zero(d) is True


_REL_OP = re.compile(r"\\leq|\\geq|\\ne(?![a-zA-Z])|<|>")
# a > b is b < a: every relation becomes "lhs OP rhs" with OP in <, <=, != and D = rhs - lhs
_NORMAL = {
    "<": ("<", False),
    ">": ("<", True),
    "\\leq": ("<=", False),
    "\\geq": ("<=", True),
    "\\ne": ("!=", False),
}


def _relation(s: str) -> tuple[str, Any] | None:
    """``("<" | "<=" | "!=", rhs - lhs)`` for a single inequality, or None."""
    ops = _REL_OP.findall(s)
    if len(ops) != 1 or "=" in s.replace("\\ne", ""):
        return None
    lhs, rhs = _REL_OP.split(s)
    op, flip = _NORMAL[ops[0]]
    a, b = _pair(lhs.strip(), rhs.strip())
    return op, (a - b if flip else b - a)


def _plain_number(x: Any) -> bool:
    """A number the two parsers read alike (no symbol, function or infinity to read by convention)."""
    return isinstance(x, sympy.Expr) and x.is_number and not x.has(sympy.oo, sympy.zoo, sympy.Function)


def _pair(a: str, b: str) -> tuple[Any, Any]:
    """Both sides through one parser, never a mix -- except a plain number, which both read alike."""
    fa, fb = _fast(a), _fast(b)
    if fa is None and fb is None:
        return parse(a), parse(b)
    if fa is None:
        return parse(a), (fb if _plain_number(fb) else parse(b))
    if fb is None:
        return (fa if _plain_number(fa) else parse(a)), parse(b)
    return fa, fb


def _relations_equal(p: str, g: str) -> bool:
    """Same inequality up to a positive factor (direction flips with a negative one): -x > -1 is x < 1."""
    rp, rg = _relation(p), _relation(g)
    if rp is None or rg is None or rp[0] != rg[0]:
        return False
    dp, dg = rp[1], rg[1]
    if dp.free_symbols != dg.free_symbols or dg == 0:
        return False
    ratio = _constant_ratio(dp, dg)
    return ratio is not None and bool(ratio > 0 or rp[0] == "!=")


def _close(p: Any, g: Any, rel_tol: float) -> bool:
    """Numeric constants within ``rel_tol`` of each other (only when the caller opted in)."""
    if not (isinstance(p, sympy.Expr) and isinstance(g, sympy.Expr)) or p.free_symbols or g.free_symbols:
        return False
    vp, vg = sympy.N(p, 30), sympy.N(g, 30)
    if not (vp.is_real and vg.is_real) or vp.has(sympy.oo, -sympy.oo, sympy.zoo, sympy.nan):
        return False
    return bool(abs(vp - vg) <= sympy.Float(rel_tol) * abs(vg))


def scalars_equal(pairs: list[list[str]], rel_tol: float = 0.0) -> list[bool]:
    r"""For each ``[pred, gold]`` LaTeX pair: the same exact value / expression / equation / inequality?

    >>> scalars_equal([[r"\sqrt{12}", r"2\sqrt{3}"], ["0.866", r"\frac{\sqrt{3}}{2}"], ["y=2x+1", "2x-y+1=0"]])
    [True, False, True]
    >>> scalars_equal([["-x > -1", "x < 1"], ["x > 5", "x < 5"], ["0.866", r"\frac{\sqrt{3}}{2}"]], rel_tol=1e-3)
    [True, False, True]
    """
    out: list[bool] = []
    for pred, gold in pairs:
        try:
            if _REL_OP.search(pred) or _REL_OP.search(gold):
                out.append(bool(_relations_equal(pred, gold)))
                continue
            fp, fg = _pair(pred, gold)
            out.append(bool(_expr_equal(fp, fg) or (rel_tol > 0 and _close(fp, fg, rel_tol))))
        except Exception:  # noqa: BLE001 - unparsable model text is simply not equal
            out.append(False)
    return out


@lru_cache(maxsize=4096)
def _fast(s: str) -> Any:
    return fast_parse(s)


def warm_one(s: str | tuple[str, str]) -> bool:
    """Parse one ``WARMUP`` form with latex2sympy (and the fast parser) and compare it with itself; or
    compare one ``WARM_PAIRS`` pair (both parsers), which runs a comparison path for the first time."""
    if isinstance(s, tuple):
        got = scalars_equal([list(s)])
        for side in s:
            with suppress(Exception):  # a side latex2sympy cannot read still warmed its parser
                parse(side)
        return got == [True]
    try:
        parse(s)
    except Exception:  # noqa: BLE001 - a warm-up form that does not parse still warmed the parser
        pass
    return scalars_equal([[s, s]]) == [True]


def warmup() -> bool:
    """Warm the LaTeX parser on every ``WARMUP`` form and each comparison path on ``WARM_PAIRS`` (the
    worker also does it in idle time, one item at a time).

    ANTLR builds its prediction tables lazily, so latex2sympy's first parse of each construct costs
    50-250 ms and later ones 1-20 ms; the forms cover the constructs final answers use.
    """
    return all([warm_one(x) or True for x in [*WARMUP, *WARM_PAIRS]])


def clear_caches() -> bool:
    """Forget parsed answers (the parser's warmed tables stay): new answers, as in each RL step."""
    parse.cache_clear()
    _fast.cache_clear()
    return True


def ping() -> str:
    """Health check used by tests."""
    return "pong"


def sleep(seconds: float) -> str:
    """Busy-wait ``seconds`` (tests of the time limit use it; never reachable from model text)."""
    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:
        pass
    return "done"


OPS: dict[str, Callable[..., Any]] = {
    "scalars_equal": scalars_equal,
    "ping": ping,
    "sleep": sleep,
    "warmup": warmup,
    "clear_caches": clear_caches,
}
