"""Every recipe composes and passes validation, at its published scale and at laptop scale.

Each configuration is composed once for the module (:func:`compose`): several tests read the same
recipe at the same scale, and a compose of the veRL tree costs a fraction of a second of CPU.
"""

from __future__ import annotations

import copy
import functools

import pytest

from recipes import compose as composer
from recipes.compose import diff, options
from recipes.validate import validate


@functools.cache
def _composed(overrides: tuple[str, ...]):  # noqa: ANN202 - a DictConfig
    return composer.compose(list(overrides))


def compose(overrides: list[str]):  # noqa: ANN201 - a DictConfig
    """``recipes.compose.compose(overrides)``, composed once per module; each call gets its own copy."""
    return copy.deepcopy(_composed(tuple(overrides)))


RECIPES = ["grpo", "r1_zero", "r1_reasoning", "dapo", "drgrpo", "cispo", "gspo", "orz_ppo"]


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
    # the number of optimizer updates per rollout is part of the algorithm (R1: 16, ORZ: 1)
    assert updates_per_rollout(scaled) == updates_per_rollout(published)
    gen = [c.data.get("gen_batch_size") for c in (published, scaled)]
    if gen[0] is not None:  # DAPO: generation rounds of 3 x the batch, at any scale
        assert gen[1] / scaled.data.train_batch_size == gen[0] / published.data.train_batch_size


def updates_per_rollout(cfg) -> tuple[int, int | None]:
    """(actor, critic) optimizer updates per rollout; the critic's only when GAE trains one."""
    tb, a = cfg.data.train_batch_size, cfg.actor_rollout_ref.actor
    assert tb % a.ppo_mini_batch_size == 0
    actor = tb // a.ppo_mini_batch_size * a.ppo_epochs
    if cfg.algorithm.adv_estimator != "gae":
        return actor, None
    assert tb % cfg.critic.ppo_mini_batch_size == 0
    return actor, tb // cfg.critic.ppo_mini_batch_size * cfg.critic.ppo_epochs


# updates per rollout of each recipe's source (R1 and CISPO/DAPO: 16 mini-batches; Dr. GRPO: 8;
# GSPO: 4; DeepSeekMath GRPO and ORZ: 1, ORZ's critic 16 for the source's 12, see its deviation)
SOURCE_UPDATES = {
    "r1_zero": (16, None),
    "r1_reasoning": (16, None),
    "dapo": (16, None),
    "cispo": (16, None),
    "drgrpo": (8, None),
    "gspo": (4, None),
    "grpo": (1, None),
    "orz_ppo": (1, 16),
}


@pytest.mark.parametrize("recipe", sorted(SOURCE_UPDATES))
def test_laptop_keeps_the_sources_updates_per_rollout(hydra_ctx, recipe):
    """Not only equal to the published config: equal to the source's number, at laptop scale too."""
    laptop = compose([f"recipe={recipe}", "scale=laptop"])
    assert updates_per_rollout(laptop) == SOURCE_UPDATES[recipe]
    # the laptop lr is calibrated per update: 1e-4 at one update per rollout, / sqrt(updates)
    actor, crit = updates_per_rollout(laptop)
    assert laptop.actor_rollout_ref.actor.optim.lr == pytest.approx(1e-4 / actor**0.5)
    if crit is not None:
        assert laptop.critic.optim.lr == pytest.approx(3e-4 / crit**0.5)
    assert laptop.data.train_batch_size <= compose([f"recipe={recipe}"]).data.train_batch_size


def test_laptop_evaluates_every_recipe_the_same_way(hydra_ctx):
    protocols = {
        r: dict(compose([f"recipe={r}", "scale=laptop"]).actor_rollout_ref.rollout.val_kwargs)
        for r in SOURCE_UPDATES
    }
    assert len({tuple(sorted(p.items())) for p in protocols.values()}) == 1, protocols
    assert protocols["dapo"]["top_p"] == 1.0 and protocols["dapo"]["do_sample"]


def test_sweepable_axis_options_exist():
    for group, opts in {
        "kl": ["none", "k3_0.01", "k3_0.05"],
        "filter": ["none", "dynamic"],
        "agg": ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"],
        "verifier": ["plain", "format"],
        "engine": ["auto", "local", "verl"],
    }.items():
        assert set(opts) <= set(options(group)), group
