"""Reward functions that break veRL's contract, one way each (loaded by path in the broken-input table)."""

from __future__ import annotations

from typing import Any

import rewards


def good(data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any) -> dict:
    """This project's reward (a control: it passes)."""
    return rewards.compute_score(data_source, solution_str, ground_truth, extra_info, **kw)


def returns_list(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> list:
    """A batch-style function: one score per ... something, for a single response."""
    return [1.0, 0.0]


def returns_nan(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> float:
    """NaN for responses without a closing answer tag."""
    return 1.0 if "</answer>" in solution_str else float("nan")


def returns_str(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> str:
    """The score as text."""
    return "1.0"


def raises_on_empty(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> float:
    """Indexes into the response."""
    return float(solution_str[-1] == ground_truth[-1])


def credits_everything(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> float:
    """A hackable reward."""
    return 1.0


def keys_vary(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Any = None, **kw: Any
) -> dict:
    """Extra keys only for some responses (veRL stacks every key across the batch)."""
    res = rewards.compute_score(data_source, solution_str, ground_truth, extra_info, **kw)
    return res if res["acc"] else {"score": res["score"]}
