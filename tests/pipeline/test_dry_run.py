"""``engine=verl dry_run=true``: every stage of both pipelines composes and validates for veRL.

Checks that each RL stage's ``verl_config.yaml`` starts from the previous stage's HF directory,
each SFT stage's ``sft_config.yaml`` is veRL's ``sft_trainer_engine`` tree and passes veRL's
dataclasses, and ``pipeline_launch.sh`` chains veRL's own entry points. No GPU is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from core.cli import call
from recipes.pipeline.__main__ import command
from recipes.pipeline.stage_train import compose_verl_sft, validate_verl_sft
from recipes.validate import validate


def main(argv: list[str]) -> int:
    """``python -m recipes.pipeline <argv>``, in-process."""
    return call(command, "command", "pipeline", argv, route=True)


@pytest.mark.parametrize("name,args", [("r1", []), ("distill", ["vars.seeds=[0]"])])
def test_dry_run_writes_every_stage_for_verl(tmp_path, name, args) -> None:
    d = tmp_path / name
    assert main([f"pipeline={name}", "engine=verl", "dry_run=true", f"dir={d}", *args]) == 0
    man = json.loads((d / "pipeline.json").read_text())
    assert {man["stages"][n]["status"] for n in man["order"]} == {"prepared"}
    out = {n: man["stages"][n]["outputs"] for n in man["order"]}
    launch = (d / "pipeline_launch.sh").read_text()
    for token in (
        "verl.trainer.sft_trainer",
        "verl.model_merger merge",
        "data_pipelines.filter",
        "analysis.evaluate",
        "/launch.sh",
    ):
        assert token in launch, token
    for n in man["order"]:
        rec, run_dir = man["stages"][n], Path(man["stages"][n]["run_dir"])
        if rec["kind"] == "rl":
            cfg = OmegaConf.load(run_dir / "config.yaml")
            prev = rec["inputs"]["model"]["stage"]
            assert cfg.actor_rollout_ref.model.path == out[prev]["model"]
            assert "verl.trainer.main_ppo" in (run_dir / "launch.sh").read_text()
            validate(cfg, "verl")
        if rec["kind"] == "sft":
            cfg = OmegaConf.load(run_dir / "sft_config.yaml")
            assert validate_verl_sft(cfg) == []
            assert cfg.data.train_files == out[rec["inputs"]["data"]["stage"]]["data"]


def test_bad_sft_values_are_refused_by_key() -> None:
    cfg = compose_verl_sft(
        [
            "model.path=Qwen/Qwen2.5-7B",
            "data.train_files=x.parquet",
            "optim.lr=5",
            "trainer.n_gpus_per_node=3",
            "data.train_batch_size=256",
        ]
    )
    errs = "\n".join(validate_verl_sft(cfg))
    assert "[optim.lr]" in errs and "[data.train_batch_size] 256 is not divisible by the 3 GPUs" in errs


def test_verl_run_without_gpus_stops_with_a_clear_message(capsys) -> None:
    assert main(["pipeline=r1", "engine=verl"]) == 2
    assert "dry_run=true" in capsys.readouterr().err
