"""The pre-flight checks one by one: against veRL's own loader, against published model sizes, and
on every recipe's own data at laptop scale."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from core.cli import call, help_header
from core.compose import CONF_DIR, options
from data_pipelines.io import write_rows
from recipes.preflight import preflight, settings
from recipes.preflight.__main__ import command
from recipes.preflight.lengths import measure
from recipes.preflight.memory import kv_bytes_per_token, trained_state
from recipes.preflight.models import KNOWN, model_shape
from recipes.preflight.report import Report


def _cfg(d: Path, model: Path, *extra: str):
    from core.compose import compose

    return compose(
        [
            "recipe=grpo",
            "engine=verl",
            f"data.train_files={d}/train.parquet",
            f"data.val_files={d}/val.parquet",
            f"actor_rollout_ref.model.path={model}",
            "trainer.n_gpus_per_node=1",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def laptop_cache(tmp_path_factory):
    """An RLVR_CACHE of its own: the recipes' default laptop data (other tests write smaller files)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RLVR_CACHE", str(tmp_path_factory.mktemp("laptop_cache")))
    yield
    mp.undo()


@pytest.mark.parametrize("recipe", options("recipe"))
def test_every_recipe_passes_on_its_own_laptop_data(recipe, laptop_cache, laptop_teacher, tmp_path) -> None:
    """No check fails; the only warnings are about the embedded task's data (repeats, val/train overlap)."""
    code = call(
        command,
        "command",
        "preflight",
        [f"recipe={recipe}", "engine=local", f"run_dir={tmp_path}", *laptop_teacher(recipe)],
        route=True,
    )
    rep = json.loads((tmp_path / "preflight.json").read_text())
    assert code == rep["exit_code"] in (0, 1) and rep["counts"]["fail"] == 0, rep["findings"]
    assert {f["check"] for f in rep["findings"] if f["level"] == "warn"} <= {"data"}
    assert set(rep["timings"]) >= {"files", "schema", "verl_dataset", "golds", "lengths", "memory", "reward"}


def test_overlong_count_equals_what_verl_drops(ckpts, rows, tmp_path) -> None:
    """With data.filter_overlong_prompts=true, the rows reported over the limit are the rows veRL's own
    RLHFDataset filter drops, with the same tokenizer."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from core.model import load_tokenizer

    data = json.loads(json.dumps(rows["train"]))
    for i in (0, 4, 8):  # a longer system prompt on a few rows
        data[i]["prompt"].insert(0, {"role": "system", "content": "Think it through. " * 3})
    write_rows(data, tmp_path / "train.parquet")
    write_rows(rows["val"], tmp_path / "val.parquet")
    limit = 30
    cfg = _cfg(
        tmp_path, ckpts["llama"], f"data.max_prompt_length={limit}", "data.filter_overlong_prompts=true"
    )
    rep = preflight(cfg, "verl", settings(["checks=[lengths]"]))
    over = [f for f in rep.findings if f.check == "lengths" and f.level == "warn"]
    assert len(over) == 1 and over[0].message.startswith("3 of 48 prompts"), over
    ds = RLHFDataset(
        data_files=[str(tmp_path / "train.parquet")],
        tokenizer=load_tokenizer(ckpts["llama"]),
        config=OmegaConf.create(
            {
                "max_prompt_length": limit,
                "filter_overlong_prompts": True,
                "filter_overlong_prompts_workers": 1,
            }
        ),
    )
    assert len(ds) == 48 - 3


def test_batched_lengths_equal_row_by_row_chat_template(ckpts, rows) -> None:
    from core.data import chat_ids
    from core.model import load_tokenizer

    convs = [r["prompt"] for r in rows["train"]] + [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Natalia sold 48 clips."}]
    ]
    for arch in ("llama", "qwen2"):
        tok = load_tokenizer(ckpts[arch])
        assert measure(tok, convs, {}, batch=7).tolist() == [len(chat_ids(tok, c)) for c in convs]


def test_duplicates_and_overlap_are_counted_exactly(ckpts, rows, tmp_path) -> None:
    train = rows["train"] + [json.loads(json.dumps(rows["train"][i])) for i in (0, 1, 1)]
    train[-1]["reward_model"]["ground_truth"] = "7"  # a repeated prompt with another gold
    write_rows(train, tmp_path / "train.parquet")
    write_rows(rows["val"] + rows["train"][5:7], tmp_path / "val.parquet")
    rep = preflight(_cfg(tmp_path, ckpts["llama"]), "verl", settings(["checks=[files,duplicates]"]))
    msgs = [f.message for f in rep.findings if f.check == "data"]
    assert any(m.startswith("3 of 51 rows repeat an earlier prompt") for m in msgs), msgs
    assert any(m.startswith("1 repeated prompts carry different golds") for m in msgs), msgs
    assert any(m.startswith("2 of 18 validation prompts also occur in training") for m in msgs), msgs


def test_known_architectures_match_their_published_sizes() -> None:
    """Exact counts of the table's architectures against the sizes the model cards publish."""
    published = {  # billions: the Qwen2.5/Qwen3 model cards ("Number of Parameters"); DeepSeekMath paper: 7B
        "Qwen/Qwen2.5-7B": 7.61,
        "Qwen/Qwen2.5-Math-7B": 7.61,
        "Qwen/Qwen2.5-32B": 32.5,
        "Qwen/Qwen3-8B-Base": 8.2,
        "deepseek-ai/deepseek-math-7b-instruct": 6.9,
    }
    assert set(published) == set(KNOWN)
    for name, billions in published.items():
        shape, how = model_shape(name)
        assert how == "known-architecture table" and shape.source
        assert abs(shape.params / 1e9 - billions) / billions < 0.01, (name, shape.params)


