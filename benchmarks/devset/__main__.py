"""``python -m benchmarks.devset``: our verdict on every development row, misses first (design aid)."""

from __future__ import annotations

import sys

from benchmarks.devset import load_dev
from benchmarks.heldout import golds


def main() -> int:
    """Score every development row with our verifier at its source's level; print misses and totals."""
    import rewards  # here: the verifier loads only when this tool runs
    from rewards.math.equiv import equivalent  # here: the verifier loads only when this tool runs
    from rewards.sources.math import gold_answer  # here: the verifier loads only when this tool runs

    rows, left = load_dev()
    bad = 0
    for r in rows:
        gs = golds(r)
        if r["level"] == "answer":
            got = any(equivalent(gold_answer(r["response"]), gold_answer(g)) for g in gs)
        else:
            gt = gs if isinstance(r["gold"], list) else gs[0]
            got = bool(rewards.compute_score(r["data_source"], r["response"], gt)["acc"])
        if got != r["label"]:
            bad += 1
            kind = "FN" if r["label"] else "FP"
            print(f"{kind} {r['id']:22s} gold={r['gold']!r:32} response={r['response']!r}")
    print(f"{bad} wrong of {len(rows)} development rows ({len(left)} left out as held-out repeats)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
