"""benchmarks.bench_data_filter on a tiny random model: the record splits the filter's own work into
per-sample and per-run parts that add up to what the filter timed, and the docs block reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_data_filter
from core.cli import call
from docgen.benchmarks import filter_overhead


def test_the_record_splits_the_filters_own_work(
    tiny_checkpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    argv = [f"model={tiny_checkpoint()}", "prompts=8", "n=2", "max_new_tokens=8", "rounds=1"]
    assert call(bench_data_filter.command, "command", "bench_data_filter", argv) == 0
    res = json.loads((tmp_path / "results" / "bench_data_filter" / "latest.json").read_text())
    t, own = res["inside_filter_last_round"], res["own_work"]
    near = {"rel": 1e-4, "abs": 1e-5}  # the record keeps 6 significant digits
    assert own["per_sample_s"] == pytest.approx(t["score_s"] + t["write_s"], **near)
    assert own["per_run_s"] == pytest.approx(t["total_s"] - t["generate_s"] - own["per_sample_s"], **near)
    assert 0 < t["outputs_s"] + t["plot_s"] <= own["per_run_s"]  # both timed parts are per run
    assert own["per_run_share"] == pytest.approx(own["per_run_s"] / t["generate_s"], **near)
    assert res["setup"]["model_key"] is None  # a model the project did not build: no key to name
    text = filter_overhead().markdown
    verdict = "met" if res["overhead"]["cpu"] <= 0.10 else "missed"
    assert f"target ≤ 10%: {verdict} by the median" in text and f"{own['per_run_s']:.2f} s" in text
    per_round = res["whole_filter"]["cpu_s"][0] / res["generation_alone"]["cpu_s"][0] - 1
    assert f"round by round {per_round:+.1%} to {per_round:+.1%}" in text  # one round: its own value
    assert f"`{tiny_checkpoint()}`" in text
