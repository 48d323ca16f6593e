"""Extraction rules that cannot be gamed, and the equivalence classes of the issue."""

from __future__ import annotations

import pytest

from rewards.math.equiv import equivalent
from rewards.math.extract import extract_final


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (r"\boxed{3} and then \boxed{4}", "several different final answers"),
        ("<answer>3</answer><answer>4</answer>", "several <answer> tags"),
        ("<think>so \\boxed{3}</think>", "no answer found"),
        ("<think>so \\boxed{3}", "unterminated <think>"),
        ("<answer>3, or maybe 4</answer>", "hedged answer"),
        ("<answer>  </answer>", "empty answer"),
        (r"\boxed{}", "empty answer"),
        (r"\boxed{\boxed{3}}", "box nested in a box"),
        ("<answer>3", "malformed <answer> tags"),
        ("Answer: 3\nAnswer: 4", "several different final answers"),
        (r"Perhaps \boxed{3}", "hedged answer"),
        (r"\boxed{1}" * 40, "too many boxed answers"),
    ],
)
def test_refused(text: str, reason: str) -> None:
    ex = extract_final(text)
    assert ex.pred is None and ex.reason == reason


@pytest.mark.parametrize(
    ("text", "pred"),
    [
        ("<think>a</think><answer>42</answer>", "42"),
        (r"<think>a</think><answer>so $\boxed{42}$</answer>", "42"),
        (r"We get \boxed{42}. Checking: yes. Final: \boxed{42.0}", "42.0"),
        ("Work\nAnswer: $42$", "$42$"),
        ("Final Answer: The final answer is $42$. I hope it is correct.", "$42$"),
        ("So the answer is 42.\nThanks!", "42."),
        ("#### 42", "42"),
        (r"\boxed{42}" + "\nAnswer: 42", "42"),
    ],
)
def test_extracted(text: str, pred: str) -> None:
    assert extract_final(text, allow_gsm8k=True).pred == pred


@pytest.mark.parametrize(
    ("pred", "gold", "same"),
    [
        ("1600", "1600.00", True),
        ("1600.1", "1600", False),
        ("1,600", "1600", True),
        (r"1\,600", "1600", True),
        (r"\dfrac{3}{4}", "0.75", True),
        (r"\frac34", r"\tfrac{3}{4}", True),
        (r"\sqrt{12}", r"2\sqrt{3}", True),
        ("3.464", r"2\sqrt{3}", False),
        (r"2\pi", r"\pi \cdot 2", True),
        ("6.28", r"2\pi", False),
        ("1.5e3", r"1.5\times 10^{3}", True),
        (r"25\%", "25", True),
        (r"\$18", "18", True),
        (r"18 \text{ cm}", "18", True),
        (r"\left(1, 2\right)", "(1,2)", True),
        ("(2, 1)", "(1, 2)", False),
        (r"[1, 5)", "[1,5]", False),
        (r"(1,\infty)\cup(-\infty,-1)", r"(-\infty,-1)\cup(1,\infty)", True),
        ("3, 2, 1", r"\{1,2,3\}", True),
        ("(C)", "C", True),
        ("B", "C", False),
        ("x = 3", "3", True),
        ("y = 1 + 2x", "y=2x+1", True),
        ("(x+1)^2", "x^2+2x+1", True),
        ("(x-1)^2", "x^2+2x+1", False),
        (r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", True),
        (r"\begin{pmatrix}1&3\\2&4\end{pmatrix}", r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", False),
        ("no solution", r"\emptyset", True),
        ("0", r"\emptyset", False),
        ("0.333", r"\frac{1}{3}", False),
        (r"9^{9^{9^9}}", "1", False),
    ],
)
def test_equivalence(pred: str, gold: str, same: bool) -> None:
    assert equivalent(pred, gold) is same


CORPUS = [
    r"2\sqrt{3}",
    r"\frac{\sqrt{3}}{2}",
    r"\frac{1}{\sqrt{2}}",
    r"-\frac{1}{2}",
    r"\frac13\pi",
    r"\pi/3",
    r"\pi \cdot 6",
    "4^{5}",
    r"1.5\times 10^3",
    "10^{-3}",
    "(x^{2})^{3}",
    r"x^{3}\cdot x^{3}",
    "1 + 2x + x^2",
    r"\frac{1+x}{x-1}",
    r"\sin 2x",
    r"\sin(2x)",
    r"2\sin x \cos x",
    "(a-b)(a+b)",
    r"\frac{1}{2}n(n+1)",
    "3+4i",
    "e^2",
    r"\exp(2)",
    "2e",
    r"\sec^2(y)",
    r"\tan^2(y)+1",
    r"\frac{x}{7}+\frac{2}{7}",
    r"\sqrt[3]{8}",
    "5!",
    r"\frac94\pi",
    r"\sqrt 2+\sqrt 5",
    r"\frac{\pi r}{h+r}",
    r"\ln 2",
    r"\log(x)",
    r"\sin^2 x + \cos^2 x",
    r"2^{1/2}",
    r"\sqrt{\frac{2}{3}}",
    r"\theta^2",
]


@pytest.mark.parametrize("latex", CORPUS)
def test_fast_parser_agrees_with_latex2sympy(latex: str) -> None:
    """Differential test: the fast parser builds the same value as latex2sympy (the fallback)."""
    import sympy

    from rewards.math.fastlatex import fast_parse
    from rewards.math.symbolic import parse

    fast, slow = fast_parse(latex), parse(latex)
    assert fast is not None
    names = {s: sympy.Symbol(s.name) for s in fast.free_symbols | slow.free_symbols}
    assert sympy.simplify(fast.subs(names) - slow.subs(names)) == 0
