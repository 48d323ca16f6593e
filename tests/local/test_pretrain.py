"""The laptop base model's pretraining: chunked update, cache key, a tiny end-to-end build."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch

from core import model as models
from core.compose import compose
from core.numerics import numerics
from recipes.local import pretrain
from recipes.local.data import ensure_task_files

TINY = [
    "recipe=r1_zero",
    "scale=laptop_base",
    "local.task.train_n=200",
    "local.task.val_n=32",
    "local.pretrain.corpus.n=300",
    "local.pretrain.steps=4",
    "local.pretrain.batch_size=8",
    "local.pretrain.probe_prompts=8",
    "local.pretrain.probe_n=2",
    "data.max_response_length=24",
]

pytestmark = pytest.mark.usefixtures("hydra_ctx")  # one Hydra context for the module (tests/conftest.py)


def test_chunked_step_is_the_same_update() -> None:
    """Rows sorted by length into micro-batches give the full batch's update (less padding)."""
    tok = models.build_tokenizer("task_chars")
    spec = models.ModelSpec(32, 1, 2, 1, 64, 64)
    a = models.build_model(spec, tok, 0)
    b = copy.deepcopy(a)
    g = torch.Generator().manual_seed(0)
    seqs = [
        torch.randint(10, 60, (int(n),), generator=g).tolist()
        for n in torch.randint(3, 30, (9,), generator=g)
    ]
    opt_a, opt_b = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (a, b))
    la = pretrain.lm_step(a, tok.pad_token_id, seqs, opt_a, chunks=1)
    lb = pretrain.lm_step(b, tok.pad_token_id, seqs, opt_b, chunks=4)
    assert abs(la - lb) < 1e-5
    diff = max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert 0 < diff < 1e-5 or diff == 0.0
    assert any(
        (p != q).any()
        for p, q in zip(a.parameters(), models.build_model(spec, tok, 0).parameters(), strict=True)
    )


def test_cache_key_changes_with_settings_and_code(cache_dir, tmp_path, monkeypatch) -> None:
    cfg = compose(TINY)
    key = pretrain.build_meta(cfg)
    assert key == pretrain.build_meta(compose(TINY))
    assert key != pretrain.build_meta(compose([*TINY, "local.pretrain.seed=1"]))
    # the build runs at local.threads, and another thread count gives other weights (numerics_trace)
    assert key != pretrain.build_meta(compose([*TINY, "local.threads=2"]))
    src = tmp_path / "builder.py"
    src.write_text("X = 1\n")
    monkeypatch.setattr(pretrain, "CODE", (*pretrain.CODE, str(src)))
    before = pretrain.build_meta(cfg)
    src.write_text("X = 2\n")
    assert pretrain.build_meta(cfg)["code"] != before["code"]


def test_tiny_build_is_cached_and_reports_a_probe(cache_dir) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = compose(TINY)
    ensure_task_files(cfg)
    logs: list[str] = []
    path = pretrain.ensure_base_model(cfg, get_custom_reward_fn(cfg), logs.append)
    meta = json.loads((Path(path) / "rlvr_meta.json").read_text())
    # the key holds the settings, the code and the CPU arithmetic; the record holds the weights' hash
    assert meta["build"] == {**pretrain.build_meta(cfg), "numerics": numerics()}
    assert meta["weights_sha256"] == models.weights_sha256(Path(path))
    assert meta["probe"]["overall"]["n"] == 16 and set(meta["probe"]["by_k"]) <= {str(k) for k in range(2, 8)}
    assert meta["build_cpu_seconds"] > 0 and len(meta["loss_history"]) >= 1
    stamp = (Path(path) / "config.json").stat().st_mtime_ns
    assert pretrain.ensure_base_model(cfg, None, logs.append) == path  # cached: no rebuild
    assert (Path(path) / "config.json").stat().st_mtime_ns == stamp
    # built under other kernels (another machine's arithmetic): not reused
    meta["build"]["numerics"]["aten_cpu_capability"] = "AVX512"
    (Path(path) / "rlvr_meta.json").write_text(json.dumps(meta))
    assert pretrain.ensure_base_model(cfg, get_custom_reward_fn(cfg), logs.append) == path
    assert (Path(path) / "config.json").stat().st_mtime_ns != stamp
    assert any("other code or settings" in line for line in logs)


