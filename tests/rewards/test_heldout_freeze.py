"""The held-out protocol's freeze: a set is scored only after its hash is recorded, only while its files
match that record, never after it is retired, and only in aggregate (no per-row verdict or id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.heldout import freeze as fz


def _row(i: int, gold: str, response: str, label: bool, source: str = "s") -> dict:
    return dict(
        id=f"r{i}",
        source=source,
        origin="o@c:p",
        case="c",
        gold=gold,
        response=response,
        label=label,
        original_label=label,
    )


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    d = tmp_path / "newset"
    d.mkdir()
    (d / "sources.json").write_text(
        json.dumps({"s": {"level": "answer", "why": "w"}, "t": {"level": "answer", "why": "w"}})
    )
    rows = [
        _row(0, "3", "3", True),
        _row(1, "3", "4", True),
        _row(2, "1/2", "1/2", False, "t"),
        _row(3, "x=1", "y", False, "t"),
    ]
    (d / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def same(level: str, row: dict) -> bool:
    """A stand-in scorer: credits a response equal to the gold."""
    return row["response"] == row["gold"]


def test_a_set_is_not_scored_before_it_is_frozen(cases: Path) -> None:
    with pytest.raises(ValueError, match="is not frozen: run `python -m benchmarks.heldout.freeze"):
        fz.score_frozen(cases, "v1", {"same": same})


def test_freeze_records_the_hash_in_results_then_scores_only_aggregates(cases: Path) -> None:
    rec = fz.freeze(cases, "v1")
    assert rec["sha256"] == fz.digest(cases)[0] and rec["rows"] == 4 and rec["sources"] == ["s", "t"]
    stored = json.loads(
        (Path(fz.results.results_dir()) / "bench_rewards" / "frozen_heldout.json").read_text()
    )
    assert stored["sets"]["v1"]["sha256"] == rec["sha256"] and len(stored["provenance"]["git_commit"]) == 40
    res = fz.score_frozen(cases, "v1", {"same": same})["scorers"]["same"]
    assert res["all"] == {"n": 4, "n_pos": 2, "n_neg": 2, "FN": 1, "FP": 1}
    assert set(res) == {"all", "by_source", "by_format"} and set(res["by_source"]) == {"s", "t"}
    text = json.dumps(res)
    assert not any(f'"r{i}"' in text for i in range(4)) and "misses" not in text  # no row is named


def test_a_changed_or_retired_set_is_refused(cases: Path) -> None:
    fz.freeze(cases, "v1")
    path = cases / "cases.jsonl"
    original = path.read_text()
    path.write_text(original.replace('"response": "4"', '"response": "3"'))
    with pytest.raises(ValueError, match=r"no longer matches frozen set 'v1' \(changed: \['cases.jsonl'\]\)"):
        fz.score_frozen(cases, "v1", {"same": same})
    with pytest.raises(ValueError, match="a changed set is a new set"):
        fz.freeze(cases, "v1")
    path.write_text(original)
    fz.retire("v1", "rule X changed after the round-7 score")
    with pytest.raises(ValueError, match="retired to development"):
        fz.score_frozen(cases, "v1", {"same": same})
