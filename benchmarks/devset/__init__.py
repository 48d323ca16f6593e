"""The development split: verifier test cases of other projects, read and used to design verifier changes.

Kept apart from the held-out cases (``benchmarks/heldout``, never used for design): its rows have the
held-out schema (``id``, ``source``, ``origin`` = ``owner/repo@commit:path``, ``case``, ``gold``,
``response``, ``label``, ``original_label``), its own ``sources.json`` (the level each origin's harness
scores at), and every source in it is marked in-sample for ours. ``load_dev()`` reads and checks it and
leaves out any row whose (gold, response) pair is also a held-out row, so tuning on it never touches a
held-out case. Run ``python -m benchmarks.devset`` to list our verdicts (misses first).

What it does not do: score latency or write results (``benchmarks.bench_rewards`` reports this split
beside the others).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.heldout import golds, load_heldout

HERE = Path(__file__).resolve().parent


def load_dev() -> tuple[list[dict[str, Any]], list[str]]:
    """(development rows, ids left out because a held-out row has the same gold and response)."""
    held = {(g, r["response"]) for r in load_heldout() for g in golds(r)}
    kept, left = [], []
    for r in load_heldout(HERE):
        if any((g, r["response"]) in held for g in golds(r)):
            left.append(r["id"])
        else:
            kept.append(r)
    return kept, left
