r"""Math word problems with a closed-form final answer: ``math`` (MATH, DAPO-Math-17k, AIME) and ``gsm8k``.

What it does: extracts exactly one final answer (``rewards.math.extract``: ``<answer>`` tag, last
``\boxed{}`` with every box agreeing, a final ``Answer:`` line, or GSM8K's ``#### X`` line) and
compares it with the gold (``rewards.math.equiv``). Gold may be stored as MATH does (a whole solution
with ``\boxed{}``), as GSM8K does (``... #### 72``) or as a bare answer (DAPO-Math-17k, AIME); a
list of golds credits an answer equivalent to any of them.

With ``answer_mode="flexible"`` a response with no answer marker at all is read the way a person reads
it: its last math span (``$...$``, ``\\(...\\)``, ``\\[...\\]``), else the single number of its last
sentence (two different numbers there: no answer). Every other rule -- one final answer, hedges --
stays.

What it does not do: partial credit, or read answers from the reasoning of a ``<think>`` block.
"""

from __future__ import annotations

from typing import Any

from rewards.math.equiv import equivalent, timed_out
from rewards.math.extract import extract_final, find_boxes
from rewards.math.normalize import clean
from rewards.math.scalars import cpu_used_s
from rewards.registry import PREFIXES, register, result
from rewards.worker import pool


def gold_answer(ground_truth: Any) -> str:
    r"""The bare gold answer from any of the stored forms.

    >>> gold_answer(r"so the total is $\boxed{\frac{1}{2}}$.")
    '\\frac{1}{2}'
    >>> gold_answer("Natalia sold 48/2 = 24 clips.\n#### 72")
    '72'
    """
    gt = str(ground_truth).strip()
    if "\\boxed" in gt or "\\fbox" in gt:
        boxes, _ = find_boxes(gt)
        if boxes:
            return boxes[-1].strip()
    if "####" in gt:
        return gt.rsplit("####", 1)[1].strip()
    return gt


def _verify(
    solution_str: str,
    ground_truth: Any,
    timeout_s: float,
    allow_gsm8k: bool,
    rel_tol: float = 0.0,
    flexible: bool = False,
) -> dict[str, Any]:
    try:
        pool().ensure_started()  # once per process: the worker's start-up is not part of any call's limit
    except RuntimeError:
        pass  # no worker (e.g. spawning forbidden): plain numbers still work, symbolic answers score 0
    c0 = cpu_used_s()  # the limit is CPU time (this thread and the worker): load does not shrink it

    def agree(a: str, b: str) -> bool:  # several spellings of one final answer
        return equivalent(a, b, max(1e-3, timeout_s - (cpu_used_s() - c0)))

    ex = extract_final(solution_str, allow_gsm8k=allow_gsm8k, agree=agree, allow_last=flexible)
    if ex.pred is None:
        return result(False, None, ex.reason)
    golds = [gold_answer(g) for g in _as_list(ground_truth)]
    golds = [g for g in golds if g]
    if not golds:
        return result(False, clean(ex.pred), "empty gold answer")
    acc = any(equivalent(ex.pred, g, max(1e-3, timeout_s - (cpu_used_s() - c0)), rel_tol) for g in golds)
    return result(acc, clean(ex.pred), "timeout" if timed_out() else "wrong answer")


def _verify_with(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """``_verify`` with the options ``compute_score`` put in ``extra_info`` (tolerance, answer mode)."""
    flexible = extra_info.get("answer_mode") == "flexible"
    return _verify(
        solution_str, ground_truth, timeout_s, True, float(extra_info.get("rel_tol", 0.0)), flexible
    )


def _as_list(ground_truth: Any) -> list[Any]:
    """Several accepted golds may come as a list (or a numpy array from parquet)."""
    if hasattr(ground_truth, "tolist") and not isinstance(ground_truth, str):
        ground_truth = ground_truth.tolist()
    return list(ground_truth) if isinstance(ground_truth, (list, tuple)) else [ground_truth]


@register(
    "math",
    "lighteval/MATH",
    "DigitalLearningGmbH/MATH-lighteval",
    "HuggingFaceH4/MATH-500",
    "BytedTsinghua-SIA/DAPO-Math-17k",
    "math_dapo",
    "math500",
    "numina_math",
)
def verify_math(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    r"""Credit one unambiguous final answer equivalent to the gold.

    >>> verify_math(r"... so $x=\dfrac{6}{4}$, i.e. \boxed{\frac{3}{2}}", "1.5", {}, 1.0)["acc"]
    True
    >>> verify_math(r"\boxed{3} or \boxed{4}", "3", {}, 1.0)["reason"]
    'several different final answers'
    """
    return _verify_with(solution_str, ground_truth, extra_info, timeout_s)


@register("gsm8k", "openai/gsm8k")
def verify_gsm8k(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Like ``math``, and the ``#### 72`` line of GSM8K's own format also counts.

    >>> verify_gsm8k("48 + 24 = 72\\n#### 72", "#### 72", {}, 1.0)["acc"]
    True
    """
    return _verify_with(solution_str, ground_truth, extra_info, timeout_s)


PREFIXES.add("aime", "math")
PREFIXES.add("AI-MO/aimo", "math")
