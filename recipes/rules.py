"""Every config rule in one registry, each tagged with the engines it applies to.

A rule is a small function ``rule(cfg) -> [error, ...]``, registered with :func:`rule` in
:data:`RULES`; errors read ``[full.key] what is wrong; fix: what to do``. This module holds the
project's rules for both engines: the *domains* of values (checked whether or not their feature
is on, so ``kl_loss_coef=-1`` or ``kl_loss_type=k9`` fail on a recipe without KL) and the
cross-field combinations veRL does not check. The local engine's refusals (what it does not
implement) are registered from :mod:`recipes.rules_local` with ``engines=("local",)``. Adding a
rule is a decorated function of a few lines.

Name lists are read from veRL, never copied: advantage estimators and policy losses from its
registries (group estimators are those whose function takes the group ``index``), reward managers
from ``REWARD_MANAGER``; KL estimators, KL controllers and loss-aggregation modes, which veRL
dispatches on strings, are probed by calling veRL's own function once per name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.registry import Registry

ENGINES = ("verl", "local")


@dataclass(frozen=True)
class Rule:
    """A check and the engines (``verl``, ``local``) whose launches it guards."""

    check: Callable[[DictConfig], list[str]]
    engines: tuple[str, ...]


RULES: Registry[Rule] = Registry("config rule")


def rule(name: str, engines: tuple[str, ...] = ENGINES) -> Callable[[Callable], Callable]:
    """Decorator: register ``fn(cfg) -> [errors]`` as rule ``name`` for ``engines``."""

    def deco(fn: Callable[[DictConfig], list[str]]) -> Callable[[DictConfig], list[str]]:
        RULES.add(name, Rule(fn, tuple(engines)))
        return fn

    return deco


def check_rules(cfg: DictConfig, engine: str) -> list[str]:
    """Errors of every rule registered for ``engine`` (empty when the config is consistent)."""
    return [
        e for name in RULES for e in (RULES.get(name).check(cfg) if engine in RULES.get(name).engines else [])
    ]


def sel(cfg: DictConfig, key: str) -> Any:
    """``cfg``'s value at dotted ``key``; None when veRL's tree has no such key."""
    return OmegaConf.select(cfg, key, default=None)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------- names read from veRL
@functools.cache
def adv_estimators() -> dict[str, Callable]:
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY  # veRL: ~10 s, not at --help

    return dict(ADV_ESTIMATOR_REGISTRY)


@functools.cache
def group_estimators() -> frozenset[str]:
    """Estimators whose baseline is the group of one prompt's rollouts (they take ``index``)."""
    return frozenset(n for n, fn in adv_estimators().items() if "index" in inspect.signature(fn).parameters)


@functools.cache
def policy_losses() -> tuple[str, ...]:
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY  # veRL: ~10 s, not at --help

    return tuple(sorted(POLICY_LOSS_REGISTRY))


@functools.cache
def reward_managers() -> tuple[str, ...]:
    from verl.experimental.reward_loop.reward_manager import registry  # veRL: ~10 s, not at --help

    return tuple(sorted(registry.REWARD_MANAGER))


