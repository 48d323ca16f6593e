"""Recipes resolve to the published values (the provenance table), and each cites its sources.

The table transcribes published hyper-parameters (DeepSeekMath, DeepSeek-R1, DAPO, Dr. GRPO,
MiniMax-M1/SkyRL for CISPO, GSPO, Open-Reasoner-Zero) independently of the YAML files.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from recipes.compose import compose

A = "actor_rollout_ref.actor."
PROVENANCE: dict[str, dict[str, object]] = {
    "grpo": {
        A + "kl_loss_coef": 0.04,
        A + "use_kl_loss": True,
        "actor_rollout_ref.rollout.n": 64,
        A + "optim.lr": 1e-6,
        "algorithm.norm_adv_by_std_in_grpo": True,
        A + "loss_agg_mode": "seq-mean-token-mean",
        "data.max_response_length": 1024,
        "algorithm.adv_estimator": "grpo",
        A + "ppo_epochs": 1,
    },
    "r1_zero": {
        "actor_rollout_ref.rollout.n": 16,
        "data.train_batch_size": 32,
        "data.max_response_length": 32768,
        A + "optim.lr": 3e-6,
        A + "kl_loss_coef": 0.001,
        A + "use_kl_loss": True,
        "rlvr.ref_reset_steps": 400,
        "trainer.total_training_steps": 10400,
        "algorithm.adv_estimator": "grpo",
        "actor_rollout_ref.rollout.temperature": 1.0,
    },
    "dapo": {
        A + "clip_ratio_low": 0.2,
        A + "clip_ratio_high": 0.28,
        "algorithm.filter_groups.enable": True,
        "algorithm.filter_groups.metric": "acc",
        A + "loss_agg_mode": "token-mean",
        "reward.reward_manager.name": "dapo",
        "reward.reward_kwargs.overlong_buffer_cfg.enable": True,
        "reward.reward_kwargs.overlong_buffer_cfg.len": 4096,
        "data.max_response_length": 20480,
        A + "use_kl_loss": False,
        "algorithm.use_kl_in_reward": False,
        "actor_rollout_ref.rollout.n": 16,
        "data.train_batch_size": 512,
        A + "optim.lr": 1e-6,
    },
    "drgrpo": {
        "algorithm.norm_adv_by_std_in_grpo": False,
        A + "loss_agg_mode": "seq-mean-token-sum-norm",
        A + "use_kl_loss": False,
        "algorithm.use_kl_in_reward": False,
    },
    "cispo": {
        A + "policy_loss.loss_mode": "cispo",
        A + "clip_ratio_low": 1.0,
        A + "clip_ratio_high": 4.0,
        A + "use_kl_loss": False,
    },
    "gspo": {
        A + "policy_loss.loss_mode": "gspo",
        A + "clip_ratio_low": 3e-4,
        A + "clip_ratio_high": 4e-4,
        A + "use_kl_loss": False,
    },
    "orz_ppo": {
        "algorithm.adv_estimator": "gae",
        "algorithm.gamma": 1.0,
        "algorithm.lam": 1.0,
        A + "use_kl_loss": False,
        "algorithm.use_kl_in_reward": False,
    },
}


@pytest.mark.parametrize("recipe", sorted(PROVENANCE))
def test_published_values(hydra_ctx, recipe):
    cfg = compose([f"recipe={recipe}"])
    for key, want in PROVENANCE[recipe].items():
        got = OmegaConf.select(cfg, key)
        assert got == pytest.approx(want) if isinstance(want, float) else got == want, (
            f"{recipe}: {key}={got}, published {want}"
        )


def test_drgrpo_constant_normaliser_is_max_length(hydra_ctx):
    cfg = compose(["recipe=drgrpo"])
    assert cfg.actor_rollout_ref.actor.loss_scale_factor == cfg.data.max_response_length


def test_r1_zero_format_reward_on(hydra_ctx):
    cfg = compose(["recipe=r1_zero"])
    assert 0 < cfg.reward.custom_reward_function.reward_kwargs.format_weight < 0.5


@pytest.mark.parametrize("recipe", sorted(PROVENANCE))
def test_every_recipe_cites_its_keys(hydra_ctx, recipe):
    """Each recipe's `rlvr.sources` cites a source for keys it sets, and names only real keys."""
    cfg = compose([f"recipe={recipe}"])
    sources = cfg.rlvr.sources
    assert len(sources) >= 4
    for key, text in sources.items():
        assert OmegaConf.select(cfg, key, default="__missing__") != "__missing__", (
            f"{recipe} cites unknown {key}"
        )
        assert isinstance(text, str) and len(text) > 8
