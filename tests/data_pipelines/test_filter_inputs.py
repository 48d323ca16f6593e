"""What the filter's ``data=``/``model=`` name: a task name is generated into the run cache with the
laptop engine's parameters, ``model=laptop_base`` is the cached base model (or an error naming the
command that builds it), and a summary never names a file it did not write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from data_pipelines.filter import run
from data_pipelines.filter_inputs import resolve_data, resolve_model
from data_pipelines.io import read_rows

REPO = Path(__file__).resolve().parents[2]


def test_laptop_model_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"model=laptop_base: .* fix: make run RECIPE=r1_zero"):
        resolve_model("laptop_base")
    (tmp_path / "models" / "tiny-base0").mkdir(parents=True)
    (tmp_path / "models" / "tiny-base0" / "config.json").write_text("{}")
    assert resolve_model("laptop_base") == str(tmp_path / "models" / "tiny-base0")
    assert resolve_model("/some/dir") == "/some/dir"


def test_a_task_name_is_generated_into_the_run_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    assert not resolve_data("chain_sum", rows=40, generate=False).exists()  # a path only: nothing written
    path = resolve_data("chain_sum", rows=40)
    assert tmp_path in path.parents and path.name == "train.parquet"
    rows = read_rows(path)
    terms = [t for r in rows for t in r["extra_info"]["terms"]]
    assert (
        len(rows) == 40 and max(terms) <= 5 and max(r["extra_info"]["k"] for r in rows) <= 6
    )  # the laptop's task
    assert resolve_data("chain_sum", rows=40) == path  # cached
    with pytest.raises(FileNotFoundError, match="make data DATA=nothing_here"):
        resolve_data("nothing_here")


class _Wrong:
    """Every answer untagged: the verifier refuses all of them."""

    def fingerprint(self) -> dict[str, str]:
        return {"backend": "wrong"}

    def generate(self, prompts: list, n: int, seed: int) -> list[list[str]]:
        return [["7"] * n for _ in prompts]


def test_an_empty_band_names_no_unwritten_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    cfg = OmegaConf.load(REPO / "conf/datagen/filter.yaml")
    cfg.pop("hydra")
    cfg.pop("defaults")
    cfg.merge_with(
        {"progress": False, "data": "chain_sum", "rows": 16, "model": "x", "n": 2, "validate": False}
    )
    cfg.out = str(tmp_path / "out")
    summary = run(cfg, generator=_Wrong())
    out = capsys.readouterr().out
    assert (
        summary["files"]["filtered"]["path"] is None and not (tmp_path / "out" / "filtered.parquet").exists()
    )
    assert "filtered.parquet" not in out and "control.parquet" not in out
    assert "need exactly one <answer> tag" in summary["warning"] and "data=chain_sum model=laptop_base" in out
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["files"]["filtered"]["path"] is None
