"""Pinned verdicts: what our verifier answers on every development row and every tuning-table row.

``python -m benchmarks.devset.pin`` writes ``benchmarks/devset/verdicts.json`` (row id -> verdict per
setting; tuning-table ids are ``table-<n>``); ``tests/rewards/test_rewards_dev_verdicts.py``
recomputes them and asserts they are unchanged.
It pins behaviour, not correctness: a change meant to be verdict-neutral (a faster path) must leave the
file as it is; a change meant to alter verdicts regenerates it and the diff shows which rows moved.
The settings: each development row at the answer level and at the response level (strict), the
response level with ``answer_mode="flexible"``, and the answer level with the opt-in ``rel_tol=0.01``;
each tuning-table row (a response) with ``answer_mode="flexible"`` and with ``rel_tol=0.01`` (its strict
verdicts are pinned row by row in ``tests/rewards/test_rewards_table.py``).

What it does not do: time anything (``make bench-rewards``) or touch the held-out set.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from benchmarks.devset import HERE, load_dev
from benchmarks.heldout import golds, load_tuning

PINNED = HERE / "verdicts.json"


def _settings() -> dict[str, Callable[[dict[str, Any]], bool]]:
    import rewards  # here: the verifier loads only when verdicts are computed
    from rewards.math.equiv import equivalent  # here: the verifier loads only when verdicts are computed
    from rewards.sources.math import gold_answer  # here: the verifier loads only when verdicts are computed

    def answer(rel_tol: float) -> Callable[[dict[str, Any]], bool]:
        def score(r: dict[str, Any]) -> bool:
            pred = gold_answer(r["response"])
            return any(equivalent(pred, gold_answer(g), 1.0, rel_tol) for g in golds(r))

        return score

    def response(mode: str, rel_tol: float = 0.0) -> Callable[[dict[str, Any]], bool]:
        def score(r: dict[str, Any]) -> bool:
            gs = golds(r)
            gt = gs if isinstance(r["gold"], list) else gs[0]
            ds = r["data_source"]
            name = rewards.registry.resolve(ds)[0]
            m = mode if name in rewards.FLEXIBLE_SOURCES else "strict"
            tol = rel_tol if name in rewards.TOLERANT_SOURCES else 0.0  # other sources refuse the option
            return bool(rewards.compute_score(ds, r["response"], gt, answer_mode=m, rel_tol=tol)["acc"])

        return score

    return {
        "answer": answer(0.0),
        "response": response("strict"),
        "response_flexible": response("flexible"),
        "answer_rel_tol_0.01": answer(0.01),
        "table_flexible": response("flexible"),
        "table_rel_tol_0.01": response("strict", 0.01),
    }


def verdicts() -> dict[str, dict[str, bool]]:
    """Row id -> {setting: verdict} for every development row (``load_dev``) and tuning-table row."""
    dev, _ = load_dev()
    table = load_tuning()  # ids "table-<n>"
    out: dict[str, dict[str, bool]] = {r["id"]: {} for r in dev + table}
    for name, score in _settings().items():
        for r in table if name.startswith("table") else dev:
            out[r["id"]][name] = bool(score(r))
    return out


def main() -> int:
    """Write ``verdicts.json`` from the current verifier."""
    got = verdicts()
    PINNED.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED} ({len(got)} rows, {sum(map(len, got.values()))} verdicts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
