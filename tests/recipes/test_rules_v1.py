"""The V1 trainer's start-up and first-step checks (``recipes.validate.v1``) refuse a config before
launch, naming the key; every recipe as published passes them."""

from __future__ import annotations

import pytest

from recipes.compose import compose, options
from recipes.validate import ConfigError, v1, validate
from recipes.validate.registry import RULES

CASES = [
    (
        "colocated reward model with dynamic sampling",
        ["recipe=dapo", "reward.reward_model.enable=true"],
        "[reward.reward_model.enable_resource_pool] false: dynamic sampling",
    ),
    (
        "dynamic sampling without a metric",
        ["recipe=dapo", "algorithm.filter_groups.metric=null"],
        "[algorithm.filter_groups.metric] dynamic sampling needs",
    ),
    (
        "no inflight generation batch",
        ["recipe=dapo", "algorithm.filter_groups.max_inflight_gen_batches=0"],
        "[algorithm.filter_groups.max_inflight_gen_batches] 0",
    ),
    (
        "unknown trainer mode",
        ["recipe=grpo", "trainer.v1.trainer_mode=async"],
        "[trainer.v1.trainer_mode] 'async' is no V1 trainer; fix: one of ['colocate_async', 'separate_async', 'sync']",
    ),
    (
        "staleness threshold of 0",
        ["recipe=grpo", "trainer.v1.sampler.max_off_policy_threshold=0"],
        "[trainer.v1.sampler.max_off_policy_threshold] 0",
    ),
    (
        "unknown staleness strategy",
        ["recipe=grpo", "trainer.v1.sampler.max_off_policy_strategy=skip"],
        "[trainer.v1.sampler.max_off_policy_strategy] 'skip'",
    ),
    (
        "generation chunk that does not divide the batch",
        ["recipe=gspo", "+data.gen_batch_size=384"],
        "[data.gen_batch_size] 384 does not divide data.train_batch_size=512",
    ),
    (
        "separate async with a batch that is not sync-step mini-batches",
        [
            "recipe=gspo",
            "trainer.v1.trainer_mode=separate_async",
            "trainer.v1.separate_async.parameter_sync_step=2",
        ],
        "[trainer.v1.separate_async.parameter_sync_step] separate_async needs data.train_batch_size",
    ),
    (
        "sync step that does not divide the batch",
        [
            "recipe=gspo",
            "trainer.v1.trainer_mode=separate_async",
            "trainer.v1.separate_async.parameter_sync_step=3",
        ],
        "[trainer.v1.separate_async.parameter_sync_step] 3 does not divide data.train_batch_size=512",
    ),
    (
        "separate async without rollout GPUs of its own",
        ["recipe=gspo", "trainer.v1.trainer_mode=separate_async"],
        "[actor_rollout_ref.rollout.nnodes] 0: separate_async serves rollouts",
    ),
    (
        "separate async with the naive weight sync",
        ["recipe=gspo", "trainer.v1.trainer_mode=separate_async"],
        "[actor_rollout_ref.rollout.checkpoint_engine.backend] naive",
    ),
    (
        "reward model pool without GPUs",
        ["recipe=grpo", "reward.reward_model.enable_resource_pool=true", "reward.reward_model.nnodes=0"],
        "[reward.reward_model.nnodes] 0: this resource pool needs > 0",
    ),
    (
        "distillation teachers without GPUs",
        ["recipe=opd", "distillation.n_gpus_per_node=0"],
        "[distillation.n_gpus_per_node] 0: this resource pool needs > 0",
    ),
    (
        "hybrid switching with disaggregated rollouts",
        [
            "recipe=gspo",
            "trainer.v1.trainer_mode=separate_async",
            "trainer.v1.separate_async.hybrid_rollout.enable_switch=true",
            "actor_rollout_ref.rollout.disaggregation.enabled=true",
        ],
        "[trainer.v1.separate_async.hybrid_rollout.enable_switch] true with",
    ),
]


def _v1_errors(cfg) -> list[str]:  # noqa: ANN001 - a composed config
    """What the rules of ``recipes.validate.v1`` say of ``cfg``."""
    return [e for n in RULES if RULES.get(n).check.__module__ == v1.__name__ for e in RULES.get(n).check(cfg)]


@pytest.mark.parametrize("overrides,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_v1_check_refused_before_launch(hydra_ctx, overrides: list[str], expected: str) -> None:
    errs = _v1_errors(compose([*overrides, "engine=verl"]))
    assert any(e.startswith(expected) for e in errs), errs


def test_validation_refuses_with_the_v1_rules(hydra_ctx) -> None:
    """The rules run in :func:`recipes.validate.validate`, the check every launch passes first."""
    overrides, expected = CASES[0][1:]
    with pytest.raises(ConfigError) as err:
        validate(compose([*overrides, "engine=verl"]), "verl")
    assert any(e.startswith(expected) for e in err.value.errors), err.value.errors


def test_the_same_checks_pass_where_veRL_would_start(hydra_ctx) -> None:
    """The V1 rules' fixes: a chunk that divides the batch, the async modes with their sizes right."""
    ok = [
        ["recipe=gspo", "+data.gen_batch_size=256"],
        ["recipe=gspo", "trainer.v1.trainer_mode=colocate_async"],
        [
            "recipe=gspo",
            "trainer.v1.trainer_mode=separate_async",
            "actor_rollout_ref.rollout.nnodes=1",
            "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl",
        ],
        [
            "recipe=dapo",
            "trainer.use_v1=false",
            "reward.reward_model.enable=true",
        ],  # the V0 trainer has no such check
    ]
    for overrides in ok:
        assert _v1_errors(compose([*overrides, "engine=verl"])) == [], overrides


@pytest.mark.parametrize("recipe", options("recipe"))
def test_every_recipe_passes_the_v1_rules(hydra_ctx, recipe: str) -> None:
    assert _v1_errors(compose([f"recipe={recipe}", "engine=verl"])) == []
