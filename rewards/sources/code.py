"""``code``: a Python program from the response, run against hidden unit tests in the sandbox.

What it does: takes the last fenced code block (```python ... ``` or ``` ... ```) after the
reasoning, runs it with ``rewards.sandbox.run_tests`` against the ground truth
(``{"inputs": [...], "outputs": [...], "fn_name"?: str}`` as a dict or JSON string), and credits it
iff every test passes (no partial credit: partial credit rewards passing the easy tests only).
``pred`` is ``"passed/total"``. The time limit ``timeout_s`` covers the whole test suite.

What it does not do: other languages, or show the tests to the model in any form.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewards.math.extract import split_think
from rewards.registry import register, result
from rewards.sandbox import run_tests

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
MAX_CODE_CHARS = 50_000


def extract_code(text: str) -> str | None:
    """The last fenced code block after the reasoning.

    >>> extract_code("<think>try ```python\\nx=1\\n```</think>Final:\\n```python\\nprint(2)\\n```")
    'print(2)\\n'
    """
    parts = split_think(text)
    if parts is None:
        return None
    blocks = _FENCE.findall(parts[1])
    if not blocks or not blocks[-1].strip() or len(blocks[-1]) > MAX_CODE_CHARS:
        return None
    return blocks[-1]


@register("code", "codecontests", "apps", "taco", "livecodebench")
def verify_code(
    solution_str: str, ground_truth: Any, extra_info: dict[str, Any], timeout_s: float
) -> dict[str, Any]:
    """All hidden tests pass.

    >>> verify_code("```python\\nprint(sum(map(int, input().split())))\\n```", '{"inputs": ["1 2\\\\n"], "outputs": ["3\\\\n"]}', {}, 1.0)["acc"]
    True
    """
    code = extract_code(solution_str)
    if code is None:
        return result(False, None, "no code block after the reasoning")
    tests = ground_truth if isinstance(ground_truth, dict) else json.loads(str(ground_truth))
    res = run_tests(code, tests, timeout_s=timeout_s)
    return result(res.all_passed, f"{res.passed}/{res.total}", f"tests: {res.status}: {res.reason}"[:300])
