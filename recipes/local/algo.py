"""The RL math of the local engine, delegated to veRL: rewards, group filter, advantages, loss.

- :func:`score_rollout`: decodes responses like veRL's reward managers (``skip_special_tokens``),
  calls the configured reward function (loaded with veRL's ``get_custom_reward_fn``, so
  ``reward.custom_reward_function.reward_kwargs`` such as ``format_weight`` are bound the same
  way) and, for ``reward.reward_manager.name == dapo``, adds DAPO's overlong penalty
  (``rewards.shaping.overlong_penalty``, veRL's formula) from ``reward.reward_kwargs``. The score
  sits on the last response token, as veRL's managers put it.
- :func:`keep_groups`: DAPO dynamic sampling's group filter (verl-recipe ``dapo``): keep groups
  whose ``algorithm.filter_groups.metric`` has non-zero std (or a single member).
- :func:`compute_advantages`: veRL's ``ray_trainer.compute_advantage`` on a ``DataProto`` (which
  dispatches to ``core_algos.get_adv_estimator_fn``), after ``apply_kl_penalty`` when
  ``algorithm.use_kl_in_reward``.
- :func:`policy_loss`: veRL's ``workers/utils/losses.ppo_loss`` steps with the registered
  ``get_policy_loss_fn(loss_mode)``, ``agg_loss`` and ``kl_penalty`` on padded tensors.
- :func:`rollout_vs_train`: veRL's rollout-vs-training log-prob metrics; :func:`optimizer`: veRL's
  own ``build_optimizer`` (torch AdamW from lr, weight_decay, betas, then
  ``optim.override_optimizer_config``, e.g. CISPO's ``{eps: 1e-15}``) with veRL's lr schedules,
  for the actor and the critic (both AdamW fused under ``local.fast``).
With ``reward.reward_model.enable`` a learned reward model's score replaces the verifier's
(:mod:`recipes.local.rm_reward`; the verifier's ``acc`` stays the gold metric).
Not covered: the critic's value loss (``critic.py``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from verl import DataProto
from verl.trainer.ppo.core_algos import agg_loss, get_policy_loss_fn, kl_penalty
from verl.trainer.ppo.ray_trainer import apply_kl_penalty, compute_advantage
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.debug.metrics import calculate_debug_metrics
from verl.utils.torch_functional import get_constant_schedule_with_warmup, get_cosine_schedule_with_warmup
from verl.workers.config.optimizer import build_optimizer

import recipes.shuffled_rewards  # noqa: F401 - registers the project's estimator (grpo_shuffled) with veRL
from core.data import Prompt
from core.sampler import Rollout
from core.sampling import grade
from recipes.local import rm_reward
from rewards.shaping import overlong_penalty


def optimizer(
    params: Any, o: DictConfig, total_steps: int, fused: bool = False
) -> tuple[torch.optim.Optimizer, Any]:
    """veRL's optimizer and lr schedule (constant or cosine, with warmup) from an ``optim`` section.

    The optimizer is built by veRL's ``build_optimizer`` from the section as veRL's dataclass
    (``FSDPOptimizerConfig``), so ``override_optimizer_config`` reaches torch exactly as on GPUs.
    ``fused`` (the engine's ``local.fast``, not a recipe value) asks torch's Adam/AdamW for its
    fused CPU kernel -- the same update up to float rounding in one call instead of a loop over
    parameters, and the same floats on every x86-64 processor (the unfused one's square root is
    oneMKL's, rounded per processor: :func:`core.numerics.adamw`) -- unless the recipe's overrides
    already choose an implementation.
    """
    if fused and str(o.optimizer_impl) == "torch.optim" and str(o.optimizer) in ("Adam", "AdamW"):
        over = dict(o.get("override_optimizer_config") or {})
        if not {"fused", "foreach"} & set(over):
            o = OmegaConf.create(OmegaConf.to_container(o, resolve=True))  # a copy, not in struct mode
            o.override_optimizer_config = {**over, "fused": True}
    opt = build_optimizer(params, omega_conf_to_dataclass(o))
    warm = int(o.lr_warmup_steps)
    if warm <= 0:
        warm = int(float(o.lr_warmup_steps_ratio) * total_steps)
    if str(o.lr_scheduler_type) == "cosine":
        return opt, get_cosine_schedule_with_warmup(
            opt, warm, total_steps, min_lr_ratio=o.min_lr_ratio, num_cycles=o.num_cycles
        )
    return opt, get_constant_schedule_with_warmup(opt, warm)


def actor_config(cfg: DictConfig) -> Any:
    """``verl.workers.config.ActorConfig`` from ``actor_rollout_ref.actor``, as validated: its
    defaults are the YAML's (``conf/config.yaml``'s micro-batch, ``agg=seq_mean_token_sum_norm``'s
    ``loss_scale_factor``), and the rules refuse the configs that would leave them unset."""
    return omega_conf_to_dataclass(
        OmegaConf.create(OmegaConf.to_container(cfg.actor_rollout_ref.actor, resolve=True))
    )


def score_rollout(
    cfg: DictConfig, reward_fn: Any, tokenizer: Any, prompts: list[Prompt], rollout: Rollout, n: int
) -> tuple[torch.Tensor, dict[str, list[Any]], list[str]]:
    """Token-level scores (B, R) plus the reward function's extra keys and the decoded texts."""
    B, R = rollout.responses.shape
    lengths = rollout.response_lengths.tolist()
    manager = str(OmegaConf.select(cfg, "reward.reward_manager.name"))
    kw = OmegaConf.select(cfg, "reward.reward_kwargs", default=None) or {}
    over = kw.get("overlong_buffer_cfg") if manager == "dapo" else None
    use_over = bool(over is not None and over.enable)
    scores = torch.zeros((B, R), dtype=torch.float32)
    extra: dict[str, list[Any]] = defaultdict(list)
    texts = tokenizer.batch_decode(
        [rollout.responses[i, : lengths[i]].tolist() for i in range(B)], skip_special_tokens=True
    )
    for i in range(B):
        p = prompts[i // n]
        text = texts[i]
        score, _, keys = grade(
            reward_fn(
                data_source=p.data_source,
                solution_str=text,
                ground_truth=p.ground_truth,
                extra_info=p.extra_info,
            )
        )
        for k, v in keys.items():
            extra[k].append(v)
        if use_over:
            pen = overlong_penalty(
                lengths[i], int(kw["max_resp_len"]), int(over["len"]), float(over["penalty_factor"])
            )
            score += pen
            if over.log:
                extra["overlong_reward"].append(pen)
                extra["overlong"].append(pen < 0)
        if lengths[i] > 0:
            scores[i, lengths[i] - 1] = score
    if rm_reward.enabled(cfg):  # a learned reward replaces the verifier's score; acc stays the gold
        scores, extra = rm_reward.rescore(cfg, tokenizer, prompts, rollout, n, texts, scores, dict(extra))
    return scores, dict(extra), texts


def rollout_vs_train(
    rollout_lp: torch.Tensor, train_lp: torch.Tensor, mask: torch.Tensor, responses: torch.Tensor
) -> dict[str, float]:
    """veRL's rollout-vs-training log-prob metrics (``training/rollout_probs_diff_*``, pearson r).

    Computed by veRL's own ``calculate_debug_metrics`` on the step's first mini-batch, whose training
    forward runs before any update of the step -- so the two log-probs should agree up to numerics
    (the sampler's KV-cache path vs the full-sequence training forward). ``make diagnose`` check 3
    reads them.
    """
    batch = DataProto.from_dict(
        tensors={
            "rollout_log_probs": rollout_lp.float(),
            "old_log_probs": train_lp.float(),
            "response_mask": mask.long(),
            "responses": responses,
        }
    )
    return {k: float(v) for k, v in calculate_debug_metrics(batch).items()}


def group_metric(metric: str, scores: torch.Tensor, extra: dict[str, list[Any]]) -> np.ndarray:
    """Per-sample values of ``algorithm.filter_groups.metric`` (as verl-recipe dapo reads them)."""
    if metric in ("seq_final_reward", "seq_reward", "score"):
        return scores.sum(-1).numpy()
    if metric not in extra:
        raise ValueError(
            f"[algorithm.filter_groups] metric={metric!r} is not returned by the reward function "
            f"(fix: one of {sorted(['seq_reward', 'seq_final_reward', *extra])})"
        )
    return np.asarray([float(v) for v in extra[metric]], dtype=np.float64)


def keep_groups(values: np.ndarray, n: int) -> tuple[list[int], int]:
    """Indices of groups with non-zero std of ``values`` (or size 1), and the zero-variance count."""
    groups = values.reshape(-1, n)
    kept = [g for g in range(groups.shape[0]) if n == 1 or np.std(groups[g]) > 0]
    return kept, groups.shape[0] - len(kept)


def make_batch(
    rollout: Rollout,
    scores: torch.Tensor,
    uids: list[str],
    ref_log_prob: torch.Tensor | None = None,
    values: torch.Tensor | None = None,
) -> Any:
    """A veRL ``DataProto`` with the keys veRL's trainer has at advantage time."""
    tensors = {
        "prompts": rollout.prompts,
        "responses": rollout.responses,
        "attention_mask": torch.cat([rollout.prompt_mask, rollout.response_mask], dim=1),
        "response_mask": rollout.response_mask.float(),
        "old_log_probs": rollout.old_log_probs,
        "token_level_scores": scores,
    }
    if ref_log_prob is not None:
        tensors["ref_log_prob"] = ref_log_prob
    if values is not None:
        tensors["values"] = values
    return DataProto.from_dict(tensors=tensors, non_tensors={"uid": np.asarray(uids, dtype=object)})


def compute_advantages(
    cfg: DictConfig, batch: Any, kl_ctrl: Any | None = None
) -> tuple[Any, dict[str, float]]:
    """KL-in-reward (if configured) then veRL's ``compute_advantage``; returns the batch and metrics."""
    algo = cfg.algorithm
    metrics: dict[str, float] = {}
    if algo.use_kl_in_reward:
        batch, metrics = apply_kl_penalty(batch, kl_ctrl=kl_ctrl, kl_penalty=algo.kl_penalty)
    else:
        batch.batch["token_level_rewards"] = batch.batch["token_level_scores"]
    batch = compute_advantage(
        batch,
        adv_estimator=algo.adv_estimator,
        gamma=algo.gamma,
        lam=algo.lam,
        num_repeat=int(cfg.actor_rollout_ref.rollout.n),
        norm_adv_by_std_in_grpo=bool(algo.norm_adv_by_std_in_grpo),
        config=algo,
    )
    return batch, metrics


def policy_loss(
    actor_cfg: Any,
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    entropy: torch.Tensor | None = None,
    ref_log_prob: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The actor loss of one mini-batch, as ``verl.workers.utils.losses.ppo_loss`` composes it.

    ``global_batch_info`` covers the whole mini-batch (one micro-batch, dp_size 1), so
    ``agg_loss`` normalises exactly as veRL does over a global mini-batch.
    """
    mask = response_mask.bool()
    actor_cfg.global_batch_info.update(
        dp_size=1,
        batch_num_tokens=int(mask.sum()),
        global_batch_size=int((mask.sum(-1) > 0).sum()),
        loss_scale_factor=actor_cfg.loss_scale_factor,
    )
    mode = actor_cfg.loss_agg_mode
    fn = get_policy_loss_fn(actor_cfg.policy_loss.loss_mode)
    pg_loss, pg_metrics = fn(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=mask,
        loss_agg_mode=mode,
        config=actor_cfg,
        rollout_is_weights=None,
    )
    metrics = dict(pg_metrics)
    metrics["actor/pg_loss"] = float(pg_loss.detach())
    loss = pg_loss
    if entropy is not None and actor_cfg.entropy_coeff != 0:
        ent_loss = agg_loss(
            loss_mat=entropy, loss_mask=mask, loss_agg_mode=mode, **actor_cfg.global_batch_info
        )
        loss = loss - actor_cfg.entropy_coeff * ent_loss
        metrics["actor/entropy_loss"] = float(ent_loss.detach())
    if actor_cfg.use_kl_loss:
        if ref_log_prob is None:
            raise ValueError("[actor_rollout_ref.actor] use_kl_loss=true needs reference log-probs")
        kld = kl_penalty(logprob=log_prob, ref_logprob=ref_log_prob, kl_penalty=actor_cfg.kl_loss_type)
        kl_loss = agg_loss(loss_mat=kld, loss_mask=mask, loss_agg_mode=mode, **actor_cfg.global_batch_info)
        loss = loss + kl_loss * actor_cfg.kl_loss_coef
        metrics["actor/kl_loss"] = float(kl_loss.detach())
        metrics["actor/kl_coef"] = float(actor_cfg.kl_loss_coef)
    return loss, metrics
