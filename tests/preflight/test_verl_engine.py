"""The dress rehearsal on veRL 0.9.1's own engine (``TrainingWorker`` + ``FSDPEngineWithLMHead``), on
CPU, on a tiny locally built Qwen2: every recipe's ``gpu_node`` actor config takes one update; a token
budget below prompt + response is refused by veRL's own assert with the key named; and the local
engine's update agrees with veRL's engine from the same weights and batch.

All engines live in this one pytest process (one gloo group, installed once)."""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import pytest
import torch
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from core import model as models
from core.compose import CONF_DIR, compose, options
from recipes.preflight.verl_check import summary
from recipes.preflight.verl_cpu import CPU_CHANGES, install_cpu_platform
from recipes.preflight.verl_engine import Refused, rehearse, weights

#: Equivalence tolerances: fp32 on both sides; veRL packs the mini-batch into token-budget
#: micro-batches and sums their globally normalised losses, the local engine runs it whole, so only
#: float rounding may differ. Largest differences measured here (grpo / dapo): loss 3.0e-8 / 2.2e-8,
#: grad norm 0 / 0, old log-probs 9.5e-7 / 9.5e-7, weights after one AdamW step of 1.0e-3 at lr 1e-3:
#: 1.2e-6 / 8.2e-7 (6 / 4 of 25,504 weights differ by more than 1e-7: those whose gradient is near
#: AdamW's eps, where the first step's g / (|g| + eps) amplifies rounding). Weights: 1% of the step.
RTOL_LOSS, ATOL_LOSS = 1e-5, 1e-6
RTOL_GRAD = 1e-5
ATOL_WEIGHTS = 1e-5
ATOL_LOGPROB = 1e-5


@pytest.fixture(scope="module")
def tiny(tiny_checkpoint) -> Path:
    """A tiny random Qwen2 checkpoint on the laptop tokenizer (256 positions), built once per session."""
    spec = models.ModelSpec(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
        max_position_embeddings=256,
    )
    return tiny_checkpoint(spec, "char", seed=3)


