"""The manifest is complete from the first run: ``run.json`` hashes the data files after the run cache
has generated them (an empty cache used to record ``data_hashes`` of None), and a user's missing data
path stops the run before anything is written there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recipes import run as entry

SMALL = ["recipe=grpo", "engine=local", "scale=laptop_base", "local.task.train_n=64", "local.task.val_n=16"]


class _NoEngine:
    """Stands in for ``recipes.local``: the test is about what is written before the engine starts."""

    @staticmethod
    def run_local(cfg, run_dir):  # noqa: ANN001, ANN205
        return {"recipe": "grpo", "run_dir": str(run_dir)}


def test_first_run_from_an_empty_cache_hashes_every_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(entry, "_local", lambda: _NoEngine)
    assert entry.run([*SMALL, f"run_dir={tmp_path / 'run'}"]) == 0
    hashes = json.loads((tmp_path / "run" / "run.json").read_text())["data_hashes"]
    assert len(hashes) == 2 and all(isinstance(h, str) and len(h) == 64 for h in hashes.values()), hashes


def test_a_missing_user_data_path_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(entry, "_local", lambda: _NoEngine)
    mine = tmp_path / "mine" / "train.parquet"
    code = entry.run([*SMALL, f"data.train_files={mine}", f"run_dir={tmp_path / 'run'}"])
    assert code == 2 and not mine.parent.exists()
    assert f"[data.train_files] {mine} does not exist" in capsys.readouterr().err
