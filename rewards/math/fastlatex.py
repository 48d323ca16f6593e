r"""A small, fast LaTeX -> SymPy builder for the common subset of final answers (runs in the worker).

What it does: a tokenizer and a recursive-descent parser that build SymPy objects directly (no
``eval``/``parse_expr``) for numbers (decimals become exact ``Rational``), single-letter and
subscripted symbols (``x_1``, ``a_{n+1}``), ``+ - * / ^ !``, implicit multiplication,
``\frac``/``\dfrac``/``\tfrac``, ``\sqrt``/``\sqrt[n]``, ``\pi``, ``e``, ``\infty``, ``\cdot``/``\times``/``\div``,
``\sin``-family functions (``\sin 2x``, ``\sin^2 x``, ``\sin^{-1} x``), ``\ln``/``\log``/``\log_b``/``\exp``,
``|x|``, ``\lceil``/``\lfloor``, ``\binom``, ``\left(``/``\right)`` and one top-level ``=``. It follows
latex2sympy's conventions (``e`` is Euler's number, ``i`` is a plain symbol, a function's bare argument is
the following product, ``\sin^{-1}`` is arcsin), and is ~100x faster than latex2sympy's ANTLR parser
(0.1-1 ms vs 10-130 ms).

A letter before a one-atom bracket is a function call (``f(2)``, ``g(x)``), before any other bracket a
product (``x(x+1)``), as latex2sympy reads them.

Sums and products with a simple body (``\\sum_{k=1}^{n} k^2``, ``\\prod_{i=1}^{4} (1+\\frac{1}{i})``) are read
as latex2sympy reads them (an unevaluated ``Sum`` / ``Product``).

What it does not do: anything else -- sets, intervals, text, matrices, inequalities, calls with several
arguments, sums whose body holds a function or another sum. It returns ``None`` for those
and the caller parses *both* sides with latex2sympy instead, so one comparison never mixes the two
parsers' conventions.
"""

from __future__ import annotations

import re
from typing import Any

import sympy

_TOKEN = re.compile(r"\s*(\d+\.\d*|\.\d+|\d+|\\[a-zA-Z]+|[a-zA-Z]|[-+*/^!(){}\[\]=_|])")
_FUNCS = {
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "sec": sympy.sec,
    "csc": sympy.csc,
    "cot": sympy.cot,
    "arcsin": sympy.asin,
    "arccos": sympy.acos,
    "arctan": sympy.atan,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "tanh": sympy.tanh,
    "ln": sympy.log,
    "log": lambda x: sympy.log(x, 10),  # latex2sympy reads \log as base 10; keep its convention
    "exp": sympy.exp,
}
_GREEK = {
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
}
_IGNORED = {"left", "right", "displaystyle", "bigl", "bigr", "Bigl", "Bigr", "big", "Big"}
_MUL = {"*", "\\cdot", "\\times"}
_CLOSERS = {"\\rceil", "\\rfloor"}
_INVERSE = {"sin": sympy.asin, "cos": sympy.acos, "tan": sympy.atan}
_BRACKETS = {"lceil": ("\\rceil", sympy.ceiling), "lfloor": ("\\rfloor", sympy.floor)}
_DIV = {"/", "\\div"}
_MAX_TOKENS = 200


class _Unsupported(Exception):
    pass


def _tokens(s: str) -> list[str]:
    out: list[str] = []
    pos = 0
    s = s.strip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if m is None:
            raise _Unsupported(s[pos : pos + 10])
        tok = m.group(1)
        pos = m.end()
        if tok.startswith("\\") and tok[1:] in _IGNORED:
            continue
        out.append(tok)
        if len(out) > _MAX_TOKENS:
            raise _Unsupported("too long")
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return out