@pytest.fixture(scope="module", autouse=True)
def hydra_ctx():
    """One Hydra context for the module (composing is then fast)."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        yield
    GlobalHydra.instance().clear()


@pytest.fixture(scope="module", autouse=True)
def restore_platform():
    """The CPU platform, ``VERL_ENGINE_DEVICE`` and the unpinned offload policy stay in this module:
    later tests in the same process see veRL as they would have (the gloo group is kept)."""
    from verl.plugin.platform import platform_manager
    from verl.workers.engine.fsdp import transformer_impl

    saved = (
        platform_manager._current_platform,
        os.environ.get("VERL_ENGINE_DEVICE"),
        transformer_impl.CPUOffloadPolicy,
    )
    yield
    platform_manager._current_platform, device, transformer_impl.CPUOffloadPolicy = saved
    if device is None:
        os.environ.pop("VERL_ENGINE_DEVICE", None)
    else:
        os.environ["VERL_ENGINE_DEVICE"] = device
    install_cpu_platform.cache_clear()


def _finite(metrics: dict[str, float], *keys: str) -> None:
    for k in keys:
        assert k in metrics and math.isfinite(metrics[k]), (k, metrics)


@pytest.mark.parametrize("recipe", options("recipe"))
def test_every_recipe_takes_one_update_on_verl_engine(recipe: str, tiny: Path) -> None:
    """The recipe's gpu_node actor (and ref) config, as composed, on veRL's engine: log-probs, one
    ``train_mini_batch``, finite loss and gradient norm, the weights move."""
    cfg = compose([f"recipe={recipe}", "scale=gpu_node"])
    res = rehearse(cfg, tiny)
    _finite(res.metrics, "actor/pg_loss", "grad_norm", "loss")
    assert res.weight_change > 0, summary(res)
    assert res.metrics["grad_norm"] > 0
    assert set(CPU_CHANGES) <= set(res.cpu_changes)
    assert "old_log_prob" in res.timings and "update" in res.timings
    uses_ref = bool(cfg.actor_rollout_ref.actor.use_kl_loss)
    assert ("ref_log_prob" in res.timings) == uses_ref
    if uses_ref:
        _finite(res.metrics, "kl_loss")
    if cfg.actor_rollout_ref.actor.use_dynamic_bsz:  # each budget reached veRL, scaled with the lengths
        assert res.budgets and all(given is not None for _, _, given in res.budgets.values())


def test_budget_below_prompt_plus_response_is_refused_with_its_key(tiny: Path) -> None:
    """``ppo_max_token_len_per_gpu=1024`` under dapo's 2,048 + 20,480 tokens: veRL's own assert fires
    in the engine and comes back naming the key and the fix."""
    key = "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"
    over = [f"{key}=1024", "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=22528"]
    cfg = compose(["recipe=dapo", "scale=gpu_node", *over])
    with pytest.raises(Refused) as e:
        rehearse(cfg, tiny)
    assert e.value.key == key
    assert "max_token_len must be greater than the sequence length" in str(e.value)
    assert f"{key}=1024" in str(
        e.value
    ) and ">= data.max_prompt_length + data.max_response_length = 22528" in str(e.value)


@pytest.mark.parametrize("recipe", ["grpo", "dapo"])
def test_local_engine_update_equals_verl_engine_update(recipe: str, tiny: Path) -> None:
    """The local engine's ``Engine.update_actor`` and veRL's ``train_mini_batch`` from the same weights
    and batch (grpo: KL loss against a reference, seq-mean-token-mean; dapo: clip-higher, token-mean;
    both with dynamic micro-batches on veRL's side): veRL's old log-probs match a plain forward, and
    loss, gradient norm and every weight after one AdamW step agree within the tolerances above."""
    from core.sampler import Rollout, response_logprobs
    from recipes.local.trainer import Engine

    over = [
        f"recipe={recipe}",
        "scale=gpu_node",
        "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",  # 2 prompts x 4 = the 8 rehearsal sequences
        "actor_rollout_ref.actor.optim.lr=1e-3",  # a visible step
        "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
        "trainer.total_training_steps=4",
        "local.fast=false",
    ]
    cfg = compose(over)
    res = rehearse(cfg, tiny, keep=True)
    b = res.batch
    assert b is not None

    model, tok = models.load(tiny)
    model.train()
    engine = Engine(cfg, model, tok, reward_fn=None, train=[], val=[])
    start = copy.deepcopy(model.state_dict())
    p_len = b["prompts"].shape[1]
    ro = Rollout(
        prompts=b["prompts"],
        prompt_mask=b["attention_mask"][:, :p_len],
        responses=b["responses"],
        response_mask=b["response_mask"].float(),
        old_log_probs=b["old_log_probs"],
    )
    with torch.no_grad():  # veRL's old log-probs against a plain forward of the same weights
        lp, _ = response_logprobs(
            model,
            ro.prompts,
            ro.prompt_mask,
            ro.responses,
            ro.response_mask,
            float(cfg.actor_rollout_ref.rollout.temperature),
        )
    mask = ro.response_mask.bool()
    assert (lp - b["old_log_probs"])[mask].abs().max() < ATOL_LOGPROB
    _, local = engine.update_actor(ro, b["advantages"], b.get("ref_log_prob"), epochs=1)

    verl = res.metrics
    local_loss = local["actor/pg_loss"] + local.get("actor/kl_loss", 0.0) * float(
        cfg.actor_rollout_ref.actor.kl_loss_coef
    )
    assert verl["loss"] == pytest.approx(local_loss, rel=RTOL_LOSS, abs=ATOL_LOSS)
    assert verl["grad_norm"] == pytest.approx(local["actor/grad_norm"], rel=RTOL_GRAD)
    after_verl = weights(res)
    after_local = {k: v.float() for k, v in model.state_dict().items()}
    moved = max(float((after_local[k] - start[k]).abs().max()) for k in after_verl)
    diff = max(float((after_local[k] - after_verl[k]).abs().max()) for k in after_verl)
    assert moved > 1e-4, "the update should move the weights visibly at lr 1e-3"
    assert diff < ATOL_WEIGHTS, (diff, moved)
    print(
        f"loss {verl['loss']:.6g} vs {local_loss:.6g}; grad norm {verl['grad_norm']:.6g} vs "
        f"{local['actor/grad_norm']:.6g}; max weight diff {diff:.3g} after a step of {moved:.3g}"
    )


def test_refusal_names_key_and_fix() -> None:
    """:class:`Refused` carries the key, the message and the fix, as the project's errors do."""
    e = Refused("a.b", "too small", "raise it")
    assert str(e) == "[a.b] too small (fix: raise it)" and e.key == "a.b"


def test_preflight_hook_rehearses_the_run_checkpoint(tiny: Path, tmp_path: Path) -> None:
    """``python -m recipes.preflight recipe=gspo engine=verl scale=gpu_node checks=[verl_engine]`` with the
    tiny checkpoint as the model: the rehearsal runs, its timings and CPU changes land in preflight.json.
    (A budget below prompt + response is refused earlier there, by validation; the engine's own
    refusal is tested above.)"""
    import json

    from core.cli import call
    from recipes.preflight.__main__ import command

    args = [
        "recipe=gspo",
        "engine=verl",
        "scale=gpu_node",
        f"actor_rollout_ref.model.path={tiny}",
        "checks=[verl_engine]",
        f"run_dir={tmp_path}",
    ]
    code = call(command, "command", "preflight", args, route=True)
    rep = json.loads((tmp_path / "preflight.json").read_text())
    assert code == 0 and [f["check"] for f in rep["findings"]] == ["verl_engine"], rep["findings"]
    facts = rep["facts"]["verl_engine"]
    assert facts["weight_change"] > 0 and set(CPU_CHANGES) <= set(facts["cpu_changes"])
    assert rep["timings"]["verl_engine"]["rehearsed"] == 1.0
