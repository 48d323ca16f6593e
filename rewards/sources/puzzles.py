"""Puzzle tasks: ``countdown`` (TinyZero) and ``reasoning_gym/<task>`` (reasoning-gym's own scoring).

What it does:
- ``countdown``: gold is ``{"target": int, "numbers": [ints]}`` (a dict, or that as JSON). The single
  ``<answer>`` tag must hold an arithmetic expression over ``+ - * /`` and parentheses that uses
  each given number exactly once and equals the target exactly. The expression is walked as a
  Python AST with ``Fraction`` arithmetic -- never ``eval``ed -- and is bounded in size.
- ``reasoning_gym/<task>`` (e.g. ``reasoning_gym/spell_backward``; the task is reasoning-gym's dataset
  name): the single ``<answer>`` tag content is scored by reasoning-gym's
  ``get_score_answer_fn(<task>)`` against the entry -- ``extra_info["rg_entry"]`` (the whole entry as
  ``data_pipelines`` writes it, dict or JSON) or ``{"metadata": extra_info["metadata"]}`` -- with
  ``answer`` set to the ground truth; credited iff the score is 1.0.
  The raw score is returned as ``partial``.

What it does not do: other countdown variants (numbers reused, exponentiation), or time-bound
reasoning-gym's scorers (they are plain string / small parsers; the caller's limit does not apply).
"""

from __future__ import annotations

import ast
import json
from collections import Counter
from fractions import Fraction
from typing import Any

from rewards.registry import PREFIXES, register, result
from rewards.sources.tagged import single_tag_answer

_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


def _walk(node: ast.AST, used: list[int]) -> Fraction:
    if isinstance(node, ast.Expression):
        return _walk(node.body, used)
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value < 10**9:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_walk(node.left, used), _walk(node.right, used))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        num = _walk(node.left, used)
        den = _walk(node.right, used)
        if den == 0:
            raise ZeroDivisionError
        return num / den
    raise ValueError(f"not allowed in a countdown answer: {type(node).__name__}")


def countdown_value(expr: str) -> tuple[Fraction, list[int]] | None:
    """Exact value of a ``+-*/()`` integer expression and the numbers it uses; None if not one.

    >>> countdown_value("(25 - 5) * 4 / 2")
    (Fraction(40, 1), [25, 5, 4, 2])
    >>> countdown_value("__import__('os')") is None
    True
    """
    expr = expr.strip().replace("×", "*").replace("÷", "/")
    if not expr or len(expr) > 200 or any(c not in "0123456789+-*/() " for c in expr):
        return None
    try:
        used: list[int] = []
        return _walk(ast.parse(expr, mode="eval"), used), used
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return None


def _gold_dict(ground_truth: Any) -> dict[str, Any]:
    if isinstance(ground_truth, dict):
        return ground_truth
    return json.loads(str(ground_truth))


@register("countdown", "countdown_tinyzero")
def verify_countdown(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Equation in the single answer tag uses each number once and hits the target.

    >>> verify_countdown("<answer>(6 + 4) * 3</answer>", '{"target": 30, "numbers": [3, 4, 6]}', {}, 1.0)["acc"]
    True
    >>> verify_countdown("<answer>6 * 5</answer>", '{"target": 30, "numbers": [3, 4, 6]}', {}, 1.0)["reason"]
    'must use each given number exactly once'
    """
    inner = single_tag_answer(solution_str)
    if inner is None:
        return result(False, None, "need exactly one <answer> tag after the reasoning")
    gold = _gold_dict(ground_truth)
    target, numbers = int(gold["target"]), [int(x) for x in gold["numbers"]]
    got = countdown_value(inner.split("=")[0])
    pred = inner.strip()
    if got is None:
        return result(False, pred, "not a +-*/ expression of integers")
    value, used = got
    if Counter(used) != Counter(numbers):
        return result(False, pred, "must use each given number exactly once")
    return result(value == target, pred)


@register("reasoning_gym")
def verify_reasoning_gym(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """Score the single answer tag with reasoning-gym's scorer for the task named in the data source.

    >>> verify_reasoning_gym("<answer>ainomma</answer>", "ainomma", {"data_source": "reasoning_gym/spell_backward"}, 1.0)["acc"]
    True
    """
    import reasoning_gym  # optional: reasoning-gym only for its data sources (slow import)

    task = str(extra_info.get("data_source", "")).partition("/")[2] or str(extra_info.get("rg_task") or "")
    if not task:
        raise KeyError("reasoning_gym needs a task: use data_source 'reasoning_gym/<task>'")
    inner = single_tag_answer(solution_str)
    if inner is None:
        return result(False, None, "need exactly one <answer> tag after the reasoning")
    entry = extra_info.get("rg_entry")
    if entry:  # the whole reasoning-gym entry, as data_pipelines writes it
        entry = dict(json.loads(entry) if isinstance(entry, str) else entry)
    else:
        meta = extra_info.get("metadata") or {}
        meta = json.loads(meta) if isinstance(meta, str) else dict(meta)
        entry = {"question": extra_info.get("question", ""), "metadata": meta}
    entry["answer"] = str(ground_truth)
    score = float(reasoning_gym.get_score_answer_fn(task)(inner.strip(), entry))
    return result(score >= 1.0, inner.strip(), "reasoning-gym score < 1", partial=score)


PREFIXES.add("reasoning_gym/", "reasoning_gym")
