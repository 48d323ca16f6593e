"""Verdict equality: every development row and tuning-table row gets the verdict pinned in
``benchmarks/devset/verdicts.json`` (written by ``python -m benchmarks.devset.pin`` from the verifier
before its latency work), in every pinned setting. A change meant to be verdict-neutral -- a cheaper
path, a cache, a warm-up -- must keep this test green; one meant to change verdicts regenerates the
file, and its diff names the rows that moved."""

from __future__ import annotations

import json

from benchmarks.devset.pin import PINNED, verdicts


def test_every_pinned_verdict_is_unchanged() -> None:
    pinned = json.loads(PINNED.read_text())
    got = verdicts()
    assert got.keys() == pinned.keys(), (
        "rows were added or removed: regenerate with python -m benchmarks.devset.pin"
    )
    moved = {
        f"{rid} [{k}]: pinned {v}, now {got[rid][k]}"
        for rid, settings in pinned.items()
        for k, v in settings.items()
        if got[rid].get(k) != v
    }
    assert not moved, "\n".join(sorted(moved))
    assert sum(map(len, pinned.values())) >= 2000  # every row in four dev settings, two table settings
