"""Label -> train -> select, end to end on a tiny model; the reward-model trainer's refusals; the GPU dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import model as models
from core.cli import load
from data_pipelines.io import write_rows
from data_pipelines.tasks import TASKS
from recipes.rm_train import check_data, dry_run, out_dir, token_labels, train

ROOT = Path(__file__).resolve().parents[2]

SPEC = models.ModelSpec(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    max_position_embeddings=128,
)


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_checkpoint):
    """A tiny char-tokenizer policy, a small arithmetic parquet, and its labelled samples."""
    from data_pipelines import rm_data

    d = tmp_path_factory.mktemp("rmworld")
    policy = tiny_checkpoint(SPEC, "char", seed=0)  # shared with test_rules_rm (tests/conftest.py)
    data = d / "train.parquet"
    write_rows(TASKS.get("arithmetic")(n=6, seed=0, split="train"), data)
    cfg = load(
        "datagen",
        "rm_data",
        [
            f"model={policy}",
            f"data={data}",
            f"out={d / 'labels'}",
            "prompts=6",
            "n=3",
            "mc_k=2",
            "max_tokens=24",
            "sampler=local",
        ],
    )
    summary = rm_data.run(cfg)
    return {"dir": d, "policy": policy, "data": data, "labels": d / "labels", "summary": summary}


def test_labelled_samples_carry_every_label_source(world):
    s = world["summary"]
    assert s["responses"] == 18 and set(s["costs"]) == {"outcome", "rule", "mc"}
    assert s["costs"]["outcome"]["samples"] == 0 and s["costs"]["rule"]["samples"] == 0
    steps = s["steps"] - s["responses"]  # the final step of each response takes its own outcome
    assert s["costs"]["mc"]["samples"] == 2 * steps
    rows = [json.loads(x) for x in (world["labels"] / "samples.jsonl").read_text().splitlines()]
    for r in rows:
        assert len(r["bounds"]) == len(r["steps"]) == len(r["labels"]["mc"]) == len(r["labels"]["rule"])
        assert all(0 <= b < len(r["response_ids"]) for b in r["bounds"])


def _train_cfg(world, kind, labels, out):
    return load(
        "command",
        "rm",
        [
            f"kind={kind}",
            f"labels={labels}",
            f"data={world['labels']}",
            f"model={world['policy']}",
            *([f"out={out}"] if out else []),
            "epochs=1",
            "batch_size=8",
            "warmup_steps=1",
        ],
    )


#: the ORM goes to a directory named by ``out``; the PRM to the default, where ``reward_model=prm`` reads
OUTS = {"orm": "rm_orm", "prm": None}


@pytest.fixture
def cache(world, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(world["dir"] / "cache"))
    return world["dir"] / "cache"


@pytest.mark.parametrize("kind,labels", [("orm", "outcome"), ("prm", "mc")])
def test_train_writes_a_token_classification_checkpoint(world, cache, kind, labels):
    from omegaconf import OmegaConf

    from core.reward_model import load as load_rm

    out = world["dir"] / OUTS[kind] if OUTS[kind] else None
    report = train(_train_cfg(world, kind, labels, out))
    assert report["steps"] >= 1 and report["heldout"]["n"] > 0
    path = out or cache / "rm" / kind
    rm = load_rm(out or kind)  # a kind names the installed one
    assert rm.path == path and path.is_dir()
    assert rm.info.kind == kind and rm.info.labels == labels and rm.info.step_format == "arithmetic_columns"
    assert json.loads((path / "config.json").read_text())["architectures"] == ["Qwen2ForTokenClassification"]
    # the default install is the path reward_model=<kind> reads
    conf = OmegaConf.load(ROOT / "conf" / "reward_model" / f"{kind}.yaml")
    assert conf.reward.reward_model.model_path == str(cache / "rm" / kind)


def test_dry_run_default_out_is_not_the_installed_model(world, cache):
    cfg = _train_cfg(world, "prm", "mc", None)
    cfg.dry_run = True
    assert out_dir(cfg) == Path("reports/rm-prm-gpu") and out_dir(cfg) != cache / "rm" / "prm"


def test_scaling_table_runs_on_the_trained_models(world, cache):
    from analysis.tts import run

    for kind, labels in (("orm", "outcome"), ("prm", "mc")):
        out = world["dir"] / OUTS[kind] if OUTS[kind] else None
        if not ((out or cache / "rm" / kind) / "rlvr_rm.json").is_file():
            train(_train_cfg(world, kind, labels, out))
    cfg = load(
        "analysis",
        "tts",
        [
            f"model={world['policy']}",
            f"data={world['data']}",
            "prompts=3",
            "n=4",
            "ks=[1,2,4]",
            f"rm=[{world['dir'] / 'rm_orm'},prm]",
            f"out={world['dir'] / 'tts'}",
            "subsets=16",
            "bootstrap=50",
            "max_tokens=24",
            "sampler=local",
        ],
    )
    res = run(cfg)
    assert {"pass", "maj", "bon_orm", "bon_prm_min_step", "bon_prm_last_step", "wvote_orm"} <= set(
        res["metrics"]
    )
    assert (world["dir"] / "tts" / "tts.png").is_file()


def test_token_labels_and_refusals():
    row = {
        "acc": False,
        "response_ids": [1, 2, 3, 4],
        "bounds": [1, 3],
        "steps": [[0, 1], [1, 4]],
        "labels": {"rule": [True, False], "mc": [0.5, 0.0]},
    }
    assert token_labels(row, "orm", "outcome") == [0, 0, 0, 0]
    assert token_labels(row, "prm", "mc") == [-100, 1, -100, 0]
    one_step = {**row, "steps": [[0, 4]], "bounds": [3], "labels": {"rule": [None], "mc": [0.0]}}
    with pytest.raises(
        ValueError, match=r"\[rlvr.reward_model.step_format\].*no response in the data has step boundaries"
    ):
        check_data([one_step], "prm", "rule")
    with pytest.raises(ValueError, match=r"labels='outcome' for kind=prm"):
        check_data([row], "prm", "outcome")
    with pytest.raises(ValueError, match=r"kind='bt'"):
        check_data([row], "bt", "outcome")


def test_vocabulary_mismatch_is_refused_before_training(world, tmp_path, tiny_checkpoint):
    other = tiny_checkpoint(SPEC, "byte", seed=0)
    cfg = load(
        "command", "rm", ["kind=orm", f"data={world['labels']}", f"model={other}", f"out={tmp_path / 'x'}"]
    )
    with pytest.raises(ValueError, match=r"vocabulary .* is not the one data=.* was encoded with"):
        train(cfg)
    assert not (tmp_path / "x").exists()


def test_gpu_dry_run_validates_training_arguments(world, tmp_path):
    cfg = load(
        "command",
        "rm",
        [
            "kind=prm",
            "labels=rule",
            f"data={world['labels']}",
            f"model={world['policy']}",
            f"out={tmp_path / 'gpu'}",
            "dry_run=true",
        ],
    )
    launch = dry_run(cfg)
    text = launch.read_text()
    assert "torchrun --nproc_per_node=8 -m recipes.rm_train" in text and "gpu.bf16=True" in text
    args = json.loads((tmp_path / "gpu" / "training_args.json").read_text())
    assert args["per_device_train_batch_size"] == 4 and args["gradient_accumulation_steps"] == 4
    for wrong, err in (("+gpu.lr_scheduler_type=bogus", ValueError), ("+gpu.no_such_argument=1", TypeError)):
        bad = load(
            "command",
            "rm",
            [
                "kind=prm",
                f"data={world['labels']}",
                f"model={world['policy']}",
                f"out={tmp_path / 'gpu2'}",
                "dry_run=true",
                wrong,
            ],
        )
        with pytest.raises(err):
            dry_run(bad)
