"""On-policy distillation in the local engine (``distillation.enabled``; ``recipe=opd``), with veRL's losses.

The student samples as in any RL step; a fixed teacher (``distillation.teacher_models.teacher_model.model_path``,
an HF causal LM with the student's vocabulary) scores the sampled tokens; the loss is veRL's own
``verl.trainer.distillation.losses.distillation_loss`` -- the registered loss of
``distillation.distillation_loss.loss_mode`` (a single-sample KL estimator: ``k1``, ``k3``,
``low_var_kl``...), either backpropagated as a supervised loss or, with ``use_policy_gradient``,
used as a per-token advantage ``-(log p_student - log p_teacher)`` in veRL's clipped policy
loss (Thinking Machines' on-policy distillation). It is combined with the task policy loss as
veRL's ``distillation_ppo_loss`` combines them (``use_task_rewards``, ``distillation_loss_coef``).

The tensors are laid out as veRL's actor hands them to that function (no-padding sequences,
log-probs shifted to the position that predicts each token, the teacher's log-probs laid out the
same way, as veRL's vLLM teacher returns them), so the loss is veRL's number, not a re-derivation
(``tests/local/test_distill.py`` compares it with ``distillation_ppo_loss`` on fixed batches).
The teacher scores at temperature 1 (veRL: the teacher's temperature has no effect on its log-probs).
Not covered: top-k losses (``forward_kl_topk``: veRL computes them inside its logits processor), multi-teacher routing.
"""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from core import model as models
from core.sampler import Rollout, response_logprobs
from recipes.validate.models import TEACHER_KEY


def flat_layout(values: torch.Tensor, prompt_mask: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """(B, R) response values as veRL's no-padding model output: one row per sequence (prompt +
    response tokens, no padding), the value of response token j at the row's position ``P + j - 1``.

    >>> flat_layout(torch.tensor([[5.0, 6.0]]), torch.tensor([[0, 1, 1]]), torch.tensor([[1, 1]])).tolist()
    [0.0, 5.0, 6.0, 0.0]
    """
    parts = []
    for i in range(values.shape[0]):
        p, r = int(prompt_mask[i].sum()), int(response_mask[i].sum())
        z = values.new_zeros(p - 1)
        parts.append(torch.cat([z, values[i, :r], values.new_zeros(1)]))
    return torch.cat(parts)


def _nested(flat: torch.Tensor, prompt_mask: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """A flat (tokens, ...) tensor as a jagged nested tensor with one sequence per row (veRL's layout)."""
    lens = (prompt_mask.sum(-1) + response_mask.sum(-1)).tolist()
    return torch.nested.as_nested_tensor(list(torch.split(flat, lens)), layout=torch.jagged)


def verl_batch(
    prompts: torch.Tensor,
    prompt_mask: torch.Tensor,
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    old_log_prob: torch.Tensor,
    teacher_log_prob: torch.Tensor,
) -> Any:
    """The micro-batch ``TensorDict`` veRL's distillation loss reads (one device, the whole mini-batch)."""
    from tensordict import TensorDict  # with veRL: only the distillation path needs it
    from verl.utils import tensordict_utils as tu  # with veRL: only the distillation path needs it

    td = TensorDict(
        {
            "prompts": prompts,
            "responses": responses,
            "attention_mask": torch.cat([prompt_mask, response_mask], 1),
            "response_mask": response_mask,
            "old_log_probs": old_log_prob,
            "teacher_logprobs": _nested(
                flat_layout(teacher_log_prob, prompt_mask, response_mask)[:, None], prompt_mask, response_mask
            ),
        },
        batch_size=[prompts.shape[0]],
    )
    tu.assign_non_tensor(
        td,
        dp_size=1,
        batch_num_tokens=int(response_mask.sum()),
        global_batch_size=int((response_mask.sum(-1) > 0).sum()),
    )
    return td


class Distiller:
    """The teacher and veRL's distillation config of one run."""

    def __init__(self, cfg: DictConfig, student_tokenizer: Any) -> None:
        from verl.utils.config import omega_conf_to_dataclass  # veRL: loaded by the engine anyway

        from core.reward_model import vocab_fingerprint  # deferred: transformers is loaded by the engine only

        self.config = omega_conf_to_dataclass(cfg.distillation)  # veRL's own checks of the section
        self.loss_cfg = self.config.distillation_loss
        path = str(OmegaConf.select(cfg, TEACHER_KEY))
        self.teacher, tok = models.load(path)
        self.teacher.requires_grad_(False)
        if vocab_fingerprint(tok) != vocab_fingerprint(student_tokenizer):
            raise ValueError(
                f"[{TEACHER_KEY}] {path}: the teacher's vocabulary is not the student's; fix: a teacher with the student's tokenizer"
            )
        self.n = int(cfg.actor_rollout_ref.rollout.n)

    @classmethod
    def maybe(cls, cfg: DictConfig, student_tokenizer: Any) -> Distiller | None:
        """A distiller when ``distillation.enabled``, else None."""
        return (
            cls(cfg, student_tokenizer)
            if OmegaConf.select(cfg, "distillation.enabled", default=False)
            else None
        )

    @torch.no_grad()
    def teacher_logprobs(self, ro: Rollout) -> torch.Tensor:
        """The teacher's log-prob of every sampled response token (B, R), at temperature 1."""
        lp, _ = response_logprobs(
            self.teacher, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, 1.0, group=self.n
        )
        return lp * ro.response_mask

    def combine(
        self,
        actor_cfg: Any,
        policy_loss: torch.Tensor,
        metrics: dict[str, float],
        log_prob: torch.Tensor,
        batch: Any,
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """The actor loss with distillation, as veRL's ``distillation_ppo_loss`` combines them.

        ``batch`` is :func:`verl_batch` of the mini-batch; ``log_prob`` the student's (B, R) log-probs.
        """
        from verl.trainer.distillation.losses import distillation_loss  # veRL: loaded anyway

        lc = self.loss_cfg
        mask = batch["response_mask"]
        out = {
            "log_probs": flat_layout(log_prob, batch["attention_mask"][:, : batch["prompts"].shape[1]], mask)
        }
        d_loss, d_metrics = distillation_loss(actor_cfg, self.config, out, batch)
        if not lc.use_task_rewards:
            policy_loss = torch.zeros((), dtype=d_loss.dtype)
        coef = lc.distillation_loss_coef if lc.use_task_rewards else 1.0
        total = policy_loss + d_loss * coef
        m = dict(metrics)
        m["distillation/loss"] = float(d_loss.detach())
        for k, v in d_metrics.items():
            m[k] = float(v.aggregate() if hasattr(v, "aggregate") else v)  # veRL's Metric or a number
        return total, m
