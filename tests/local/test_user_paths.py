"""A user's data path is never written: a missing ``data.train_files``/``data.val_files`` outside the
run cache is an error naming the key, the path and the ``make data`` command; nothing appears there.
Files inside the run cache are still generated on first use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from recipes.local.data import ensure_task_files


def _cfg(train: Path, val: Path) -> OmegaConf:
    task = {
        "name": "chain_sum",
        "train_n": 40,
        "val_n": 8,
        "seed": 0,
        "params": {"ks": [2, 3], "lo": 1, "hi": 5},
    }
    return OmegaConf.create(
        {"data": {"train_files": str(train), "val_files": str(val)}, "local": {"task": task}}
    )


def test_missing_user_path_is_an_error_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, mine = tmp_path / "cache", tmp_path / "mine"
    monkeypatch.setenv("RLVR_CACHE", str(cache))
    with pytest.raises(ValueError) as err:
        ensure_task_files(_cfg(mine / "my_train.parquet", cache / "data" / "test.parquet"))
    msg = str(err.value)
    assert msg.startswith(f"[data.train_files] {mine / 'my_train.parquet'} does not exist")
    assert f'make data DATA=chain_sum N=40 SEED=0 OUT={mine} ARGS="n_test=8 +params.ks=[2,3]' in msg
    assert f"then data.train_files={mine / 'train.parquet'}" in msg
    assert not mine.exists() and not cache.exists()  # refused before anything, the cache's file included
    with pytest.raises(ValueError, match=r"^\[data.val_files\] .*mine/test.parquet does not exist"):
        ensure_task_files(_cfg(cache / "train.parquet", mine / "test.parquet"))
    assert not mine.exists()


def test_the_printed_make_data_command_builds_what_the_run_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.cli import load
    from data_pipelines.make_data import run as make_data

    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine"
    make_data(
        load(
            "datagen", "make_data", ["data=chain_sum", "n=40", "n_test=8", f"out={mine}", "+params.ks=[2,3]"]
        )
    )
    ensure_task_files(_cfg(mine / "train.parquet", mine / "test.parquet"))  # exists now: used as is
    assert not (tmp_path / "cache").exists()


def test_cache_paths_are_generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    ensure_task_files(_cfg(tmp_path / "d" / "train.parquet", tmp_path / "d" / "test.parquet"))
    side = json.loads((tmp_path / "d" / "train.parquet.task.json").read_text())
    assert (tmp_path / "d" / "test.parquet").is_file() and side["name"] == "chain_sum"
