"""experiments.numerics_trace and its docs block: where two processors' weight traces part, rendered."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import results
from docgen.status import numerics_trace as block
from experiments import numerics_trace as nt


def test_first_difference_is_the_first_step_that_differs() -> None:
    assert nt.first_difference(["a", "b", "c"], ["a", "b", "c"]) is None
    assert nt.first_difference(["a", "b", "c"], ["a", "x", "y"]) == 2
    assert nt.first_difference(["a"], ["z"]) == 1
    with pytest.raises(ValueError):  # traces of different lengths are not compared
        nt.first_difference(["a"], ["a", "b"])


def test_worker_command_runs_natively_or_under_the_emulator() -> None:
    native = nt.worker_command(None, "project", 3)
    assert native[-3:] == ["--worker", "project", "3"] and native[0] != nt.EMULATOR
    assert nt.worker_command("Haswell-v4", "project", 3)[:3] == [nt.EMULATOR, "-cpu", "Haswell-v4"]


def test_the_block_marks_the_step_where_weights_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    assert "Not run yet" in block().markdown
    row = {"corpus_same": True, "init_same": True, "sqrt_misrounded": 0.15}
    rows = [
        {**row, "processor": "native", "optimizer": "project", "first_step_differing": None},
        {**row, "processor": "Haswell-v4", "optimizer": "project", "first_step_differing": None},
        {**row, "processor": "Haswell-v4", "optimizer": "torch_default", "first_step_differing": 1},
        {
            **row,
            "processor": "EPYC-Rome",
            "optimizer": "torch_default",
            "init_same": False,
            "first_step_differing": 1,
        },
    ]
    results.write_table(
        "numerics_trace", "latest", {"steps": 6, "rows": rows, "emulator": "qemu 7.2", "native": {}}
    )
    text = block().markdown
    assert text.count("| never |") == 2 and text.count("| **1** |") == 2
    assert "| Haswell-v4 (emulated) | `torch_default` | yes |" in text
    assert "| EPYC-Rome (emulated) | `torch_default` | **no** |" in text  # initial weights differ
    assert "of 6" in text and "15.0%" in text and "qemu 7.2" in text


def test_the_block_shows_the_rl_runs_and_the_values_that_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    row = {"corpus_same": True, "init_same": True, "sqrt_misrounded": 0.15, "optimizer": "project"}
    rows = [{**row, "processor": "native", "first_step_differing": None}]
    results.write_table(
        "numerics_trace", "latest", {"steps": 6, "rows": rows, "emulator": "qemu", "native": {}}
    )
    assert "RL steps" not in block().markdown  # no RL record yet
    rl = [
        {"processor": "native", "files": 5, "files_differing": [], "metrics": 90, "metrics_differing": {}},
        {
            "processor": "Haswell-v4",
            "files": 5,
            "files_differing": ["rollouts/2.jsonl"],
            "metrics": 90,
            "metrics_differing": {"1/training/x": [1.0, 0.5]},
        },
    ]
    results.write_table("numerics_trace", "rl", {"steps": 2, "rows": rl})
    text = block().markdown
    assert "Then 2 RL steps" in text
    assert "| Haswell-v4 (emulated) | 4 of 5 | 89 of 90 | `1/training/x` |" in text
    assert "| 5 of 5 | 90 of 90 | none |" in text


def test_a_run_is_compared_by_its_files_and_its_metrics_without_clocks(tmp_path: Path) -> None:
    (tmp_path / "rollouts").mkdir()
    (tmp_path / "rollouts" / "1.jsonl").write_text("a\n")
    (tmp_path / "checkpoints" / "global_step_2").mkdir(parents=True)
    (tmp_path / "checkpoints" / "global_step_2" / "state.pt").write_bytes(b"w")
    (tmp_path / "checkpoints" / "global_step_1").mkdir()
    (tmp_path / "checkpoints" / "global_step_1" / "state.pt").write_bytes(b"old")  # not the last step
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "data": {"rlvr/gold_acc": 0.5, "timing_s/gen": 3.0, "perf/throughput": 9}}\n'
    )
    assert sorted(nt.run_files(tmp_path, 2)) == ["checkpoints/global_step_2/state.pt", "rollouts/1.jsonl"]
    assert nt.run_metrics(tmp_path) == {"1/rlvr/gold_acc": 0.5}
    cmd = nt.rl_command("Haswell-v4", tmp_path, 2)
    assert cmd[:3] == [nt.EMULATOR, "-cpu", "Haswell-v4"] and "trainer.total_training_steps=2" in cmd
