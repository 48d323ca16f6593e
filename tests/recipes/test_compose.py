"""Every recipe composes and passes validation, at its published scale and at laptop scale."""

from __future__ import annotations

import pytest

from recipes.compose import compose, diff, options
from recipes.validate import validate

RECIPES = ["grpo", "r1_zero", "dapo", "drgrpo", "cispo", "gspo", "orz_ppo"]


def test_all_recipes_present():
    assert set(RECIPES) <= set(options("recipe"))


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_validates_published(hydra_ctx, recipe):
    cfg = compose([f"recipe={recipe}", "run_dir=/tmp/x"])
    assert cfg.rlvr.recipe == recipe
    assert cfg.rlvr.scale is None
    validate(cfg, "verl")


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_validates_laptop(hydra_ctx, recipe):
    validate(compose([f"recipe={recipe}", "scale=laptop", "run_dir=/tmp/x"]), "local")


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("scale", ["laptop", "gpu_node", "multi_node"])
def test_scale_changes_only_sizes(hydra_ctx, recipe, scale):
    """A scale profile never touches an algorithmic key (loss, advantage, clip, KL, filter, reward)."""
    published = compose([f"recipe={recipe}"])
    scaled = compose([f"recipe={recipe}", f"scale={scale}"])
    algorithmic = (
        "algorithm.",
        "actor_rollout_ref.actor.policy_loss",
        "actor_rollout_ref.actor.loss_agg_mode",
        "actor_rollout_ref.actor.clip_ratio",
        "actor_rollout_ref.actor.use_kl_loss",
        "actor_rollout_ref.actor.kl_loss",
        "reward.custom_reward_function",
        "reward.reward_manager",
        "actor_rollout_ref.actor.ppo_epochs",
        "actor_rollout_ref.rollout.temperature",
        "actor_rollout_ref.rollout.top_p",
        "rlvr.ref_reset_steps",
    )
    changed = [k for k, _, _ in diff(published, scaled)]
    assert changed, "a scale profile that changes nothing is not a profile"
    assert not [k for k in changed if k.startswith(algorithmic)]


def test_sweepable_axis_options_exist():
    for group, opts in {
        "kl": ["none", "k3_0.01", "k3_0.05"],
        "filter": ["none", "dynamic"],
        "agg": ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"],
        "verifier": ["plain", "format"],
        "engine": ["auto", "local", "verl"],
    }.items():
        assert set(opts) <= set(options(group)), group
