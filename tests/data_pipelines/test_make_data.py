"""make_data end to end: files, manifest, top-up after cleaning, guards, and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from data_pipelines.io import read_rows
from data_pipelines.make_data import run

REPO = Path(__file__).resolve().parents[2]


def cfg_for(**over):
    cfg = OmegaConf.load(REPO / "conf/datagen/make_data.yaml")
    cfg.pop("hydra")
    cfg.pop("defaults")
    cfg.merge_with(over)
    return cfg


def test_procedural_dataset_with_manifest(tmp_path):
    man = run(cfg_for(data="overtime_pay", n=60, n_test=10, seed=3, out=str(tmp_path)))
    train, test = read_rows(tmp_path / "train.parquet"), read_rows(tmp_path / "test.parquet")
    assert len(train) == 60 and len(test) == 10
    assert man["files"]["train"]["verl_rows"] == 60
    disk = json.loads((tmp_path / "manifest.json").read_text())
    assert disk["seed"] == 3 and disk["config"]["n"] == 60 and disk["data_sources"] == ["overtime_pay"]
    assert disk["report"]["answer_stats"]["top_share"] < 0.1
    assert {q["extra_info"]["question"] for q in train}.isdisjoint(
        {q["extra_info"]["question"] for q in test}
    )
    again = run(cfg_for(data="overtime_pay", n=60, n_test=10, seed=3, out=str(tmp_path / "again")))
    assert again["files"]["train"]["sha256"] == man["files"]["train"]["sha256"]  # reproducible bytes


def test_small_space_is_topped_up_and_reported(tmp_path):
    # 3-letter words: many duplicates, so the train split is regenerated larger until n rows are clean
    man = run(
        cfg_for(
            data="spell_backward",
            n=120,
            n_test=40,
            out=str(tmp_path),
            params={"min_word_len": 3, "max_word_len": 3},
            max_answer_share=1.0,
        )
    )
    rep = man["report"]
    assert man["files"]["train"]["rows"] == 120 and len(rep["attempts"]) >= 1
    removed = sum(d["removed"] for d in rep["dedup"]) + sum(d["removed"] for d in rep["decontam"])
    assert removed > 0 and rep["attempts"][-1]["generated"] > 120
    assert man["data_sources"] == ["reasoning_gym/spell_backward"]


def test_guards(tmp_path):
    with pytest.raises(ValueError, match="max_answer_share"):
        run(cfg_for(data="overtime_pay", n=50, out=str(tmp_path), max_answer_share=0.001))
    with pytest.raises(KeyError, match="unknown dataset 'nope'.*hub datasets: aime24"):
        run(cfg_for(data="nope", out=str(tmp_path)))
    with pytest.raises(ValueError, match="data_path is for hub datasets"):
        run(cfg_for(data="countdown", data_path="x.jsonl", out=str(tmp_path)))


def test_cli_help_and_run(tmp_path):
    py = sys.executable
    out = subprocess.run(
        [py, "-m", "data_pipelines.make_data", "--help"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0 and "data=<name>" in out.stdout and "max_answer_share" in out.stdout
    res = subprocess.run(
        [
            py,
            "-m",
            "data_pipelines.make_data",
            "data=countdown",
            "n=30",
            "seed=1",
            f"out={tmp_path}",
            "validate.enabled=false",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "train: 30 rows" in res.stdout and (tmp_path / "manifest.json").is_file()
