"""On fixed batches, the local engine's distillation loss is veRL's ``distillation_ppo_loss``.

veRL's side gets the batch the way its actor does: a padded batch converted by veRL's own
``left_right_2_no_padding`` (nested tensors; the teacher's log-probs laid out per sequence
position as veRL's vLLM teacher returns them) and the student's log-probs as a nested
no-padding model output. The engine's side is ``recipes.local.distill`` on padded tensors. The
batch has left-padded prompts, ragged responses and an empty response; every estimator mode and
both ways of using the loss (supervised, policy gradient), with and without the task reward.
"""

from __future__ import annotations

import pytest
import torch

from core.compose import compose
from recipes.local import algo
from recipes.local.distill import Distiller, flat_layout, verl_batch

MODES = [
    ("k3", False, False),
    ("low_var_kl", False, True),
    ("k1", True, False),
    ("k1", True, True),
    ("k2", False, False),
]


def batch(seed: int = 0, B: int = 6, P: int = 5, R: int = 7) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    pmask = torch.ones(B, P, dtype=torch.long)
    pmask[0, :2] = 0
    pmask[3, :1] = 0
    lens = torch.randint(1, R + 1, (B,), generator=g)
    lens[2] = 0
    rmask = (torch.arange(R)[None] < lens[:, None]).long()
    lp = (torch.randn(B, R, generator=g) * 0.4 - 1.0) * rmask
    return {
        "prompts": torch.randint(10, 50, (B, P), generator=g) * pmask,
        "pmask": pmask,
        "responses": torch.randint(10, 50, (B, R), generator=g) * rmask,
        "rmask": rmask,
        "log_prob": lp,
        "old": (lp + 0.1 * torch.randn(B, R, generator=g)) * rmask,
        "teacher": (lp + 0.5 * torch.randn(B, R, generator=g)) * rmask,
        "adv": torch.randn(B, R, generator=g) * rmask,
    }


def verl_loss(actor_cfg, dist_cfg, b):
    """veRL's distillation_ppo_loss on veRL's own no-padding conversion of the batch."""
    from tensordict import TensorDict
    from verl.trainer.distillation.losses import distillation_ppo_loss
    from verl.utils import tensordict_utils as tu
    from verl.workers.utils.padding import left_right_2_no_padding

    ids = torch.cat([b["prompts"], b["responses"]], 1)
    attn = torch.cat([b["pmask"], b["rmask"]], 1)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    P = b["prompts"].shape[1]
    # per sequence position t: the log-prob of token t+1 (veRL's shifted layout), 0 elsewhere
    teacher_full = torch.zeros(ids.shape)
    teacher_full[:, P - 1 : P - 1 + b["teacher"].shape[1]] = b["teacher"]
    td = TensorDict(
        {
            "input_ids": ids,
            "attention_mask": attn,
            "position_ids": pos,
            "prompts": b["prompts"],
            "responses": b["responses"],
            "response_mask": b["rmask"],
            "old_log_probs": b["old"],
            "advantages": b["adv"],
            "teacher_logprobs": teacher_full[..., None],
            "teacher_ids": torch.zeros(ids.shape + (1,), dtype=torch.long),
        },
        batch_size=[ids.shape[0]],
    )
    td = left_right_2_no_padding(td)
    tu.assign_non_tensor(
        td,
        dp_size=1,
        batch_num_tokens=int(b["rmask"].sum()),
        global_batch_size=int((b["rmask"].sum(-1) > 0).sum()),
    )
    seqs = []
    for i in range(ids.shape[0]):
        full = torch.zeros(ids.shape[1])
        full[P - 1 : P - 1 + b["log_prob"].shape[1]] = b["log_prob"][i]
        seqs.append(full[attn[i].bool()])
    out = {"log_probs": torch.nested.as_nested_tensor(seqs, layout=torch.jagged)}
    loss, _ = distillation_ppo_loss(actor_cfg, dist_cfg, out, td)
    return loss


@pytest.mark.parametrize("mode,pg,task", MODES, ids=[f"{m}-pg{int(p)}-task{int(t)}" for m, p, t in MODES])
def test_engine_distillation_loss_equals_verl(mode: str, pg: bool, task: bool) -> None:
    from verl.utils.config import omega_conf_to_dataclass

    cfg = compose(
        [
            "recipe=opd",
            "scale=laptop",
            f"distillation.distillation_loss.loss_mode={mode}",
            f"distillation.distillation_loss.use_policy_gradient={pg}",
            f"distillation.distillation_loss.use_task_rewards={task}",
            "distillation.distillation_loss.distillation_loss_coef=0.7",
        ]
    )
    b = batch()
    d = Distiller.__new__(Distiller)  # the loss path only: no teacher model is loaded
    d.config = omega_conf_to_dataclass(cfg.distillation)
    d.loss_cfg = d.config.distillation_loss
    actor = algo.actor_config(cfg)
    pol, m = algo.policy_loss(actor, b["log_prob"], b["old"], b["adv"], b["rmask"])
    td = verl_batch(b["prompts"], b["pmask"], b["responses"], b["rmask"], b["old"], b["teacher"])
    mine, metrics = d.combine(actor, pol, m, b["log_prob"], td)
    theirs = verl_loss(algo.actor_config(cfg), omega_conf_to_dataclass(cfg.distillation), b)
    torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-7)
    assert metrics["distillation/loss"] != 0.0
    assert mine.requires_grad is False or mine.grad_fn is not None


def test_distillation_gradient_moves_the_student_toward_the_teacher() -> None:
    """k3 supervised: one gradient step on the student's log-probs lowers the KL to the teacher."""
    from verl.utils.config import omega_conf_to_dataclass

    cfg = compose(
        [
            "recipe=opd",
            "scale=laptop",
            "distillation.distillation_loss.loss_mode=k3",
            "distillation.distillation_loss.use_policy_gradient=false",
        ]
    )
    b = batch(1)
    d = Distiller.__new__(Distiller)
    d.config = omega_conf_to_dataclass(cfg.distillation)
    d.loss_cfg = d.config.distillation_loss
    lp = b["log_prob"].clone().requires_grad_(True)
    actor = algo.actor_config(cfg)
    td = verl_batch(b["prompts"], b["pmask"], b["responses"], b["rmask"], b["old"], b["teacher"])
    loss, _ = d.combine(actor, torch.zeros(()), {}, lp, td)
    loss.backward()
    gap_before = ((b["log_prob"] - b["teacher"]) * b["rmask"]).abs().sum()
    gap_after = ((b["log_prob"] - 0.5 * lp.grad - b["teacher"]) * b["rmask"]).abs().sum()
    assert gap_after < gap_before


def test_flat_layout_puts_each_token_where_verl_reads_it() -> None:
    from tensordict import TensorDict
    from verl.workers.utils.padding import no_padding_2_padding

    b = batch(2)
    flat = flat_layout(b["log_prob"], b["pmask"], b["rmask"])
    td = TensorDict(
        {
            "prompts": b["prompts"],
            "responses": b["responses"],
            "attention_mask": torch.cat([b["pmask"], b["rmask"]], 1),
        },
        batch_size=[b["prompts"].shape[0]],
    )
    back = no_padding_2_padding(flat, td)
    torch.testing.assert_close(back * b["rmask"], b["log_prob"])