class _Parser:
    def __init__(self, toks: list[str]) -> None:
        self.t = toks
        self.i = 0

    def peek(self) -> str | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise _Unsupported(f"expected {want}, got {tok}")
        self.i += 1
        return tok

    def expr(self) -> Any:
        val = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            val = val + rhs if op == "+" else val - rhs
        return val

    def _starts_atom(self) -> bool:
        tok = self.peek()
        if tok is None:
            return False
        return (
            tok in ("(", "{")
            or tok[0].isalnum()
            or tok[0] == "."
            or (tok.startswith("\\") and tok not in _MUL | _DIV | _CLOSERS)
        )

    def term(self) -> Any:
        val = self.unary()
        while True:
            tok = self.peek()
            if tok in _MUL:
                self.take()
                val = val * self.unary()
            elif tok in _DIV:
                self.take()
                den = self.unary()
                if den == 0:
                    raise _Unsupported("division by zero")
                val = val / den
            elif self._starts_atom():
                val = val * self.power()
            else:
                return val

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return -self.unary()
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self) -> Any:
        base = self.postfix()
        if self.peek() == "^":
            self.take()
            exp = self.group_or_atom(signed=True)
            return sympy.Pow(base, exp)
        return base

    def postfix(self) -> Any:
        val = self.atom()
        while self.peek() == "!":
            self.take()
            if val.is_number and not (val.is_Integer and 0 <= val <= 1000):
                raise _Unsupported("factorial")  # only small whole numbers and symbols (n!)
            val = sympy.factorial(val)
        return val

    def group_or_atom(self, signed: bool = False) -> Any:
        """A ``{...}`` group, or a single token (``x^2``, ``\\frac12``)."""
        tok = self.peek()
        if tok == "{":
            self.take()
            val = self.expr()
            self.take("}")
            return val
        if signed and tok == "-":
            self.take()
            return -self.group_or_atom()
        if tok is not None and tok.isdigit() and len(tok) > 1:  # x^23 in LaTeX is x^2 * 3
            self.t[self.i] = tok[1:]
            return sympy.Integer(tok[0])
        return self.atom()

    def _single_atom_call(self) -> bool:
        """Is the next ``( a )`` one number, letter or Greek letter (``f(2)``, ``g(x)``)? latex2sympy reads a
        letter before such a bracket as a function call, and before any other bracket (``x(x+1)``) as a
        product; this parser does the same."""
        t = self.t[self.i : self.i + 3]
        return (
            len(t) == 3
            and t[2] == ")"
            and (t[1].isdigit() or (len(t[1]) == 1 and t[1].isalpha()) or t[1][1:] in _GREEK)
        )

    def _call(self, name: str) -> Any:
        self.take("(")
        arg = self.atom()
        self.take(")")
        return sympy.Function(name)(arg)

    def subscript(self, base: str) -> str:
        """``x_1``, ``x_{12}``, ``a_{n+1}`` -> one symbol name (``x_12`` is refused: LaTeX reads x_1 2)."""
        if self.peek() != "_":
            return base
        self.take()
        tok = self.take()
        if tok == "{":
            parts: list[str] = []
            while self.peek() != "}":
                t = self.take()
                if not (t.isalnum() or t in "+-") or len(parts) > 8:
                    raise _Unsupported("subscript")
                parts.append(t)
            self.take("}")
            sub = "".join(parts)
        elif len(tok) == 1 and tok.isalnum():
            sub = tok
        else:
            raise _Unsupported("subscript")
        return f"{base}_{sub}" if len(sub) == 1 else f"{base}_{{{sub}}}"

    def _sum_or_product(self, name: str) -> Any:
        """``\\sum_{k=1}^{n} body`` as latex2sympy builds it: ``Sum(body, (k, 1, n))``, the body being the
        following product (``\\sum_{k=1}^{n} k + 1`` is the sum plus one). Bodies with functions or
        another sum are left to latex2sympy."""
        self.take("_")
        self.take("{")
        var = self.take()
        if not (len(var) == 1 and var.isalpha()) or var == "e":
            raise _Unsupported("summation index")
        self.take("=")
        start = self.expr()
        self.take("}")
        self.take("^")
        end = self.group_or_atom()
        at = self.i
        body = self.term()
        if any(t.lstrip("\\") in _FUNCS or t in ("\\sum", "\\prod") for t in self.t[at : self.i]):
            raise _Unsupported("function in a summation body")
        op = sympy.Sum if name == "sum" else sympy.Product
        return op(body, (sympy.Symbol(var, real=True), start, end))

    def func_arg(self) -> Any:
        """Argument of ``\\sin``: parenthesised, or the following product of atoms (``\\sin 2x``)."""
        if self.peek() in ("(", "{"):
            return self.atom()
        val = self.power()
        while self._starts_atom() and (self.peek() or "").lstrip("\\") not in _FUNCS:
            val = val * self.power()
        return val

    def atom(self) -> Any:
        tok = self.take()
        if tok in ("(", "{"):
            val = self.expr()
            self.take(")" if tok == "(" else "}")
            return val
        if tok[0].isdigit() or tok[0] == ".":
            return sympy.Rational(tok)
        if tok == "|":  # |x - 1| (not nested)
            val = self.expr()
            self.take("|")
            return sympy.Abs(val)
        if len(tok) == 1 and tok.isalpha():
            if self.peek() == "(" and self._single_atom_call():
                return self._call(tok)
            name = self.subscript(tok)
            return sympy.E if name == "e" else sympy.Symbol(name, real=True)
        name = tok[1:] if tok.startswith("\\") else ""
        if name == "infty":
            return sympy.oo
        if name in _BRACKETS:  # \lceil x \rceil, \lfloor x \rfloor
            close, fn = _BRACKETS[name]
            val = self.expr()
            self.take(close)
            return fn(val)
        if name in ("binom", "dbinom", "tbinom"):
            return sympy.binomial(self.group_or_atom(), self.group_or_atom())
        if name == "log" and self.peek() == "_":  # \log_2 8, \log_{b} x
            self.take()
            base = self.group_or_atom()
            return sympy.log(self.func_arg(), base)
        if name in ("frac", "dfrac", "tfrac"):
            num = self.group_or_atom()
            den = self.group_or_atom()
            if den == 0:
                raise _Unsupported("division by zero")
            return num / den
        if name == "sqrt":
            if self.peek() == "[":
                self.take()
                n = self.expr()
                self.take("]")
                return sympy.root(self.group_or_atom(), n)
            return sympy.sqrt(self.group_or_atom())
        if name == "pi":
            return sympy.pi
        if name in ("sum", "prod") and self.peek() == "_":
            return self._sum_or_product(name)
        if name in _GREEK:
            return sympy.Symbol(self.subscript(name), real=True)
        if name in _FUNCS:
            power = None
            if self.peek() == "^":
                self.take()
                power = self.group_or_atom(signed=True)
            arg = self.func_arg()
            if power == -1 and name in _INVERSE:  # \sin^{-1} x is arcsin x, as latex2sympy reads it
                return _INVERSE[name](arg)
            val = _FUNCS[name](arg)
            if power is not None:
                val = val**power
            return val
        raise _Unsupported(tok)