def test_base_model_recipes_default_to_laptop_base_on_the_local_engine() -> None:
    """Recipes measured from the base model (rlvr.laptop_scale) start from it; the others keep the cold
    start; an explicit scale or a given checkpoint always wins."""
    from recipes.run import prepare_config

    for recipe, scale in (
        ("r1_zero", "laptop_base"),
        ("dapo", "laptop_base"),
        ("drgrpo", "laptop_base"),
        ("grpo", "laptop_base"),
        ("orz_ppo", "laptop_base"),
        ("r1_reasoning", "laptop"),  # R1 keeps its cold-start stage: that is R1, not R1-Zero
    ):
        cfg = prepare_config([f"recipe={recipe}", "engine=local"])[0]
        assert cfg.rlvr.scale == scale, recipe
    assert prepare_config(["recipe=r1_zero", "engine=local", "scale=laptop"])[0].rlvr.scale == "laptop"
    assert prepare_config(["recipe=r1_zero", "engine=local", "scale=laptop"])[0].local.pretrain is None


def test_seed_table_runs_each_recipe_at_its_own_laptop_profile_unless_one_is_named() -> None:
    """The seed table's per-recipe profile is the recipe's ``rlvr.laptop_scale``; ``scale=laptop`` names one for all."""
    from experiments.seed_table import laptop_scales

    own = laptop_scales(["grpo", "r1_reasoning"], "recipe")
    assert own == {"grpo": "laptop_base", "r1_reasoning": "laptop"}
    assert laptop_scales(["grpo", "dapo"], "laptop") == {"grpo": "laptop", "dapo": "laptop"}


def test_overtime_scale_composes_validates_and_keeps_its_own_base_model(cache_dir) -> None:
    """scale=laptop_overtime: the overtime corpus and task, the same model shape, a cache key and path
    apart from tiny_base's, the corpus drawing what the task draws; laptop_base is untouched."""
    from recipes.run import prepare_config
    from recipes.validate import validate

    cfg = prepare_config(["recipe=r1_zero", "engine=local", "scale=laptop_overtime"])[0]
    validate(cfg, "local")
    base = prepare_config(["recipe=r1_zero", "engine=local"])[0]
    assert cfg.rlvr.scale == "laptop_overtime" and base.rlvr.scale == "laptop_base"
    assert dict(cfg.local.pretrain.corpus.mix) == {"overtime_pay": 1.0}
    assert dict(base.local.pretrain.corpus.mix) == {"chain_sum": 1.0}
    assert cfg.local.task.name == "overtime_pay" and not cfg.local.task.params.include_rules
    corpus = cfg.local.pretrain.corpus.params.overtime_pay
    assert list(corpus.daily_wages) == list(cfg.local.task.params.daily_wages)
    assert corpus.hint == cfg.local.task.params.include_hint
    assert cfg.actor_rollout_ref.model.path != base.actor_rollout_ref.model.path
    assert pretrain.build_meta(cfg) != pretrain.build_meta(base)
    assert pretrain.build_meta(cfg)["model"] == pretrain.build_meta(base)["model"]
    assert (
        cfg.data.max_prompt_length + cfg.data.max_response_length <= cfg.local.model.max_position_embeddings
    )
    off_grid = prepare_config(
        ["recipe=r1_zero", "engine=local", "scale=laptop_overtime", "local.task.params.daily_wages=[300]"]
    )[0]
    with pytest.raises(ValueError, match="daily_wages"):
        ensure_task_files(off_grid)


def test_a_build_never_replaces_another_builders_model(tmp_path) -> None:
    """cached_build rebuilds its own stale model, but refuses one another builder (or a user) made."""
    path = tmp_path / "tiny-base0"
    path.mkdir()
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"base weights")
    builds: list[Path] = []

    def build(tmp: Path) -> dict:
        builds.append(tmp)
        tmp.mkdir()
        (tmp / "config.json").write_text("{}")
        (tmp / "model.safetensors").write_bytes(b"new weights")
        return {}

    for stamp in ({"build": {"builder": "recipes.local.pretrain"}}, None):  # the base model; a user's own
        if stamp is not None:
            (path / "rlvr_meta.json").write_text(json.dumps(stamp))
        else:
            (path / "rlvr_meta.json").unlink()
        with pytest.raises(ValueError, match=r"actor_rollout_ref\.model\.path.*would replace it"):
            models.cached_build(path, {"builder": "recipes.local.sft", "x": 1}, build, lambda m: None)
        assert not builds and (path / "model.safetensors").read_bytes() == b"base weights"
    # the same builder's model from other settings is its cache: rebuilt
    (path / "rlvr_meta.json").write_text(json.dumps({"build": {"builder": "recipes.local.sft", "x": 0}}))
    assert models.cached_build(path, {"builder": "recipes.local.sft", "x": 1}, build, lambda m: None) == path
    assert len(builds) == 1 and (path / "model.safetensors").read_bytes() == b"new weights"
    assert models.model_key(path)["weights_sha256"] == models.weights_sha256(path)
