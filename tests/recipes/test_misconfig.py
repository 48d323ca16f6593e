"""A table of bad configs: each is rejected before launch with a message naming the key."""

from __future__ import annotations

import pytest
from hydra.errors import HydraException
from omegaconf.errors import OmegaConfBaseException

from recipes.compose import compose
from recipes.validate import ConfigError, validate

# (overrides on top of recipe=dapo, engine, substring the error must contain)
BAD = [
    ("typo in a key", ["actor_rollout_ref.actor.clip_ratio_hgh=0.3"], "verl", "clip_ratio_hgh"),
    (
        "string for a float",
        ["actor_rollout_ref.actor.clip_ratio_high=abc"],
        "verl",
        "actor_rollout_ref.actor.clip_ratio_high",
    ),
    (
        "string for a bool",
        ["actor_rollout_ref.actor.use_kl_loss=maybe"],
        "verl",
        "actor_rollout_ref.actor.use_kl_loss",
    ),
    ("float for an int", ["data.train_batch_size=8.5"], "verl", "data.train_batch_size"),
    ("unknown advantage estimator", ["algorithm.adv_estimator=grpoo"], "verl", "algorithm.adv_estimator"),
    (
        "'dapo' is not a loss mode",
        ["actor_rollout_ref.actor.policy_loss.loss_mode=dapo"],
        "verl",
        "actor_rollout_ref.actor.policy_loss.loss_mode",
    ),
    (
        "unknown aggregation",
        ["actor_rollout_ref.actor.loss_agg_mode=seq-mean"],
        "verl",
        "actor_rollout_ref.actor.loss_agg_mode",
    ),
    (
        "GRPO with one rollout",
        ["actor_rollout_ref.rollout.n=1", "filter=none"],
        "verl",
        "actor_rollout_ref.rollout.n",
    ),
    (
        "dynamic sampling with one rollout",
        ["actor_rollout_ref.rollout.n=1"],
        "verl",
        "algorithm.filter_groups.enable",
    ),
    (
        "filter on a metric nobody logs",
        ["algorithm.filter_groups.metric=accuracy"],
        "verl",
        "algorithm.filter_groups.metric",
    ),
    (
        "KL in reward and in loss",
        ["kl=k3_0.01", "algorithm.use_kl_in_reward=true"],
        "verl",
        "algorithm.use_kl_in_reward",
    ),
    (
        "KL coefficient without KL loss",
        ["actor_rollout_ref.actor.kl_loss_coef=0.1"],
        "verl",
        "actor_rollout_ref.actor.kl_loss_coef",
    ),
    (
        "KL loss with coefficient 0",
        ["actor_rollout_ref.actor.use_kl_loss=true"],
        "verl",
        "actor_rollout_ref.actor.kl_loss_coef",
    ),
    (
        "overlong buffer longer than the response",
        ["rlvr.overlong_buffer_len=30000"],
        "verl",
        "reward.reward_kwargs.overlong_buffer_cfg.len",
    ),
    (
        "overlong buffer with a manager that ignores it",
        ["reward.reward_manager.name=naive"],
        "verl",
        "reward.reward_manager.name",
    ),
    (
        "reference reset without a reference model",
        ["rlvr.ref_reset_steps=400"],
        "verl",
        "rlvr.ref_reset_steps",
    ),
    (
        "clip high below clip low",
        ["actor_rollout_ref.actor.clip_ratio_low=0.28", "actor_rollout_ref.actor.clip_ratio_high=0.2"],
        "verl",
        "actor_rollout_ref.actor.clip_ratio_high",
    ),
    (
        "mini-batch does not divide the batch",
        ["actor_rollout_ref.actor.ppo_mini_batch_size=7"],
        "verl",
        "actor_rollout_ref.actor.ppo_mini_batch_size",
    ),
    (
        "format reward as large as accuracy",
        ["reward.custom_reward_function.reward_kwargs.format_weight=1.0"],
        "verl",
        "reward.custom_reward_function.reward_kwargs.format_weight",
    ),
    (
        "unregistered reward manager",
        ["length=none", "reward.reward_manager.name=prime"],
        "verl",
        "reward.reward_manager.name",
    ),
    (
        "reward function that does not load",
        ["reward.custom_reward_function.path=pkg://no_such_module_xyz"],
        "verl",
        "reward.custom_reward_function.path",
    ),
    (
        "zero temperature",
        ["actor_rollout_ref.rollout.temperature=0"],
        "verl",
        "actor_rollout_ref.rollout.temperature",
    ),
    ("unknown key added with +", ["+algorithm.not_a_field=1"], "verl", "algorithm"),
    (
        "Dr. GRPO norm without its constant",
        ["agg=seq_mean_token_sum_norm", "actor_rollout_ref.actor.loss_scale_factor=null"],
        "verl",
        "actor_rollout_ref.actor.loss_scale_factor",
    ),
    ("GAE without a critic", ["adv=gae", "critic.enable=false"], "verl", "critic.enable"),
    ("negative lr", ["actor_rollout_ref.actor.optim.lr=-1e-6"], "verl", "actor_rollout_ref.actor.optim.lr"),
    (
        "indivisible GPU batch",
        [
            "data.train_batch_size=3",
            "actor_rollout_ref.actor.ppo_mini_batch_size=3",
            "actor_rollout_ref.rollout.n=3",
        ],
        "verl",
        "data.train_batch_size",
    ),
    # a loss variant with a clip range that is not its own (the key, the loss key and the fix)
    (
        "GSPO with PPO's token-level clip range",
        ["loss=gspo", "clip=ppo"],
        "verl",
        "[actor_rollout_ref.actor.clip_ratio_high] clip_ratio_low/clip_ratio_high 0.2/0.2 with "
        "actor_rollout_ref.actor.policy_loss.loss_mode=gspo",
    ),
    (
        "GSPO with one bound token-sized",
        ["loss=gspo", "actor_rollout_ref.actor.clip_ratio_high=0.28"],
        "verl",
        "fix: clip=gspo",
    ),
    (
        "CISPO with a lower bound on the weight",
        ["loss=cispo", "clip=clip_higher"],
        "verl",
        "[actor_rollout_ref.actor.clip_ratio_low] 0.2 with actor_rollout_ref.actor.policy_loss.loss_mode=cispo",
    ),
    (
        "CISPO lower bound set by hand",
        ["loss=cispo", "actor_rollout_ref.actor.clip_ratio_low=0.5"],
        "local",
        "fix: clip=cispo",
    ),
    (
        "token loss with GSPO's sequence range",
        ["loss=vanilla", "clip=gspo"],
        "verl",
        "[actor_rollout_ref.actor.clip_ratio_low] clip_ratio_low/clip_ratio_high 0.0003/0.0004 with "
        "actor_rollout_ref.actor.policy_loss.loss_mode=vanilla",
    ),
    # the reward function's options
    (
        "typo in a reward option",
        ["+reward.custom_reward_function.reward_kwargs.format_wieght=0.1"],
        "verl",
        "[reward.custom_reward_function.reward_kwargs.format_wieght] is not an option of compute_score",
    ),
    (
        "incorrect score above zero",
        ["reward.custom_reward_function.reward_kwargs.incorrect_score=0.5"],
        "local",
        "[reward.custom_reward_function.reward_kwargs.incorrect_score] 0.5 must be in [-1, 0]",
    ),
    (
        "incorrect score below -1",
        ["reward.custom_reward_function.reward_kwargs.incorrect_score=-2.0"],
        "verl",
        "reward.custom_reward_function.reward_kwargs.incorrect_score",
    ),
    (
        "language reward above the shaping cap",
        [
            "+reward.custom_reward_function.reward_kwargs.lang_weight=0.8",
            "+reward.custom_reward_function.reward_kwargs.target_lang=en",
        ],
        "verl",
        "[reward.custom_reward_function.reward_kwargs.lang_weight] 0.8 must be in [0, 0.5]",
    ),
    (
        "language reward without a language",
        ["+reward.custom_reward_function.reward_kwargs.lang_weight=0.2"],
        "verl",
        "reward.custom_reward_function.reward_kwargs.target_lang",
    ),
    # sizes written as relations, and keys veRL does not read
    (
        "mini-batch relation the batch does not divide",
        ["data.train_batch_size=24"],
        "verl",
        "[actor_rollout_ref.actor.ppo_mini_batch_size] ${rlvr.div:${data.train_batch_size},16} = ${rlvr.div:24,16}",
    ),
    (
        "critic mini-batch that does not divide",
        ["recipe=orz_ppo", "critic.ppo_mini_batch_size=7"],
        "verl",
        "[critic.ppo_mini_batch_size]",
    ),
    ("unknown truncation", ["data.truncation=both"], "verl", "[data.truncation]"),
    (
        "gradient clip on the key veRL does not read",
        ["actor_rollout_ref.actor.grad_clip=0.5"],
        "verl",
        "[actor_rollout_ref.actor.grad_clip] 0.5 is not read by veRL 0.9.1",
    ),
    (
        "optimizer override the local engine cannot pass",
        ["+actor_rollout_ref.actor.optim.override_optimizer_config.amsgrad=true"],
        "local",
        "[actor_rollout_ref.actor.optim.override_optimizer_config]",
    ),
]


def test_table_is_large_enough():
    assert len(BAD) >= 15


@pytest.mark.parametrize("name,overrides,engine,needle", BAD, ids=[b[0] for b in BAD])
def test_rejected_with_key(hydra_ctx, name, overrides, engine, needle):
    with pytest.raises((ConfigError, HydraException, OmegaConfBaseException, ValueError)) as info:
        validate(compose(["recipe=dapo", *overrides]), engine)
    assert needle in str(info.value), f"{name}: message does not name {needle!r}:\n{info.value}"


def test_good_config_passes(hydra_ctx):
    validate(compose(["recipe=dapo"]), "verl")


def test_all_errors_reported_at_once(hydra_ctx):
    with pytest.raises(ConfigError) as info:
        validate(
            compose(["recipe=dapo", "actor_rollout_ref.rollout.temperature=0", "rlvr.ref_reset_steps=400"]),
            "verl",
        )
    assert len(info.value.errors) >= 2
