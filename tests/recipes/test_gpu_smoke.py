"""``make gpu-smoke`` on a CPU machine: what can be checked without a GPU.

Each loss family composes from its own recipe, keeps the keys that define it and passes the
project's validation; its launch files send veRL's metrics where the checker reads them; the
script refuses without a CUDA GPU with one ``error:`` line (exit 2). The metrics parser is unit
tested on a small file written by veRL's own ``FileLogger`` -- a test of the parser only, NOT a
stand-in for a GPU run (none has happened yet: docs/gpu_smoke.md)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import pytest

from recipes import gpu_smoke
from recipes.gpu_smoke import FAMILIES, REQUIRED, check_metrics, compose_family, main, overrides, read_metrics


@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_composes_validates_and_writes_its_launch(family: str, hydra_ctx, tmp_path: Path) -> None:
    from recipes.launch_verl import prepare

    run_dir = tmp_path / family
    cfg = compose_family(family, tmp_path / "model", tmp_path / "data", run_dir)
    a = cfg.actor_rollout_ref
    assert cfg.rlvr.recipe == FAMILIES[family][0] and cfg.rlvr.scale == "gpu_node"
    assert cfg.trainer.n_gpus_per_node == 1 and a.rollout.tensor_model_parallel_size == 1
    assert a.rollout.name == "vllm" and a.actor.use_dynamic_bsz
    # the profile's token budgets follow the smoke's lengths (veRL asserts budget >= prompt + response)
    assert a.actor.ppo_max_token_len_per_gpu >= cfg.data.max_prompt_length + cfg.data.max_response_length
    assert cfg.trainer.total_training_steps == 2 and "file" in cfg.trainer.logger
    cmds = prepare(cfg, run_dir)
    assert [c[1:3] for c in cmds] == [["-m", "verl.trainer.main_ppo"]]
    launch = (run_dir / "launch.sh").read_text()
    # each trainer invocation logs to its own file under metrics.d/ (recipes.supervise merges them)
    assert f"RUN={shlex.quote(str(run_dir.resolve()))}" in launch
    assert 'export VERL_FILE_LOGGER_PATH="$RUN/metrics.d/' in launch


def test_a_family_whose_defining_key_is_overridden_is_refused(hydra_ctx, tmp_path: Path, monkeypatch) -> None:
    """The smoke checks its families are what they say: an override that turns DAPO's clip-higher off
    is named by key."""
    real = overrides
    monkeypatch.setattr(
        gpu_smoke,
        "overrides",
        lambda *a, **k: [*real(*a, **k), "actor_rollout_ref.actor.clip_ratio_high=0.2"],
    )
    with pytest.raises(ValueError, match=r"\[actor_rollout_ref.actor.clip_ratio_high\] 0.2 .* needs 0.28"):
        compose_family("dapo", tmp_path, tmp_path, tmp_path / "dapo")


def test_refuses_without_a_cuda_gpu(tmp_path: Path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible: the refusal does not apply")
    assert main(["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: make gpu-smoke needs one CUDA GPU"), err
    assert not any(tmp_path.iterdir()), "nothing is built or written before the refusal"


def test_unknown_family_is_refused(tmp_path: Path, capsys) -> None:
    assert main(["--families", "ppo_typo", "--out", str(tmp_path), "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown loss families ['ppo_typo']")


def test_metrics_parser_on_verl_file_logger_output(tmp_path: Path, monkeypatch) -> None:
    """Parser unit test (not a run): lines written by veRL 0.9.1's own ``FileLogger``; a finite run
    passes, a NaN loss, a missing metric and a missing step are each reported."""
    from verl.utils.tracking import FileLogger

    path = tmp_path / "metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(path))
    logger = FileLogger("gpu_smoke", "unit")
    good = {"actor/pg_loss": 0.01, "actor/entropy": 2.3, "critic/score/mean": 0.25, "timing_s/step": 9.0}
    logger.log(good, step=1)
    logger.log({**good, "actor/pg_loss": 0.02}, step=2)
    logger.finish()
    assert read_metrics(path)[2]["actor/pg_loss"] == 0.02
    problems, last = check_metrics(path, steps=2)
    assert problems == [] and set(last) == set(REQUIRED)
    assert check_metrics(path, steps=3)[0] == [f"{path}: step 3 not logged (logged: [1, 2])"]

    bad = tmp_path / "bad.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(bad))
    logger = FileLogger("gpu_smoke", "unit")
    logger.log({**good, "actor/pg_loss": math.nan}, step=1)
    logger.log({k: v for k, v in good.items() if k != "actor/entropy"}, step=2)
    logger.finish()
    problems, _ = check_metrics(bad, steps=2)
    assert len(problems) == 2
    # veRL's FileLogger serialises with orjson, which writes NaN as null: a NaN loss reads back as None
    assert "step 1 loss actor/pg_loss = None" in problems[0]
    assert "step 2 entropy actor/entropy = None" in problems[1]
    assert check_metrics(tmp_path / "none.jsonl", 2)[0][0].endswith(
        "no metrics file (veRL's file logger wrote nothing)"
    )
