"""A small learned critic for PPO with GAE (``algorithm.adv_estimator=gae``, e.g. ``orz_ppo``).

As veRL's critic: the policy checkpoint (``critic.model.path``) loaded as
``Qwen2ForTokenClassification`` with ``num_labels=1`` (a fresh scalar value head on the
pretrained backbone); the value of response token ``t`` is read at the position that predicts it
(the same alignment as veRL's ``no_padding_2_padding``). Values are computed before the update,
GAE runs through veRL's ``compute_advantage``, and the critic is trained with veRL's
``core_algos.compute_value_loss`` (clipped, ``critic.cliprange_value``, ``critic.loss_agg_mode``)
in ``critic.ppo_epochs`` passes over ``train_batch_size / critic.ppo_mini_batch_size`` mini-batches
of whole groups (ORZ: 16 critic updates per rollout against the actor's one), each one step of
veRL's ``build_optimizer`` from ``critic.optim`` (lr, betas, weight decay,
``override_optimizer_config``) with grad clip ``critic.optim.clip_grad`` and veRL's warm-up
schedule (``critic.optim.lr_warmup_steps``, stepped once per rollout). The critic trains from the
first step; ``trainer.critic_warmup`` holds back the actor only (``trainer.py``). Not covered:
critic LoRA, separate critic tokenizers.
"""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import DictConfig
from transformers import AutoConfig, Qwen2ForTokenClassification
from verl.trainer.ppo.core_algos import compute_value_loss

from recipes.local.algo import optimizer


class Critic:
    """Value model, optimizer and schedule read from the ``critic`` config section."""

    def __init__(self, cfg: DictConfig, total_steps: int, fused: bool = False) -> None:
        c = cfg.critic
        self.cfg = c
        hf = AutoConfig.from_pretrained(str(c.model.path))
        hf.num_labels, hf.classifier_dropout = 1, 0.0
        self.model = Qwen2ForTokenClassification.from_pretrained(
            str(c.model.path), config=hf, torch_dtype=torch.float32
        )
        self.model.train()
        self.opt, self.sched = optimizer(self.model.parameters(), c.optim, total_steps, fused)

    def values(
        self, prompts: torch.Tensor, pmask: torch.Tensor, resp: torch.Tensor, rmask: torch.Tensor
    ) -> torch.Tensor:
        """(B, R) values of the states before each response token."""
        P, R = prompts.shape[1], resp.shape[1]
        ids = torch.cat([prompts, resp], 1)
        attn = torch.cat([pmask, rmask], 1)
        out = self.model(input_ids=ids, attention_mask=attn, position_ids=(attn.cumsum(-1) - 1).clamp(min=0))
        return out.logits[:, P - 1 : P + R - 1, 0].float()

    def update(self, ro: Any, batch: Any, n: int) -> dict[str, float]:
        """Clipped value-loss updates over mini-batches; returns veRL-named critic metrics."""
        c = self.cfg
        mb = int(c.ppo_mini_batch_size) * n
        old_v, returns = batch.batch["values"], batch.batch["returns"]
        if old_v.shape[0] % mb:
            raise ValueError(
                f"[critic.ppo_mini_batch_size] {c.ppo_mini_batch_size} prompts do not divide the "
                f"{old_v.shape[0] // n} prompts of the step; fix: a divisor of data.train_batch_size"
            )
        out: dict[str, list[float]] = {}
        for _ in range(int(c.ppo_epochs)):
            for s in range(0, old_v.shape[0], mb):
                sl = slice(s, s + mb)
                m = ro.response_mask[sl]
                v = self.values(ro.prompts[sl], ro.prompt_mask[sl], ro.responses[sl], m)
                loss, clipfrac = compute_value_loss(
                    vpreds=v,
                    returns=returns[sl],
                    values=old_v[sl],
                    response_mask=m,
                    cliprange_value=float(c.cliprange_value),
                    loss_agg_mode=str(c.loss_agg_mode),
                    batch_num_tokens=int(m.sum()),
                    global_batch_size=int((m.sum(-1) > 0).sum()),
                    loss_scale_factor=c.get("loss_scale_factor"),
                )
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), float(c.optim.clip_grad))
                if torch.isfinite(gn):
                    self.opt.step()
                for k, val in (
                    ("critic/vf_loss", float(loss.detach())),
                    ("critic/vf_clipfrac", float(clipfrac)),
                    ("critic/grad_norm", float(gn)),
                    ("critic/vpred_mean", float((v.detach() * m).sum() / m.sum().clamp(min=1))),
                ):
                    out.setdefault(k, []).append(val)
        metrics = {k: sum(v) / len(v) for k, v in out.items()}
        metrics["critic/lr"] = float(self.sched.get_last_lr()[0])
        self.sched.step()
        return metrics

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "sched": self.sched.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.sched.load_state_dict(state["sched"])
