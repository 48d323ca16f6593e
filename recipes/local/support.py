"""Which veRL config values the local engine implements; everything else is refused by name.

:func:`check_supported` raises ``ValueError`` naming the full key, the value and the fix for any
setting that would change the algorithm but that the engine does not run. Settings that only
change memory use or parallelism (micro-batch sizes, FSDP/offload, dynamic batch size, tensor
parallelism, vLLM knobs) do not change the math and are ignored on CPU by design.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

# advantage estimators that only need outcome rewards and group ids (veRL's registry names)
ADV_OK = (
    "gae",
    "grpo",
    "grpo_vectorized",
    "rloo",
    "rloo_vectorized",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "opo",
    "gpg",
    "grpo_passk",
)
ADV_GROUP = (
    "grpo",
    "grpo_vectorized",
    "rloo",
    "rloo_vectorized",
    "reinforce_plus_plus_baseline",
    "opo",
    "gpg",
    "grpo_passk",
)
LOSS_REFUSED = {
    "bypass_mode": "needs rollout-correction log-probs from a separate rollout engine",
    "reinforce": "needs rollout-correction weights",
}
KL_TYPES = ("kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3")
REWARD_MANAGERS = ("naive", "dapo")


def _fail(key: str, value: Any, why: str, fix: str) -> None:
    raise ValueError(f"[engine=local] {key}={value!r}: {why} (fix: {fix})")


def _kl_type_ok(name: str) -> bool:
    return str(name).removesuffix("+") in KL_TYPES


def check_supported(cfg: DictConfig) -> None:
    """Raise ``ValueError`` for any algorithm-changing value the local engine does not implement."""
    sel = lambda key, default=None: OmegaConf.select(cfg, key, default=default)  # noqa: E731
    algo = "algorithm"
    est = str(sel(f"{algo}.adv_estimator"))
    if est == "gae" and int(sel("critic.model.lora_rank", 0) or 0) > 0:
        _fail(
            "critic.model.lora_rank",
            sel("critic.model.lora_rank"),
            "critic LoRA is not implemented locally",
            "0",
        )
    if est == "gae" and sel("critic.enable") is False:
        _fail("critic.enable", False, "gae needs a critic", "set critic.enable=null/true or pick adv=grpo")
    if est not in ADV_OK:
        _fail(
            f"{algo}.adv_estimator",
            est,
            f"not supported locally (supported: {', '.join(ADV_OK)})",
            "pick one of the supported estimators or use engine=verl",
        )
    n = int(sel("actor_rollout_ref.rollout.n", 1))
    if est in ADV_GROUP and n < 2:
        _fail(
            "actor_rollout_ref.rollout.n",
            n,
            f"{est} needs groups of at least 2 responses per prompt",
            "set actor_rollout_ref.rollout.n >= 2",
        )
    if sel(f"{algo}.use_pf_ppo", False):
        _fail(f"{algo}.use_pf_ppo", True, "PF-PPO reweighting is not implemented locally", "set it to false")
    rc = sel(f"{algo}.rollout_correction") or {}
    for k in ("rollout_is", "rollout_rs"):
        if rc.get(k) is not None:
            _fail(
                f"{algo}.rollout_correction.{k}",
                rc.get(k),
                "the local engine samples with the policy itself, so there is no rollout/training mismatch to correct",
                "set it to null",
            )
    if rc.get("bypass_mode", False):
        _fail(f"{algo}.rollout_correction.bypass_mode", True, "not implemented locally", "set it to false")
    if sel(f"{algo}.use_kl_in_reward", False):
        kp = str(sel(f"{algo}.kl_penalty"))
        if not _kl_type_ok(kp):
            _fail(
                f"{algo}.kl_penalty",
                kp,
                f"not a per-token estimator the engine can compute ({', '.join(KL_TYPES)})",
                "use kl, abs, mse or low_var_kl",
            )
        ctl = str(sel(f"{algo}.kl_ctrl.type", "fixed"))
        if ctl not in ("fixed", "adaptive"):
            _fail(f"{algo}.kl_ctrl.type", ctl, "unknown KL controller", "fixed or adaptive")
    fg = sel(f"{algo}.filter_groups")
    if fg is not None and fg.get("enable", False):
        if int(fg.get("max_num_gen_batches", 0)) < 0:
            _fail(
                f"{algo}.filter_groups.max_num_gen_batches",
                fg.max_num_gen_batches,
                "must be >= 0",
                "0 means unlimited, k > 0 fails after k generation batches",
            )

    actor = "actor_rollout_ref.actor"
    mode = str(sel(f"{actor}.policy_loss.loss_mode", "vanilla"))
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY

    if mode in LOSS_REFUSED:
        _fail(
            f"{actor}.policy_loss.loss_mode", mode, LOSS_REFUSED[mode], "use vanilla, gspo, cispo, sapo, ..."
        )
    if mode not in POLICY_LOSS_REGISTRY:
        _fail(
            f"{actor}.policy_loss.loss_mode",
            mode,
            f"not in veRL's registry ({', '.join(sorted(POLICY_LOSS_REGISTRY))})",
            "fix the spelling or register the loss with @register_policy_loss",
        )
    if sel(f"{actor}.use_kl_loss", False) and not _kl_type_ok(str(sel(f"{actor}.kl_loss_type"))):
        _fail(
            f"{actor}.kl_loss_type",
            sel(f"{actor}.kl_loss_type"),
            "not supported by core_algos.kl_penalty",
            f"one of {', '.join(KL_TYPES)} (optionally with '+')",
        )
    if sel(f"{actor}.shuffle", False):
        _fail(f"{actor}.shuffle", True, "mini-batch shuffling is not implemented locally", "set it to false")
    if sel(f"{actor}.calculate_sum_pi_squared", False):
        _fail(
            f"{actor}.calculate_sum_pi_squared",
            True,
            "only needed by optimal-token-baseline estimators",
            "set it to false",
        )
    tbs = int(sel("data.train_batch_size"))
    mbs = int(sel(f"{actor}.ppo_mini_batch_size"))
    if mbs <= 0 or tbs % mbs:
        _fail(
            f"{actor}.ppo_mini_batch_size",
            mbs,
            f"must divide data.train_batch_size ({tbs})",
            "pick a divisor of the prompt batch",
        )
    if int(sel(f"{actor}.ppo_epochs", 1)) < 1:
        _fail(f"{actor}.ppo_epochs", sel(f"{actor}.ppo_epochs"), "must be >= 1", "set it to 1 or more")
    optim = f"{actor}.optim"
    if str(sel(f"{optim}.optimizer", "AdamW")) not in ("AdamW", "Adam"):
        _fail(
            f"{optim}.optimizer", sel(f"{optim}.optimizer"), "only torch AdamW/Adam are implemented", "AdamW"
        )
    if sel(f"{optim}.override_optimizer_config") is not None:
        _fail(
            f"{optim}.override_optimizer_config",
            sel(f"{optim}.override_optimizer_config"),
            "not implemented locally",
            "set it to null",
        )
    sched = str(sel(f"{optim}.lr_scheduler_type", "constant"))
    if sched not in ("constant", "cosine"):
        _fail(
            f"{optim}.lr_scheduler_type",
            sched,
            "veRL's FSDP engine supports constant and cosine",
            "one of those",
        )
    if sel(f"{optim}.warmup_style") is not None:
        _fail(
            f"{optim}.warmup_style",
            sel(f"{optim}.warmup_style"),
            "deprecated in veRL",
            f"use {optim}.lr_scheduler_type",
        )
    if int(sel("actor_rollout_ref.model.lora_rank", 0) or 0) > 0:
        _fail(
            "actor_rollout_ref.model.lora_rank",
            sel("actor_rollout_ref.model.lora_rank"),
            "LoRA is not implemented locally",
            "set it to 0",
        )

    ro = "actor_rollout_ref.rollout"
    if not sel(f"{ro}.do_sample", True):
        _fail(
            f"{ro}.do_sample",
            False,
            "RL rollouts must be sampled",
            "set it to true (greedy is for val_kwargs)",
        )
    if float(sel(f"{ro}.temperature", 1.0)) <= 0:
        _fail(f"{ro}.temperature", sel(f"{ro}.temperature"), "must be > 0 for sampled rollouts", "e.g. 1.0")
    if sel(f"{ro}.multi_turn.enable", False):
        _fail(
            f"{ro}.multi_turn.enable", True, "multi-turn / tool rollouts are not implemented locally", "false"
        )

    mgr = str(sel("reward.reward_manager.name", "naive"))
    if str(sel("reward.reward_manager.source", "register")) != "register" or mgr not in REWARD_MANAGERS:
        _fail(
            "reward.reward_manager.name",
            mgr,
            f"the local engine implements {', '.join(REWARD_MANAGERS)}",
            "use length=none (naive) or length=dapo_overlong (dapo)",
        )
    if sel("reward.reward_model.enable", False):
        _fail("reward.reward_model.enable", True, "model-based rewards are not implemented locally", "false")
    if sel("distillation.enabled", False):
        _fail("distillation.enabled", True, "distillation is not implemented locally", "false")
    if mgr == "dapo":
        ob = sel("reward.reward_kwargs.overlong_buffer_cfg")
        if ob is not None and ob.get("enable", False):
            mx = sel("reward.reward_kwargs.max_resp_len")
            if mx is None or int(ob.len) <= 0 or int(mx) < int(ob.len):
                _fail(
                    "reward.reward_kwargs.overlong_buffer_cfg.len",
                    ob.get("len"),
                    f"must be in (0, reward.reward_kwargs.max_resp_len={mx}]",
                    "shrink the buffer or raise max_resp_len",
                )
    ref_reset = sel("rlvr.ref_reset_steps")
    if ref_reset is not None and int(ref_reset) <= 0:
        _fail("rlvr.ref_reset_steps", ref_reset, "must be a positive step count or null", "null or N > 0")
