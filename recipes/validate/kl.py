"""Rules on KL regularisation (both engines).

The KL estimator, coefficient and controller must be ones veRL computes (checked whether or not
KL is on, so ``kl_loss_coef=-1`` or ``kl_loss_type=k9`` fail on a recipe without KL); KL goes in
the reward or in the loss, not both, with a coefficient that has an effect; a reference reset
interval needs a reference model.
"""

from __future__ import annotations

from omegaconf import DictConfig

from recipes.validate.registry import is_number, rule, sel
from recipes.validate.verl_names import kl_controller_ok, kl_estimator_ok


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
    if int(sel(cfg, "actor_rollout_ref.model.lora_rank") or 0) > 0:
        # verl.model_merger writes a LoRA checkpoint as the base model plus lora_adapter/ beside it: the
        # next segment would start from the base, and the policy trained so far would be lost
        return [
            "[rlvr.ref_reset_steps] a reference reset with LoRA (actor_rollout_ref.model.lora_rank>0): each "
            "segment starts from verl.model_merger's output, which keeps the adapter apart from the base "
            "weights, so the trained policy would be dropped; fix: rlvr.ref_reset_steps=null, or lora_rank=0"
        ]
    return []
