"""Rules on the policy loss, its clipping and its aggregation (both engines).

The clip ratios are positive, and Clip-Higher wants high >= low; ``seq-mean-token-sum-norm``
needs a constant divisor. A loss variant is defined as much by its clip range as by its formula: GSPO clips a
length-normalised *sequence* ratio in a range a thousand times narrower than PPO's token range;
CISPO clips an importance *weight* whose lower bound the method leaves open. ``loss=gspo`` and
``loss=cispo`` pick their clip option (``conf/loss``), but a recipe or command line that names
another clip option wins over that default, so these rules reject the combinations that silently
turn a variant into something else. Each error names the clip key, the loss key and the fix. Also
here: gradient-clipping keys veRL 0.9.1 does not read.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig

from recipes.validate.registry import is_number, rule, sel

A = "actor_rollout_ref.actor"
#: Below this a clip range is sequence-sized (GSPO: 3e-4/4e-4), above it token-sized (PPO: 0.2).
SEQUENCE_RANGE = 0.01


def bounds(actor: Any) -> tuple[Any, Any]:
    """(low, high) as veRL's losses read them: ``clip_ratio_low/high``, else ``clip_ratio``."""
    lo, hi = actor.get("clip_ratio_low"), actor.get("clip_ratio_high")
    return (actor.get("clip_ratio") if lo is None else lo), (actor.get("clip_ratio") if hi is None else hi)


def _mode_key(mode: str) -> str:
    return f"{A}.policy_loss.loss_mode={mode}"


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


@rule("loss_clip_range")
def loss_clip_range(cfg: DictConfig) -> list[str]:
    """GSPO needs a sequence-sized range, CISPO no lower bound, the token loss a token-sized range."""
    actor = cfg.actor_rollout_ref.actor
    mode, (lo, hi) = sel(cfg, f"{A}.policy_loss.loss_mode"), bounds(actor)
    if not (is_number(lo) and is_number(hi)):
        return []
    if mode == "gspo" and max(lo, hi) >= SEQUENCE_RANGE:
        key = "clip_ratio_high" if hi >= SEQUENCE_RANGE else "clip_ratio_low"
        return [
            f"[{A}.{key}] clip_ratio_low/clip_ratio_high {lo:g}/{hi:g} with {_mode_key(mode)}: GSPO clips a length-normalised "
            "sequence ratio whose published range is 3e-4/4e-4 (arXiv:2507.18071 §5.1); a token-level "
            "range leaves it unclipped; fix: clip=gspo (drop the clip override) or loss=vanilla"
        ]
    if mode == "cispo" and lo < 1.0:
        return [
            f"[{A}.clip_ratio_low] {lo:g} with {_mode_key(mode)} bounds the importance weight below at "
            f"1 - {lo:g} = {1 - lo:g}; MiniMax-M1 §3.1 (arXiv:2506.13585) imposes no lower bound on it "
            "(clip_ratio_low >= 1 puts the bound at or below 0); fix: clip=cispo"
        ]
    if mode == "vanilla" and max(lo, hi) < SEQUENCE_RANGE:
        return [
            f"[{A}.clip_ratio_low] clip_ratio_low/clip_ratio_high {lo:g}/{hi:g} with {_mode_key(mode)}: a GSPO-size range on a "
            "token-level ratio clips nearly every token after the first update, so later mini-batches "
            "barely learn; fix: clip=ppo (or clip_higher) or loss=gspo"
        ]
    return []


@rule("grad_clip_key")
def grad_clip_key(cfg: DictConfig) -> list[str]:
    """veRL 0.9.1's engines clip gradients with ``<role>.optim.clip_grad``; ``<role>.grad_clip`` is not read."""
    errs = []
    for role in (A, "critic"):
        old, new = sel(cfg, f"{role}.grad_clip"), sel(cfg, f"{role}.optim.clip_grad")
        if is_number(old) and is_number(new) and old != new:
            errs.append(
                f"[{role}.grad_clip] {old:g} is not read by veRL 0.9.1, whose engine clips gradients at "
                f"{role}.optim.clip_grad ({new:g}); fix: set {role}.optim.clip_grad={old:g} and leave "
                f"{role}.grad_clip at {new:g}"
            )
    return errs
