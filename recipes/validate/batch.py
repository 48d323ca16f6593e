"""Rules on batch sizes and rollout groups (both engines).

Mini-batches (the actor's; the critic's when GAE trains one) divide the batch, a generation batch
is positive; a group baseline needs two or more rollouts per prompt, and so does dynamic sampling,
whose filter must read a per-sample reward key. The sizes that only a GPU run splits (over ranks,
micro-batches, token budgets) are :mod:`recipes.validate.gpu`'s.
"""

from __future__ import annotations

from omegaconf import DictConfig

from recipes.validate.registry import is_number, rule, sel
from recipes.validate.verl_names import filter_metrics, group_estimators


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


@rule("filter_metric")
def filter_metric(cfg: DictConfig) -> list[str]:
    metric = sel(cfg, "algorithm.filter_groups.metric")
    if metric is None or metric in filter_metrics():
        return []
    return [
        f"[algorithm.filter_groups.metric] {metric!r} is not a per-sample reward key; fix: one of {sorted(filter_metrics())}"
    ]