def _top_level_split(s: str, sep: str) -> list[str]:
    """``s`` split at ``sep`` outside braces (``\\sum_{k=1}^{n} k = 10`` has one top-level ``=``)."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(s):
        depth += (c == "{") - (c == "}")
        if c == sep and depth == 0:
            out.append(s[start:i])
            start = i + 1
    return out + [s[start:]]


def fast_parse(s: str) -> Any | None:
    r"""SymPy object for ``s``, or None when ``s`` is outside the supported subset.

    >>> fast_parse(r"2\sqrt{3} + \frac{\pi}{2}")
    pi/2 + 2*sqrt(3)
    >>> fast_parse(r"\sin 2x")
    sin(2*x)
    >>> fast_parse("y = 2x + 1")
    Eq(y, 2*x + 1)
    >>> fast_parse(r"[1, 2)") is None
    True
    """
    try:
        sides = _top_level_split(s, "=")
        if len(sides) > 2:
            return None
        vals = []
        for side in sides:
            p = _Parser(_tokens(side))
            vals.append(p.expr())
            if p.peek() is not None:
                return None
        return sympy.Eq(vals[0], vals[1], evaluate=False) if len(vals) == 2 else vals[0]
    except (_Unsupported, ValueError, TypeError, ZeroDivisionError, RecursionError):
        return None
