"""``arithmetic``: integer addition ``a+b``, the embedded task of the laptop-scale engine.

The question is just ``"874+404"`` (short and inside the tiny character tokenizer's alphabet);
the ground truth is the sum as a string (``"1278"``). Operands are drawn either uniformly from
``[10**(min_digits-1), 10**max_digits - 1]`` (default 10..999, the feasibility run's range) or,
when ``digits`` is given, per problem from one of the listed digit counts (e.g. ``digits=[2, 3, 4]``
gives one third each of 2-, 3- and 4-digit sums: mixed difficulty for dynamic-sampling sweeps).
``extra_info`` records ``a``, ``b`` and ``digits`` (the larger operand's digit count).

:func:`render_trace` writes the programmatic reasoning trace used for the cold-start SFT
(R1's stage 1 in miniature): one column per digit from the least significant, ``x+y+carry=SS``
with a two-digit column sum, then the answer::

    <think>4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>

Not covered: subtraction, multiplication, negative numbers.
"""

from __future__ import annotations

import random
from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import make_row, resolve_template, task_rng


def _draw(rng: random.Random, lo_digits: int, hi_digits: int) -> int:
    return rng.randint(10 ** (lo_digits - 1) if lo_digits > 1 else 0, 10**hi_digits - 1)


def render_trace(a: int, b: int) -> str:
    """The column-addition trace and answer for ``a + b`` (the SFT target).

    >>> render_trace(874, 404)
    '<think>4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>'
    >>> render_trace(5, 7)
    '<think>5+7+0=12</think><answer>12</answer>'
    """
    if a < 0 or b < 0:
        raise ValueError(f"[data] arithmetic traces need non-negative operands, got {a}, {b}")
    da, db = str(a)[::-1], str(b)[::-1]
    carry, cols = 0, []
    for i in range(max(len(da), len(db))):
        x = int(da[i]) if i < len(da) else 0
        y = int(db[i]) if i < len(db) else 0
        s = x + y + carry
        cols.append(f"{x}+{y}+{carry}={s:02d}")
        carry = s // 10
    return f"<think>{','.join(cols)}</think><answer>{a + b}</answer>"


@TASKS.register("arithmetic")
def generate(
    n: int,
    seed: int,
    split: str,
    template: str = "plain",
    min_digits: int = 2,
    max_digits: int = 3,
    digits: list[int] | None = None,
) -> list[dict[str, Any]]:
    """``n`` addition rows for ``split``; deterministic in (seed, split, params).

    Args:
        n: number of rows.
        seed: master seed (train and test draw from different streams).
        split: "train" or "test" (any string; it selects the stream).
        template: prompt template name (``plain``: the question alone).
        min_digits, max_digits: operand range ``[10**(min_digits-1), 10**max_digits - 1]``.
        digits: if given, each problem picks one digit count from this list and both operands
            have exactly that many digits (overrides min/max_digits).
    """
    if digits is not None:
        digits = [int(d) for d in digits]
        if not digits or any(d < 1 or d > 12 for d in digits):
            raise ValueError(f"[data] arithmetic digits must be a non-empty list of 1..12, got {digits}")
    elif not 1 <= min_digits <= max_digits <= 12:
        raise ValueError(
            f"[data] arithmetic needs 1 <= min_digits ({min_digits}) <= max_digits ({max_digits}) <= 12"
        )
    tpl = resolve_template(template, ("answer_tag",), "arithmetic")
    rng = task_rng("arithmetic", seed, split)
    rows = []
    for i in range(n):
        if digits is not None:
            d = rng.choice(digits)
            a, b = _draw(rng, d, d), _draw(rng, d, d)
        else:
            a, b = _draw(rng, min_digits, max_digits), _draw(rng, min_digits, max_digits)
        rows.append(
            make_row(
                data_source="arithmetic",
                question=f"{a}+{b}",
                answer=str(a + b),
                ability="math",
                split=split,
                index=i,
                template=tpl,
                extra={"a": a, "b": b, "digits": max(len(str(a)), len(str(b)))},
            )
        )
    return rows


def sft_response(extra_info: dict[str, Any]) -> str:
    """The SFT target for one row (the local engine's cold start looks this function up by task name).

    >>> sft_response({"a": 874, "b": 404})
    '<think>4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>'
    """
    return render_trace(int(extra_info["a"]), int(extra_info["b"]))
