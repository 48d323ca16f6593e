"""Rules on the domains of values and names, checked whether or not their feature is on (both engines).

The registries' names (advantage estimator, policy loss, reward manager, aggregation mode), the
ranges of numbers that have one whatever else is configured (temperature, top_p, learning rates,
gamma/lambda, epochs), ``data.truncation``, and the critic GAE needs.
"""

from __future__ import annotations

from omegaconf import DictConfig

from recipes.validate.registry import is_number, rule, sel
from recipes.validate.verl_names import adv_estimators, agg_mode_ok, policy_losses, reward_managers


@rule("registries")
def registries(cfg: DictConfig) -> list[str]:
    est, mode = sel(cfg, "algorithm.adv_estimator"), sel(cfg, "actor_rollout_ref.actor.policy_loss.loss_mode")
    mgr = sel(cfg, "reward.reward_manager.name")
    errs = []
    if est not in adv_estimators():
        errs.append(
            f"[algorithm.adv_estimator] {est!r} is not in veRL's registry; fix: one of {sorted(adv_estimators())}"
        )
    if mode not in policy_losses():
        errs.append(
            f"[actor_rollout_ref.actor.policy_loss.loss_mode] {mode!r} is not in veRL's registry; fix: one of "
            f"{list(policy_losses())} (or register the loss with @register_policy_loss)"
        )
    if sel(cfg, "reward.reward_manager.source") == "register" and mgr not in reward_managers():
        errs.append(
            f"[reward.reward_manager.name] {mgr!r} is not a registered reward manager; fix: one of {list(reward_managers())}"
        )
    for key in ("actor_rollout_ref.actor.loss_agg_mode", "critic.loss_agg_mode"):
        v = sel(cfg, key)
        if v is not None and not agg_mode_ok(v):
            errs.append(f"[{key}] {v!r} is not an aggregation mode of veRL's agg_loss; fix: e.g. token-mean")
    return errs


@rule("numeric_domains")
def numeric_domains(cfg: DictConfig) -> list[str]:
    """Ranges of numbers that have one whatever else is configured."""
    checks = [
        ("actor_rollout_ref.rollout.temperature", lambda v: v > 0, "must be > 0 for sampled rollouts"),
        ("actor_rollout_ref.rollout.top_p", lambda v: 0 < v <= 1, "must be in (0, 1]"),
        ("actor_rollout_ref.rollout.val_kwargs.temperature", lambda v: v >= 0, "must be >= 0 (0 = greedy)"),
        ("actor_rollout_ref.actor.optim.lr", lambda v: v > 0, "must be > 0"),
        ("critic.optim.lr", lambda v: v > 0, "must be > 0"),
        ("algorithm.gamma", lambda v: 0 <= v <= 1, "must be in [0, 1]"),
        ("algorithm.lam", lambda v: 0 <= v <= 1, "must be in [0, 1]"),
        (
            "algorithm.filter_groups.max_num_gen_batches",
            lambda v: v >= 0,
            "must be >= 0 (0 = unlimited); fix: e.g. 10",
        ),
        ("actor_rollout_ref.actor.ppo_epochs", lambda v: v >= 1, "must be >= 1"),
        ("critic.ppo_epochs", lambda v: v >= 1, "must be >= 1"),
    ]
    errs = []
    for key, ok, what in checks:
        v = sel(cfg, key)
        if v is not None and not (is_number(v) and ok(v)):
            errs.append(f"[{key}] {v!r} {what}")
    return errs


#: ``data.truncation`` values veRL's ``torch_functional.postprocess_data`` implements.
TRUNCATIONS = ("error", "left", "right", "middle")


@rule("truncation")
def truncation(cfg: DictConfig) -> list[str]:
    v = sel(cfg, "data.truncation")
    if v is None or v in TRUNCATIONS:
        return []
    return [
        f"[data.truncation] {v!r} is not a truncation veRL implements; fix: one of {', '.join(TRUNCATIONS)}"
    ]


@rule("critic")
def critic(cfg: DictConfig) -> list[str]:
    if cfg.algorithm.adv_estimator == "gae" and cfg.critic.get("enable") is False:
        return ["[critic.enable] adv_estimator=gae needs a critic; fix: critic.enable=null or adv=grpo"]
    return []
