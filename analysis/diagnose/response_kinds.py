"""What a response does -- works steps, checks itself, corrects a slip -- and those shares over steps.

:func:`response_kind` reads the laptop corpus' phrasings (``data_pipelines/corpus/chain_sum.py``):
a *worked* response writes at least one ``=`` step, a *self-check* says ``check ... ok``, a
*correction* says ``no ... so``. :func:`shares_by_step` turns sample dumps (rows with ``step`` and
``output``) into the share of responses of each kind per step; the R1-Zero curves
(``benchmarks.r1_zero_curves``) and ``make diagnose`` (``analysis.diagnose.behaviour``) use it.
Not covered: other languages' or models' phrasings of reflection ("wait", "let me verify").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

KINDS = ("worked", "check", "fix")


def response_kind(text: str) -> dict[str, bool]:
    """What a response does: works steps, checks, corrects a slip.

    >>> response_kind("3+5=8 no 3+5=8 so 8 check 8=8 ok")
    {'worked': True, 'check': True, 'fix': True}
    """
    return {"worked": "=" in text, "check": " check " in f" {text} ", "fix": " no " in f" {text} "}


def shares_by_step(rows: Iterable[dict[str, Any]]) -> dict[int, dict[str, float]]:
    """``{step: {worked, check, fix, check_or_fix, n}}``: shares of the rows' ``output`` per ``step``.

    >>> shares_by_step([{"step": 0, "output": "1+2=3 check 1+2=3 ok"}, {"step": 0, "output": "3"}])[0]
    {'worked': 0.5, 'check': 0.5, 'fix': 0.0, 'check_or_fix': 0.5, 'n': 2}
    """
    by_step: dict[int, list[dict[str, bool]]] = defaultdict(list)
    for r in rows:
        by_step[int(r.get("step", 0))].append(response_kind(str(r.get("output", ""))))
    out = {}
    for step in sorted(by_step):
        kinds = by_step[step]
        shares: dict[str, float] = {k: sum(x[k] for x in kinds) / len(kinds) for k in KINDS}
        shares["check_or_fix"] = sum(x["check"] or x["fix"] for x in kinds) / len(kinds)
        out[step] = {**shares, "n": len(kinds)}
    return out