def _probe(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except (NotImplementedError, ValueError, AttributeError, TypeError, AssertionError):
        return False
    return True


@functools.cache
def kl_estimator_ok(name: str) -> bool:
    """Whether veRL's ``core_algos.kl_penalty`` computes ``name`` (``k3``, ``low_var_kl``, ``k3+``...)."""
    import torch  # ~3 s, with veRL: not at --help
    from verl.trainer.ppo.core_algos import kl_penalty  # veRL: ~10 s, not at --help

    return _probe(lambda: kl_penalty(torch.zeros(1), torch.zeros(1), str(name)))


@functools.cache
def kl_controller_ok(kind: str) -> bool:
    """Whether veRL's ``get_kl_controller`` builds a controller of type ``kind``."""
    from verl.trainer.ppo.core_algos import get_kl_controller  # veRL: ~10 s, not at --help

    c = SimpleNamespace(type=str(kind), kl_coef=0.1, horizon=1, target_kl=0.1)
    return _probe(lambda: get_kl_controller(c))


@functools.cache
def agg_mode_ok(mode: str) -> bool:
    """Whether veRL's ``core_algos.agg_loss`` aggregates with ``mode``."""
    import torch  # ~3 s, with veRL: not at --help
    from verl.trainer.ppo.core_algos import agg_loss  # veRL: ~10 s, not at --help

    kw = {"dp_size": 1, "batch_num_tokens": 1, "global_batch_size": 1, "loss_scale_factor": 1}
    return _probe(lambda: agg_loss(torch.zeros(1, 1), torch.ones(1, 1), str(mode), **kw))


def filter_metrics() -> tuple[str, ...]:
    """Per-sample keys a group filter can read: veRL's sequence rewards + the verifier's numbers."""
    import rewards  # the verifier's key list; validation loads the reward function anyway

    return ("seq_final_reward", "seq_reward", *(k for k in rewards.KEYS if k not in ("pred", "reason")))


# ---------------------------------------------------------------- domains (always checked)
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


@rule("kl_domain")
def kl_domain(cfg: DictConfig) -> list[str]:
    a, alg = "actor_rollout_ref.actor", "algorithm"
    errs = []
    for key in (f"{a}.kl_loss_type", f"{alg}.kl_penalty"):
        v = sel(cfg, key)
        if v is not None and not kl_estimator_ok(v):
            errs.append(
                f"[{key}] {v!r} is not a KL estimator veRL computes; fix: kl, abs, mse, low_var_kl (k1/k2/k3, '+' for straight-through)"
            )
    for key in (f"{a}.kl_loss_coef", f"{alg}.kl_ctrl.kl_coef"):
        v = sel(cfg, key)
        if not is_number(v) or v < 0:
            errs.append(f"[{key}] {v!r} must be a number >= 0")
    kind = sel(cfg, f"{alg}.kl_ctrl.type")
    if not kl_controller_ok(kind):
        errs.append(f"[{alg}.kl_ctrl.type] {kind!r} is not a KL controller of veRL; fix: fixed or adaptive")
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


@rule("filter_metric")
def filter_metric(cfg: DictConfig) -> list[str]:
    metric = sel(cfg, "algorithm.filter_groups.metric")
    if metric is None or metric in filter_metrics():
        return []
    return [
        f"[algorithm.filter_groups.metric] {metric!r} is not a per-sample reward key; fix: one of {sorted(filter_metrics())}"
    ]


@rule("group_size")
def group_size(cfg: DictConfig) -> list[str]:
    n, est = sel(cfg, "actor_rollout_ref.rollout.n"), sel(cfg, "algorithm.adv_estimator")
    if est in group_estimators() and is_number(n) and n < 2:
        return [
            f"[actor_rollout_ref.rollout.n] {n} rollout per prompt: the group baseline of "
            f"'{est}' makes every advantage 0; fix: set it to 2 or more (e.g. 8)"
        ]
    return []


@rule("dynamic_sampling")
def dynamic_sampling(cfg: DictConfig) -> list[str]:
    if sel(cfg, "algorithm.filter_groups.enable") and sel(cfg, "actor_rollout_ref.rollout.n") < 2:
        return [
            "[algorithm.filter_groups.enable] dynamic sampling with rollout.n < 2: every group has zero "
            "variance and every group is dropped; fix: set actor_rollout_ref.rollout.n >= 2 or filter=none"
        ]
    return []


@rule("kl_placement")
def kl_placement(cfg: DictConfig) -> list[str]:
    a = cfg.actor_rollout_ref.actor
    errs = []
    if cfg.algorithm.use_kl_in_reward and a.use_kl_loss:
        errs.append(
            "[algorithm.use_kl_in_reward] KL is both in the reward and in the loss (applied twice); "
            "fix: pick one kl option (kl=in_reward or kl=k3_<coef>)"
        )
    if a.use_kl_loss and is_number(a.kl_loss_coef) and not a.kl_loss_coef > 0:
        errs.append(
            f"[actor_rollout_ref.actor.kl_loss_coef] use_kl_loss is on with coefficient "
            f"{a.kl_loss_coef}; fix: a positive coefficient, or kl=none"
        )
    if not a.use_kl_loss and is_number(a.kl_loss_coef) and a.kl_loss_coef > 0:
        errs.append(
            f"[actor_rollout_ref.actor.kl_loss_coef] {a.kl_loss_coef} has no effect because "
            "actor_rollout_ref.actor.use_kl_loss is false; fix: set use_kl_loss=true or the coefficient to 0"
        )
    return errs


@rule("overlong_buffer")
def overlong_buffer(cfg: DictConfig) -> list[str]:
    rk = cfg.reward.get("reward_kwargs") or {}
    ob = rk.get("overlong_buffer_cfg") or {}
    errs, max_len = [], cfg.data.max_response_length
    for key in ("len", "penalty_factor"):
        if key in ob and not (is_number(ob[key]) and ob[key] >= 0):
            errs.append(f"[reward.reward_kwargs.overlong_buffer_cfg.{key}] {ob[key]!r} must be a number >= 0")
    if not ob.get("enable", False):
        return errs
    if not 0 < ob.get("len", 0) <= max_len:
        errs.append(
            f"[reward.reward_kwargs.overlong_buffer_cfg.len] buffer {ob.get('len')} must be in (0, "
            f"data.max_response_length={max_len}]; fix: a buffer shorter than the max length "
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


@rule("ref_reset")
def ref_reset(cfg: DictConfig) -> list[str]:
    steps = cfg.rlvr.get("ref_reset_steps")
    if steps is None:
        return []
    if not isinstance(steps, int) or steps <= 0:
        return [f"[rlvr.ref_reset_steps] {steps!r} must be a positive integer or null"]
    if not (cfg.actor_rollout_ref.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward):
        return [
            "[rlvr.ref_reset_steps] a reference reset interval without a reference model (no KL "
            "in loss or reward); fix: choose a kl option or set rlvr.ref_reset_steps=null"
        ]
    return []


@rule("clip")
def clip(cfg: DictConfig) -> list[str]:
    a = cfg.actor_rollout_ref.actor
    errs = []
    for key in ("clip_ratio", "clip_ratio_low", "clip_ratio_high"):
        v = a.get(key)
        if is_number(v) and v <= 0:
            errs.append(f"[actor_rollout_ref.actor.{key}] {v} must be > 0")
    lo, hi = a.get("clip_ratio_low"), a.get("clip_ratio_high")
    if is_number(lo) and is_number(hi) and hi < lo and a.policy_loss.loss_mode in ("vanilla", "gspo"):
        errs.append(
            f"[actor_rollout_ref.actor.clip_ratio_high] ({hi}) < clip_ratio_low ({lo}): "
            "Clip-Higher wants high >= low; fix: swap them"
        )
    return errs


@rule("aggregation")
def aggregation(cfg: DictConfig) -> list[str]:
    a = cfg.actor_rollout_ref.actor
    if a.loss_agg_mode == "seq-mean-token-sum-norm" and a.get("loss_scale_factor") is None:
        return [
            "[actor_rollout_ref.actor.loss_scale_factor] seq-mean-token-sum-norm without a constant "
            "divides by the padded width of each micro-batch, which changes from batch to batch; "
            "fix: set it (agg=seq_mean_token_sum_norm sets ${data.max_response_length})"
        ]
    return []


@rule("batch_sizes")
def batch_sizes(cfg: DictConfig) -> list[str]:
    """Mini-batches (actor; critic when GAE trains one) divide the batch; a generation batch is positive."""
    tb = cfg.data.train_batch_size
    if not isinstance(tb, int) or tb <= 0:
        return [f"[data.train_batch_size] {tb!r} must be a positive number of prompts"]
    keys = ["actor_rollout_ref.actor.ppo_mini_batch_size"]
    if cfg.algorithm.adv_estimator == "gae":
        keys.append("critic.ppo_mini_batch_size")
    errs = [
        f"[{key}] {mb!r} prompts must divide data.train_batch_size ({tb}); fix: a divisor of {tb}, "
        f"e.g. ${{rlvr.div:${{data.train_batch_size}},<updates per rollout>}}"
        for key in keys
        if not isinstance(mb := sel(cfg, key), int) or mb <= 0 or mb > tb or tb % mb
    ]
    gb = cfg.data.get("gen_batch_size")
    if gb is not None and (not isinstance(gb, int) or gb <= 0):
        errs.append(
            f"[data.gen_batch_size] {gb!r} must be a positive number of prompts per generation batch; "
            "fix: null (= data.train_batch_size) or a relation, e.g. ${rlvr.mul:${data.train_batch_size},3}"
        )
    return errs


@rule("critic")
def critic(cfg: DictConfig) -> list[str]:
    if cfg.algorithm.adv_estimator == "gae" and cfg.critic.get("enable") is False:
        return ["[critic.enable] adv_estimator=gae needs a critic; fix: critic.enable=null or adv=grpo"]
    return []


@rule("legacy_reward_keys")
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
