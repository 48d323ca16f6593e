"""The local engine's refusals, registered for ``engine=local`` only.

A setting that would change the algorithm but that the local engine does not run is refused by
its full key, value and fix, never ignored. Settings that only change memory use or parallelism
(micro-batch sizes, FSDP/offload, dynamic batch size, tensor parallelism, vLLM knobs) do not
change the math and are ignored on CPU by design. Which advantage estimators run is read from
veRL's registry: every estimator except those whose function takes data the engine does not
produce (reward baselines, per-token old log-probs, sum of squared probabilities, the raw batch).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from recipes.validate.registry import rule, sel
from recipes.validate.verl_names import adv_estimators

#: Estimator arguments only veRL's trainer fills in (the local engine has no such data).
NEEDS_DATA = frozenset({"reward_baselines", "old_log_probs", "sum_pi_squared", "non_tensor_batch", "batch"})
#: Policy losses the engine cannot feed.
LOSS_REFUSED = {
    "bypass_mode": "needs rollout-correction log-probs from a separate rollout engine",
    "reinforce": "needs rollout-correction weights",
}
#: Keys of ``optim.override_optimizer_config`` the engine passes to torch's AdamW (veRL's
#: ``build_optimizer`` updates the optimizer's arguments with the whole mapping, after lr,
#: weight_decay and betas, so these three are the ones that mean the same on both engines).
OPTIMIZER_OVERRIDES = ("eps", "betas", "weight_decay")
#: The reward managers the engine implements (naive: the score; dapo: + the overlong penalty).
REWARD_MANAGERS = ("naive", "dapo")


def _off(v: Any) -> bool:
    return not v


def _null(v: Any) -> bool:
    return v is None


#: (key, supported(value), why not otherwise, fix) -- each checked whatever else is configured.
SETTINGS: list[tuple[str, Callable[[Any], bool], str, str]] = [
    ("algorithm.use_pf_ppo", _off, "PF-PPO reweighting is not implemented locally", "set it to false"),
    (
        "algorithm.rollout_correction.rollout_is",
        _null,
        "the local engine samples with the policy itself, so there is no rollout/training mismatch to correct",
        "set it to null",
    ),
    (
        "algorithm.rollout_correction.rollout_rs",
        _null,
        "the local engine samples with the policy itself, so there is no rollout/training mismatch to correct",
        "set it to null",
    ),
    ("algorithm.rollout_correction.bypass_mode", _off, "not implemented locally", "set it to false"),
    (
        "actor_rollout_ref.actor.shuffle",
        _off,
        "mini-batch shuffling is not implemented locally",
        "set it to false",
    ),
    (
        "actor_rollout_ref.actor.calculate_sum_pi_squared",
        _off,
        "only needed by optimal-token-baseline estimators",
        "set it to false",
    ),
    *(
        row
        for role in ("actor_rollout_ref.actor", "critic")
        for row in (
            (
                f"{role}.optim.optimizer",
                lambda v: v in (None, "AdamW", "Adam"),
                "only torch AdamW/Adam are implemented",
                "AdamW",
            ),
            (
                f"{role}.optim.optimizer_impl",
                lambda v: v in (None, "torch.optim"),
                "only torch.optim optimizers are implemented",
                "torch.optim",
            ),
            (
                f"{role}.optim.override_optimizer_config",
                lambda v: v is None or set(v) <= set(OPTIMIZER_OVERRIDES),
                f"only {', '.join(OPTIMIZER_OVERRIDES)} are passed to the optimizer locally",
                f"keep {{{', '.join(f'{k}: ...' for k in OPTIMIZER_OVERRIDES)}}} only, or null",
            ),
            (
                f"{role}.optim.lr_scheduler_type",
                lambda v: v in (None, "constant", "cosine"),
                "veRL's FSDP engine supports constant and cosine",
                "one of those",
            ),
            (
                f"{role}.optim.warmup_style",
                _null,
                "deprecated in veRL",
                f"use {role}.optim.lr_scheduler_type",
            ),
        )
    ),
    ("critic.shuffle", _off, "mini-batch shuffling is not implemented locally", "set it to false"),
    ("actor_rollout_ref.model.lora_rank", _off, "LoRA is not implemented locally", "set it to 0"),
    (
        "actor_rollout_ref.rollout.do_sample",
        lambda v: v is not False,
        "RL rollouts must be sampled",
        "set it to true (greedy is for val_kwargs)",
    ),
    (
        "actor_rollout_ref.rollout.multi_turn.enable",
        _off,
        "multi-turn / tool rollouts are not implemented locally",
        "false",
    ),
]


def _refuse(key: str, value: Any, why: str, fix: str) -> str:
    return f"[{key}] {value!r}: {why} on engine=local; fix: {fix}"


@functools.cache
def local_estimators() -> tuple[str, ...]:
    """veRL's estimators whose inputs the local engine produces (outcome rewards, group ids, values)."""
    return tuple(
        sorted(
            n for n, fn in adv_estimators().items() if not NEEDS_DATA & set(inspect.signature(fn).parameters)
        )
    )


@rule("local_settings", engines=("local",))
def local_settings(cfg: DictConfig) -> list[str]:
    return [_refuse(key, sel(cfg, key), why, fix) for key, ok, why, fix in SETTINGS if not ok(sel(cfg, key))]


@rule("local_algorithm", engines=("local",))
def local_algorithm(cfg: DictConfig) -> list[str]:
    est, mode = sel(cfg, "algorithm.adv_estimator"), sel(cfg, "actor_rollout_ref.actor.policy_loss.loss_mode")
    errs = []
    if est in adv_estimators() and est not in local_estimators():
        errs.append(
            _refuse(
                "algorithm.adv_estimator",
                est,
                f"not supported locally (supported: {', '.join(local_estimators())})",
                "pick one of the supported estimators or use engine=verl",
            )
        )
    if mode in LOSS_REFUSED:
        errs.append(
            _refuse(
                "actor_rollout_ref.actor.policy_loss.loss_mode",
                mode,
                LOSS_REFUSED[mode],
                "use vanilla, gspo, cispo, sapo, ...",
            )
        )
    if est == "gae" and (sel(cfg, "critic.model.lora_rank") or 0) > 0:
        errs.append(
            _refuse(
                "critic.model.lora_rank",
                sel(cfg, "critic.model.lora_rank"),
                "critic LoRA is not implemented locally",
                "0",
            )
        )
    return errs


@rule("local_reward", engines=("local",))
def local_reward(cfg: DictConfig) -> list[str]:
    mgr, source = sel(cfg, "reward.reward_manager.name"), sel(cfg, "reward.reward_manager.source")
    if source != "register" or mgr not in REWARD_MANAGERS:
        return [
            _refuse(
                "reward.reward_manager.name",
                mgr,
                f"the local engine implements {', '.join(REWARD_MANAGERS)}",
                "use length=none (naive) or length=dapo_overlong (dapo)",
            )
        ]
    return []
