"""Cross-field rules veRL does not check: combinations that are silently wrong.

Each rule is a small function registered in ``RULES``; it returns error strings of the form
``[full.key] what is wrong; fix: what to do``. Rules read the composed config only; they do
not import veRL. ``recipes.validate`` runs them together with veRL's own validation.
"""

from __future__ import annotations

from collections.abc import Callable

from omegaconf import DictConfig

from recipes.registry import Registry

Rule = Callable[[DictConfig], list[str]]
RULES: Registry[Rule] = Registry("config rule")

#: Estimators whose baseline is the group of rollouts of one prompt.
GROUP_ESTIMATORS = {
    "grpo",
    "rloo",
    "grpo_passk",
    "rloo_vectorized",
    "grpo_vectorized",
    "opo",
    "gpg",
    "gdpo",
    "reinforce_plus_plus_baseline",
    "optimal_token_baseline",
    "tir_optimal_token_baseline",
}
#: Per-sample reward keys the project's verifier returns (usable as filter metrics).
FILTER_METRICS = {"acc", "score", "seq_reward", "seq_final_reward", "reward", "format"}
KL_TYPES = {"kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "full"}


def _actor(cfg: DictConfig) -> DictConfig:
    return cfg.actor_rollout_ref.actor


@RULES.register("group_size")
def group_size(cfg: DictConfig) -> list[str]:
    n = cfg.actor_rollout_ref.rollout.n
    if cfg.algorithm.adv_estimator in GROUP_ESTIMATORS and n < 2:
        return [
            f"[actor_rollout_ref.rollout.n] {n} rollout per prompt: the group baseline of "
            f"'{cfg.algorithm.adv_estimator}' makes every advantage 0; fix: set it to 2 or more (e.g. 8)"
        ]
    return []


@RULES.register("dynamic_sampling")
def dynamic_sampling(cfg: DictConfig) -> list[str]:
    fg = cfg.algorithm.filter_groups
    if not fg.enable:
        return []
    errs = []
    if cfg.actor_rollout_ref.rollout.n < 2:
        errs.append(
            "[algorithm.filter_groups.enable] dynamic sampling with rollout.n < 2: every group has zero "
            "variance and every group is dropped; fix: set actor_rollout_ref.rollout.n >= 2 or filter=none"
        )
    if fg.metric not in FILTER_METRICS:
        errs.append(
            f"[algorithm.filter_groups.metric] {fg.metric!r} is not a per-sample reward key; "
            f"fix: one of {sorted(FILTER_METRICS)}"
        )
    if fg.max_num_gen_batches < 0:
        errs.append(
            "[algorithm.filter_groups.max_num_gen_batches] must be >= 0 (0 = unlimited); fix: e.g. 10"
        )
    return errs


@RULES.register("kl_placement")
def kl_placement(cfg: DictConfig) -> list[str]:
    a, alg = _actor(cfg), cfg.algorithm
    errs = []
    if alg.use_kl_in_reward and a.use_kl_loss:
        errs.append(
            "[algorithm.use_kl_in_reward] KL is both in the reward and in the loss (applied twice); "
            "fix: pick one kl option (kl=in_reward or kl=k3_<coef>)"
        )
    if a.use_kl_loss and not a.kl_loss_coef > 0:
        errs.append(
            f"[actor_rollout_ref.actor.kl_loss_coef] use_kl_loss is on with coefficient "
            f"{a.kl_loss_coef}; fix: a positive coefficient, or kl=none"
        )
    if not a.use_kl_loss and a.kl_loss_coef and a.kl_loss_coef > 0:
        errs.append(
            f"[actor_rollout_ref.actor.kl_loss_coef] {a.kl_loss_coef} has no effect because "
            "actor_rollout_ref.actor.use_kl_loss is false; fix: set use_kl_loss=true or the coefficient to 0"
        )
    if a.use_kl_loss and a.kl_loss_type not in KL_TYPES:
        errs.append(
            f"[actor_rollout_ref.actor.kl_loss_type] unknown {a.kl_loss_type!r}; fix: one of {sorted(KL_TYPES)}"
        )
    return errs


@RULES.register("overlong_buffer")
def overlong_buffer(cfg: DictConfig) -> list[str]:
    rk = cfg.reward.get("reward_kwargs") or {}
    ob = rk.get("overlong_buffer_cfg") or {}
    if not ob.get("enable", False):
        return []
    errs = []
    max_len = cfg.data.max_response_length
    if ob.get("len", 0) > max_len:
        errs.append(
            f"[reward.reward_kwargs.overlong_buffer_cfg.len] buffer {ob['len']} is longer than "
            f"data.max_response_length {max_len}; fix: a buffer shorter than the max length "
            "(DAPO: 4096 of 20480; rlvr.overlong_buffer_len)"
        )
    if rk.get("max_resp_len", max_len) != max_len:
        errs.append(
            f"[reward.reward_kwargs.max_resp_len] {rk['max_resp_len']} differs from "
            f"data.max_response_length {max_len}; fix: leave it at ${{data.max_response_length}}"
        )
    if cfg.reward.reward_manager.name != "dapo":
        errs.append(
            f"[reward.reward_manager.name] overlong buffer enabled but the reward manager is "
            f"{cfg.reward.reward_manager.name!r}, which ignores it; fix: length=dapo_overlong sets 'dapo'"
        )
    return errs


@RULES.register("ref_reset")
def ref_reset(cfg: DictConfig) -> list[str]:
    steps = cfg.rlvr.get("ref_reset_steps")
    if steps is None:
        return []
    if not isinstance(steps, int) or steps <= 0:
        return [f"[rlvr.ref_reset_steps] {steps!r} must be a positive integer or null"]
    if not (_actor(cfg).use_kl_loss or cfg.algorithm.use_kl_in_reward):
        return [
            "[rlvr.ref_reset_steps] a reference reset interval without a reference model (no KL "
            "in loss or reward); fix: choose a kl option or set rlvr.ref_reset_steps=null"
        ]
    return []


@RULES.register("clip")
def clip(cfg: DictConfig) -> list[str]:
    a = _actor(cfg)
    errs = []
    for key in ("clip_ratio", "clip_ratio_low", "clip_ratio_high"):
        v = a.get(key)
        if isinstance(v, (int, float)) and v <= 0:
            errs.append(f"[actor_rollout_ref.actor.{key}] {v} must be > 0")
    lo, hi = a.get("clip_ratio_low"), a.get("clip_ratio_high")
    if (
        isinstance(lo, (int, float))
        and isinstance(hi, (int, float))
        and hi < lo
        and a.policy_loss.loss_mode in ("vanilla", "gspo")
    ):
        errs.append(
            f"[actor_rollout_ref.actor.clip_ratio_high] ({hi}) < clip_ratio_low ({lo}): "
            "Clip-Higher wants high >= low; fix: swap them"
        )
    return errs


@RULES.register("aggregation")
def aggregation(cfg: DictConfig) -> list[str]:
    a = _actor(cfg)
    if a.loss_agg_mode == "seq-mean-token-sum-norm" and a.get("loss_scale_factor") is None:
        return [
            "[actor_rollout_ref.actor.loss_scale_factor] seq-mean-token-sum-norm without a constant "
            "divides by the padded width of each micro-batch, which changes from batch to batch; "
            "fix: set it (agg=seq_mean_token_sum_norm sets ${data.max_response_length})"
        ]
    return []


@RULES.register("batch_sizes")
def batch_sizes(cfg: DictConfig) -> list[str]:
    tb, mb = cfg.data.train_batch_size, _actor(cfg).ppo_mini_batch_size
    errs = []
    if not isinstance(tb, int) or tb <= 0:
        errs.append(f"[data.train_batch_size] {tb!r} must be a positive number of prompts")
    elif not isinstance(mb, int) or mb <= 0 or mb > tb or tb % mb:
        errs.append(
            f"[actor_rollout_ref.actor.ppo_mini_batch_size] {mb!r} prompts must divide "
            f"data.train_batch_size ({tb}); fix: a divisor of {tb}"
        )
    if _actor(cfg).ppo_epochs < 1:
        errs.append(f"[actor_rollout_ref.actor.ppo_epochs] {_actor(cfg).ppo_epochs} must be >= 1")
    return errs


@RULES.register("critic")
def critic(cfg: DictConfig) -> list[str]:
    if cfg.algorithm.adv_estimator == "gae" and cfg.critic.get("enable") is False:
        return ["[critic.enable] adv_estimator=gae needs a critic; fix: critic.enable=null or adv=grpo"]
    return []


@RULES.register("sampling")
def sampling(cfg: DictConfig) -> list[str]:
    r = cfg.actor_rollout_ref.rollout
    errs = []
    if not isinstance(r.temperature, (int, float)) or r.temperature <= 0:
        errs.append(
            f"[actor_rollout_ref.rollout.temperature] {r.temperature!r} must be > 0 for sampled rollouts"
        )
    if not isinstance(r.top_p, (int, float)) or not 0 < r.top_p <= 1:
        errs.append(f"[actor_rollout_ref.rollout.top_p] {r.top_p!r} must be in (0, 1]")
    lr = _actor(cfg).optim.lr
    if not isinstance(lr, (int, float)) or lr <= 0:
        errs.append(f"[actor_rollout_ref.actor.optim.lr] {lr!r} must be > 0")
    return errs


@RULES.register("reward_weights")
def reward_weights(cfg: DictConfig) -> list[str]:
    kw = cfg.reward.custom_reward_function.get("reward_kwargs") or {}
    fw = kw.get("format_weight", 0.0)
    if not isinstance(fw, (int, float)) or not 0 <= fw <= 0.5:
        return [
            f"[reward.custom_reward_function.reward_kwargs.format_weight] {fw!r}: the format reward must "
            "stay well below accuracy (1.0); fix: a value in [0, 0.5], e.g. 0.1"
        ]
    return []


@RULES.register("legacy_reward_keys")
def legacy_reward_keys(cfg: DictConfig) -> list[str]:
    errs = []
    if cfg.get("custom_reward_function", {}).get("path"):
        errs.append(
            "[custom_reward_function.path] veRL 0.9.1 ignores the top-level key; "
            "fix: reward.custom_reward_function.path"
        )
    rm = cfg.get("reward_model") or {}
    if rm.get("reward_manager") not in (None, "naive") or rm.get("reward_kwargs"):
        errs.append(
            "[reward_model.reward_manager] veRL 0.9.1 ignores reward_model.reward_manager/"
            "reward_kwargs; fix: reward.reward_manager.name and reward.reward_kwargs"
        )
    return errs


def check_rules(cfg: DictConfig) -> list[str]:
    """Run every registered rule; return all errors (empty when the config is consistent)."""
    return [e for name in RULES for e in RULES.get(name)(cfg)]
