"""The labelled regression table (math_table.jsonl, built by build_table.py): one test per row.

Each row's verdict is asserted exactly; the rows the verifier is known to get wrong are strict
xfails (a fix makes them fail loudly, so the list stays true). The table is what ``build_table.py``
generates, byte for byte. This table was labelled by the project while building the verifier: it
is a regression test, not a measurement (held-out rates: ``make bench-rewards``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import rewards

HERE = Path(__file__).parent
TABLE = HERE / "math_table.jsonl"
ROWS = [json.loads(line) for line in TABLE.read_text().splitlines()]
BY_ID = {r["id"]: r for r in ROWS}
# id -> why the verifier's verdict differs from the label (policy or a gap we have not closed)
KNOWN_MISSES = {
    r["id"]: reason
    for r in ROWS
    if r["category"] == "known_miss"
    for reason in [
        {
            "3, 4": "a multi-part answer spread over several boxes is refused as several answers",
            "42": "a bare final number with no answer marker is not read",
            "0.25": "'0.25%' is credited against 0.25: a percent sign is read as a unit",
        }[r["gold"]]
    ]
}


def _build_module():
    spec = importlib.util.spec_from_file_location("build_table", HERE / "build_table.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def test_table_is_what_build_table_generates() -> None:
    rows = _build_module().rows()
    assert TABLE.read_text() == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def test_table_is_large_and_balanced() -> None:
    assert len(ROWS) >= 300
    assert sum(r["label"] for r in ROWS) >= 150
    assert sum(r["adversarial"] for r in ROWS) >= 40
    assert len({r["category"] for r in ROWS}) >= 20
    assert all(not r["label"] for r in ROWS if r["adversarial"])


def _params():
    for r in ROWS:
        marks = (
            [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[r["id"]])] if r["id"] in KNOWN_MISSES else []
        )
        yield pytest.param(r["id"], id=f"{r['id']}-{r['category']}", marks=marks)


@pytest.mark.parametrize("row_id", list(_params()))
def test_row_verdict(row_id: int) -> None:
    r = BY_ID[row_id]
    got = rewards.compute_score(r["data_source"], r["response"], r["gold"])
    assert got["acc"] is r["label"], (r["gold"], r["response"][-80:], got["reason"])
