"""``make reproduce``: the comparison of fresh against committed values, and (slow) the real re-run
of seed 0 of the R1-Zero miniature from an empty cache."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.reproduce import HEADLINE, committed, committed_inputs, compare

ROOT = Path(__file__).resolve().parents[2]


def test_committed_seed_is_inside_a_shifted_one_is_not() -> None:
    past = committed(HEADLINE[0])
    assert past and all(len(seeds) >= 2 for seeds in past.values())
    same = compare(HEADLINE[0], 0, {k: {0: v[0]} for k, v in past.items()}, past)
    assert same and all(r["inside"] for r in same)
    shifted = {k: {0: {m: x + 10.0 for m, x in v[0].items()}} for k, v in past.items()}
    assert not any(r["inside"] for r in compare(HEADLINE[0], 0, shifted, past))
    missing = compare(HEADLINE[0], 0, {}, past)
    assert all(r["fresh"] is None and not r["inside"] for r in missing)


def test_inputs_are_checked_against_the_compared_records_only(tmp_path: Path, monkeypatch) -> None:
    """The base models a fresh run is checked against are those of the experiments it is compared
    with: another experiment's base model under the same label (another corpus, an older record)
    does not make a fresh hash count as "the same"."""
    from core import results

    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    for name, sha in ((HEADLINE[0], "a" * 64), ("overtime_pay", "b" * 64)):
        run = {"model": {"weights_sha256": sha, "build": {"pretrain": {"seed": 0}}}}
        results.write_run(name, "r-s0", {"run": run})
    assert committed_inputs([HEADLINE[0]]) == {"base model, pretraining seed 0": ["a" * 64]}
    assert committed_inputs([HEADLINE[0], "overtime_pay"])["base model, pretraining seed 0"] == [
        "a" * 64,
        "b" * 64,
    ]
    assert committed_inputs(["not_recorded"]) == {}


@pytest.mark.slow
def test_reproduce_r1_zero_seed0_from_an_empty_cache(tmp_path: Path) -> None:
    """Seed 0 of the recipe arm, base model included, from an empty cache: every metric inside the
    committed seeds' range."""
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.reproduce", f"names=[{HEADLINE[0]}]", f"out={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    report = json.loads((tmp_path / "reproduce.json").read_text())
    assert report["rows"], proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert all(r["inside"] for r in report["rows"])


def test_the_recorded_comparison_renders_with_its_misses(tmp_path: Path, monkeypatch) -> None:
    """docs/provenance.md's block from results/reproduce/latest.json: a fresh value outside the
    committed range is marked and counted, a different base model is named different."""
    from core import results
    from docgen.status import results_reproduce

    past = committed(HEADLINE[0])
    design = results.read_experiment(HEADLINE[0])["design"]
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    assert "Not run yet" in results_reproduce().markdown
    results.write_experiment(HEADLINE[0], design=design)  # the targets the block counts against
    fresh = {k: {s: v[s] for s in (0, 1)} for k, v in past.items()}
    rows = compare(HEADLINE[0], 0, fresh, past) + compare(HEADLINE[0], 1, fresh, past)
    i = next(j for j, r in enumerate(rows) if r["seed"] == 1 and r["metric"] == "acc gain")
    rows[i] = {**rows[i], "fresh": -0.5, "inside": False}  # seed 1 loses accuracy: outside, misses the target
    inputs = {
        "base model, pretraining seed 0": {"fresh": ["b" * 64], "committed": ["a" * 64]},
        "test split t/test.parquet": {"fresh": ["c" * 64], "committed": ["c" * 64, "d" * 64]},
    }
    results.write_table("reproduce", "latest", {"seeds": [0, 1], "rows": rows, "inputs": inputs})
    text = results_reproduce().markdown
    assert f"{len(rows) - 1} of {len(rows)} fresh values lie inside" in text
    assert text.count("| NO |") == 1
    assert f"`{HEADLINE[0]}` 1/2" in text  # seed 0 meets both targets, seed 1 does not
    assert (
        "pretraining seed 0: fresh `bbbbbbbbbbbb`, committed records `aaaaaaaaaaaa` (**different**)" in text
    )
    assert (
        "t/test.parquet: fresh `cccccccccccc`, committed records `cccccccccccc, dddddddddddd` (the same)"
        in text
    )
    assert "| acc gain | " in text and "| 1/2 |" in text
    from docgen.r1_zero import r1_zero_headline, r1_zero_two_machines

    results.write_table("reproduce", "unfused_adamw", {"seeds": [0, 1], "rows": rows, "inputs": inputs})
    records = {
        n: results.read_json(tmp_path / "reproduce" / f"{n}.json") for n in ("latest", "unfused_adamw")
    }
    monkeypatch.setenv("RLVR_RESULTS", str(ROOT / "results"))  # the arms as committed, these records' rows
    monkeypatch.setattr("docgen.status.reproduce_record", lambda name="latest": records[name])
    head = r1_zero_headline().markdown
    # the last record in one sentence: its misses counted, its other base model named
    n = len(rows)  # the fresh values are the committed ones but one
    assert f"{n - 1} of {n} values identical to the committed run's and {n - 1} inside" in head
    assert "inside the committed seeds' range, from **another** base model" in head
    # the record made before the fix (docs/provenance.md): the records of the time beside its fresh seeds
    assert len([x for x in head.splitlines() if x.startswith("| outcome + format 0.1 (the recipe) | ")]) == 1
    two = r1_zero_two_machines().markdown
    rows_of = [x for x in two.splitlines() if x.startswith("| outcome + format 0.1 (the recipe) | ")]
    assert len(rows_of) == 2  # the two machines
    committed_row, fresh_row = rows_of
    assert "| first (records of the time) |" in committed_row
    assert committed_row.endswith("| 2/2 | 2/2 |")  # committed seeds 0 and 1 meet both targets
    assert fresh_row.endswith("| 1/2 | 2/2 |")  # seed 1's accuracy gain misses the +15-point target
