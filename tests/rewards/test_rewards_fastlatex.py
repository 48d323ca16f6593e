"""The fast LaTeX parser reads its subset as latex2sympy does, and the worker's latency bookkeeping."""

from __future__ import annotations

import pytest
import sympy

from rewards.math import symbolic
from rewards.math.fastlatex import fast_parse
from rewards.worker import pool, take_cpu_s

SAME_AS_LATEX2SYMPY = [
    r"x_1 + x_{2}",
    r"a_{n+1} - 2a_n",
    r"\alpha_1",
    r"\log_{2} 8",
    r"\log_3 x",
    r"\lceil 2.5 \rceil + \lfloor -1.5 \rfloor",
    r"|x - 1| + |y|",
    r"\binom{7}{3}",
    r"\sin^{-1} x",
    r"\tan^{-1}(1)",
    r"-\infty",
    r"f(2) + f(3)",
    r"g(x)",
    r"x(x+1)",
    r"n!",
    r"\sum_{k=1}^{3} k^2",
    r"\sum_{k=1}^{n} k",
    r"2\sum_{i=1}^{4} i + 1",
    r"\prod_{i=1}^{4} (1+\frac{1}{i})",
]


@pytest.mark.parametrize("s", SAME_AS_LATEX2SYMPY)
def test_fast_parser_reads_its_subset_as_latex2sympy(s: str) -> None:
    fast = fast_parse(s)
    assert fast is not None, s
    slow = symbolic.parse(s)
    assert fast == slow or sympy.simplify(fast - slow) == 0


@pytest.mark.parametrize("s", [r"x_12", r"2|x|", r"f(x, y)", r"\sum_{k=1}^{3} \sin k", r"1:2"])
def test_fast_parser_refuses_what_it_does_not_read(s: str) -> None:
    assert fast_parse(s) is None


def test_function_values_are_not_products() -> None:
    # f(2) + f(3) is no multiple of f(5): read as products, both would be 5f
    assert symbolic.scalars_equal([["f(2)+f(3)", "f(5)"], ["f(2)+f(3)", "f(3)+f(2)"]]) == [False, True]


def test_a_plain_number_may_sit_beside_a_latex2sympy_parse() -> None:
    # the fast side is a number, the other needs latex2sympy: compared without re-parsing the number
    pairs = [[r"\sum_{k=1}^{3} \sin(k\pi)", "0"], [r"\sum_{k=1}^{3} \sin(k\pi)", "1"]]
    assert fast_parse(pairs[0][0]) is None and fast_parse("0") is not None
    assert symbolic.scalars_equal(pairs) == [True, False]


def test_worker_reports_cpu_and_clears_caches() -> None:
    take_cpu_s()
    assert pool().call("scalars_equal", [[[r"\frac{1}{2}", "0.5"]]], 5.0) == [True]
    used = take_cpu_s()
    assert 0.0 < used < 5.0 and take_cpu_s() == 0.0
    assert pool().call("clear_caches", [], 5.0) is True
