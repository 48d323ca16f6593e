"""``countdown``: reach a target with each given number used exactly once (+, -, *, /).

TinyZero's task (Jiayi-Pan/TinyZero, after the Countdown game show), generated here so every
instance is solvable: the numbers are drawn first, a random expression over all of them is
built (division only when exact, intermediate values positive integers), and its value is the
target. The ground truth is a JSON string ``{"target": t, "numbers": [...]}`` (the verifier
checks the model's equation, not a fixed answer); ``extra_info`` also carries ``target``,
``numbers`` and one reference ``solution``. Not covered: unsolvable instances, target ranges
that need rejection sampling over huge spaces.
"""

from __future__ import annotations

import json
import random
from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import make_row, resolve_template, task_rng

QUESTION = "Using the numbers {numbers}, create an equation that equals {target}."
INSTRUCTIONS = (
    " You can use basic "
    "arithmetic operations (+, -, *, /) and each number exactly once. Show your work in <think> "
    "</think> tags, and return the final equation in <answer> </answer> tags, for example "
    "<answer> (1 + 2) / 3 </answer>."
)


def _combine(rng: random.Random, a: tuple[int, str], b: tuple[int, str]) -> tuple[int, str] | None:
    (x, ex), (y, ey) = a, b
    ops = ["+", "*", "-", "/"]
    rng.shuffle(ops)
    for op in ops:
        if op == "+":
            return x + y, f"({ex} + {ey})"
        if op == "*" and x * y <= 10_000:
            return x * y, f"({ex} * {ey})"
        if op == "-" and x != y:
            return (x - y, f"({ex} - {ey})") if x > y else (y - x, f"({ey} - {ex})")
        if op == "/" and y > 1 and x % y == 0:
            return x // y, f"({ex} / {ey})"
    return None


def solvable_instance(
    rng: random.Random, count: int, max_number: int, max_target: int, tries: int = 1000
) -> tuple[list[int], int, str]:
    """Draw ``count`` numbers in 1..max_number and a target in 1..max_target reachable from them."""
    for _ in range(tries):
        numbers = [rng.randint(1, max_number) for _ in range(count)]
        pool = [(x, str(x)) for x in numbers]
        while len(pool) > 1:
            i, j = rng.sample(range(len(pool)), 2)
            merged = _combine(rng, pool[i], pool[j])
            if merged is None:
                break
            pool = [p for k, p in enumerate(pool) if k not in (i, j)] + [merged]
        if len(pool) == 1 and 1 <= pool[0][0] <= max_target:
            return numbers, pool[0][0], pool[0][1][1:-1] if pool[0][1].startswith("(") else pool[0][1]
    raise ValueError(
        f"[data] no solvable countdown instance in {tries} tries (count={count}, "
        f"max_number={max_number}, max_target={max_target}); raise max_target"
    )


@TASKS.register("countdown")
def generate(
    n: int,
    seed: int,
    split: str,
    template: str = "r1_zero",
    min_count: int = 3,
    max_count: int = 4,
    max_number: int = 99,
    max_target: int = 100,
) -> list[dict[str, Any]]:
    """``n`` countdown rows for ``split``; deterministic in (seed, split)."""
    if not 2 <= min_count <= max_count:
        raise ValueError(f"[data] need 2 <= min_count ({min_count}) <= max_count ({max_count})")
    tpl = resolve_template(template, ("answer_tag",), "countdown")
    rng = task_rng("countdown", seed, split)
    rows = []
    for i in range(n):
        numbers, target, solution = solvable_instance(
            rng, rng.randint(min_count, max_count), max_number, max_target
        )
        question = QUESTION.format(numbers=numbers, target=target)
        rows.append(
            make_row(
                data_source="countdown",
                question=question,
                prompt_text=question + INSTRUCTIONS,
                answer=json.dumps({"target": target, "numbers": numbers}),
                ability="math",
                split=split,
                index=i,
                template=tpl,
                extra={"target": target, "numbers": numbers, "solution": solution},
            )
        )
    return rows
