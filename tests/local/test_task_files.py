"""The local engine's generated task files: the train split holds no test prompt; stale cache files
are regenerated, stale files elsewhere refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from core.data import read_rows
from recipes.local.data import ensure_task_files


def _cfg(root: Path, train_n: int = 3000, val_n: int = 500) -> OmegaConf:
    return OmegaConf.create(
        {
            "data": {"train_files": str(root / "train.parquet"), "val_files": str(root / "test.parquet")},
            "local": {
                "task": {
                    "name": "arithmetic",
                    "train_n": train_n,
                    "val_n": val_n,
                    "seed": 0,
                    "params": {"min_digits": 1, "max_digits": 2},  # a small space: overlap is certain
                }
            },
        }
    )


def _prompts(path: Path) -> list[str]:
    return [r["prompt"][-1]["content"] for r in read_rows(path)]


def test_train_split_holds_no_test_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    ensure_task_files(_cfg(tmp_path))
    train, test = _prompts(tmp_path / "train.parquet"), set(_prompts(tmp_path / "test.parquet"))
    assert len(train) == 3000 and len(test) > 100
    assert not set(train) & test
    side = json.loads((tmp_path / "train.parquet.task.json").read_text())
    assert side["dropped_test_overlap"] > 0 and side["excludes_test_prompts"] == 500


def test_stale_cache_file_is_regenerated_stale_file_elsewhere_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, elsewhere = tmp_path / "cache", tmp_path / "mine"
    monkeypatch.setenv("RLVR_CACHE", str(cache))
    ensure_task_files(_cfg(cache, train_n=200))
    ensure_task_files(_cfg(cache, train_n=300))  # the run cache's own file: regenerated
    assert len(_prompts(cache / "train.parquet")) == 300
    ensure_task_files(_cfg(cache, train_n=200))
    elsewhere.mkdir()  # a user's copy of files generated from another spec
    for f in ("train.parquet", "train.parquet.task.json", "test.parquet", "test.parquet.task.json"):
        shutil.copy(cache / f, elsewhere / f)
    ensure_task_files(_cfg(elsewhere, train_n=200))
    with pytest.raises(ValueError, match=r"\[local.task\] data.train_files: .* delete the old one"):
        ensure_task_files(_cfg(elsewhere, train_n=300))