def test_memory_arithmetic() -> None:
    gb8 = trained_state(8e9, {"model_dtype": "fp32"}, 8)
    assert gb8 == {"params": 4e9, "grads": 4e9, "optimizer": 8e9}
    assert trained_state(8e9, {"param_offload": True, "optimizer_offload": True}, 8) == {
        "params": 0.0,
        "grads": 0.0,
        "optimizer": 0.0,
    }
    shape, _ = model_shape("Qwen/Qwen2.5-7B")
    # 2 (K, V) x 28 layers x 4 KV heads x 128 dims x 2 bytes; KV heads split over tensor-parallel ranks
    assert kv_bytes_per_token(shape, 1) == 57344
    assert kv_bytes_per_token(shape, 2) == 28672
    assert kv_bytes_per_token(shape, 8) == 14336  # more ranks than KV heads: one head per rank


def test_model_params_b_sizes_an_unknown_model(tmp_path) -> None:
    shape, how = model_shape("someone/unknown-13b", 13)
    assert how == "model_params_b=" and shape.params == 13e9 and shape.layers is None
    assert model_shape("someone/unknown-13b")[0] is None


def test_report_exit_codes_and_json(tmp_path) -> None:
    r = Report("grpo", "verl")
    assert r.exit_code == 0
    r.add("data", "info", "x", "fine")
    assert r.exit_code == 0
    r.add("data", "warn", "x", "hmm", "do y")
    assert r.exit_code == 1
    r.add("memory", "fail", "k", "no", "do z")
    assert r.exit_code == 2 and r.format().splitlines()[0].startswith("FAIL [memory] k: no")
    d = json.loads(r.write(tmp_path / "p.json").read_text())
    assert d["verdict"] == "fail" and d["counts"] == {"info": 1, "skip": 0, "warn": 1, "fail": 1}
    with pytest.raises(ValueError):
        r.add("data", "bad-level", "x", "y")


def test_help_states_the_exit_codes() -> None:
    assert "0 pass, 1 pass with warnings, 2 fail" in help_header(CONF_DIR / "command" / "preflight.yaml")
