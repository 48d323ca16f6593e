"""The arithmetic task, its SFT traces, and the engine's data files (written once, never stale)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from data_pipelines.schema import validate_row
from data_pipelines.tasks import TASKS
from data_pipelines.tasks.arithmetic import render_trace, sft_response
from recipes.local.data import PromptStream, ensure_task_files


def test_rows_traces_and_mixed_difficulty() -> None:
    rows = TASKS.get("arithmetic")(n=50, seed=3, split="train")
    for i, r in enumerate(rows):
        validate_row(r, "arithmetic", i)
        a, b = r["extra_info"]["a"], r["extra_info"]["b"]
        assert r["reward_model"]["ground_truth"] == str(a + b) and 10 <= a <= 999
        assert sft_response(r["extra_info"]).endswith(f"<answer>{a + b}</answer>")
    assert rows == TASKS.get("arithmetic")(n=50, seed=3, split="train")
    assert rows != TASKS.get("arithmetic")(n=50, seed=3, split="test")
    mixed = TASKS.get("arithmetic")(n=300, seed=0, split="train", digits=[2, 3, 4])
    assert {r["extra_info"]["digits"] for r in mixed} == {2, 3, 4}
    assert render_trace(99, 1) == "<think>9+1+0=10,9+0+1=10</think><answer>100</answer>"


def test_scorer_credits_the_trace() -> None:
    from rewards import compute_score

    r = compute_score("arithmetic", render_trace(874, 404), "1278", format_weight=0.1)
    assert r["acc"] and r["format"] == 1.0 and r["score"] == pytest.approx(1.1)


def _cfg(tmp_path, **params):
    return OmegaConf.create(
        {
            "data": {
                "train_files": str(tmp_path / "train.parquet"),
                "val_files": str(tmp_path / "test.parquet"),
            },
            "local": {
                "task": {"name": "arithmetic", "train_n": 20, "val_n": 10, "seed": 0, "params": params}
            },
        }
    )


def test_task_files_written_once_and_stale_files_regenerated(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))  # the run cache's files: written, regenerated when stale
    ensure_task_files(_cfg(tmp_path, max_digits=3))
    first = (tmp_path / "train.parquet").stat().st_mtime_ns
    ensure_task_files(_cfg(tmp_path, max_digits=3))
    assert (tmp_path / "train.parquet").stat().st_mtime_ns == first
    ensure_task_files(_cfg(tmp_path, max_digits=4))
    assert (tmp_path / "train.parquet").stat().st_mtime_ns != first


def test_prompt_stream_is_resumable() -> None:
    a = PromptStream(list(range(10)), seed=1)  # type: ignore[arg-type]
    seq = a.take(25)
    b = PromptStream(list(range(10)), seed=1, position=13)  # type: ignore[arg-type]
    assert b.take(12) == seq[13:] and sorted(seq[:10]) == list(range(10))


def test_untagged_cold_start_targets_and_cache_key() -> None:
    from recipes.local.coldstart import build_meta, untag_answer

    t = sft_response({"a": 874, "b": 404})
    assert untag_answer(t) == t.replace("<answer>", "").replace("</answer>", "")
    assert "<answer>" not in untag_answer(t) and untag_answer(t).endswith("</think>1278")
    base = OmegaConf.create(
        {
            "local": {
                "model": {"h": 1},
                "task": {"name": "arithmetic"},
                "sft": {"seed": 0, "untagged_answer_rate": 0.0},
                "threads": 1,
            }
        }
    )
    # at its default the knob is left out of the cache key (older cold starts stay valid) ...
    assert "untagged_answer_rate" not in build_meta(base)["sft"]
    # ... and any other value is part of it, so a broken-format start never reuses a clean one
    base.local.sft.untagged_answer_rate = 0.5
    assert build_meta(base)["sft"]["untagged_answer_rate"] == 0.5
    # the thread count the build runs at changes its floats, so it is part of the key
    other = OmegaConf.merge(base, {"local": {"threads": 2}})
    assert build_meta(other) != build_meta(base) and build_meta(other)["threads"] == 2
