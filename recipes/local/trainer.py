"""The local engine's RL loop: sample, score, filter, advantage, several clipped updates, log, save.

One step (``trainer.total_training_steps`` of them): sample ``rollout.n`` responses for each of
``data.train_batch_size`` prompts with the KV-cache sampler (old log-probs captured at sampling
time) and score them. With ``algorithm.filter_groups.enable`` (DAPO's dynamic sampling) each
round draws ``data.gen_batch_size`` prompts (default: the batch), keeps only groups whose metric
varies, and generates more rounds until ``data.train_batch_size`` groups are kept (error after
``max_num_gen_batches``); without the filter there is nothing to oversample for, so exactly the
batch is generated (veRL's DAPO trainer would train on all ``gen_batch_size`` prompts instead).
Then reference log-probs (if a KL term is on), veRL's advantage, and ``ppo_epochs`` passes over
``train_batch_size / ppo_mini_batch_size`` mini-batches of whole groups, one optimizer step each
(grad clip ``actor.optim.clip_grad``, the key veRL 0.9.1 reads), with veRL's lr schedule stepping
once per actor update phase. The reference is reset to the policy every ``rlvr.ref_reset_steps``.
Held-out evaluation every ``trainer.test_freq`` steps and at both ends; checkpoints every
``trainer.save_freq`` steps and at the end (``state.pt`` to resume from, and the policy as an HF
checkpoint, ``huggingface/``, which evaluation reads without the model cache). With ``algorithm.adv_estimator=gae`` a critic
(``critic.py``) supplies values and is trained first, as in veRL; the actor waits while
``trainer.critic_warmup`` > step (veRL's test). ``local.fast`` (default) samples and computes log-probs
through ``core.fastpath`` and fuses AdamW: the same numbers, less work. Not covered: data parallelism.
"""

from __future__ import annotations

import contextlib
import copy
import random
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig
from verl.trainer.ppo.core_algos import get_kl_controller
from verl.trainer.ppo.metric_utils import process_validation_metrics

from core import model as models
from core.data import Prompt
from core.fastpath import bucketed_logprobs, decoding, plain_rollout
from core.sampler import Rollout, cat_rollouts, generate, response_logprobs, select
from recipes.local import algo, rm_reward
from recipes.local.critic import Critic
from recipes.local.data import PromptStream
from recipes.local.distill import Distiller, verl_batch
from recipes.local.track import data_metrics, drift


def export_policy(run_dir: Path, out: Path) -> Path:
    """Copy the policy of a local run's last checkpoint (``checkpoints/global_step_N/huggingface``,
    model and tokenizer as the run saved them) to ``out``; returns ``out``."""
    ckpt = Path(run_dir) / "checkpoints"
    tracker = ckpt / "latest_checkpointed_iteration.txt"
    hf = ckpt / f"global_step_{tracker.read_text().strip()}" / "huggingface" if tracker.is_file() else None
    if hf is None or not (hf / "config.json").is_file():
        raise FileNotFoundError(
            f"{run_dir}: no saved policy (checkpoints/global_step_<n>/huggingface; "
            "fix: trainer.save_freq > 0, and a run made by this version of the engine)"
        )
    shutil.copytree(hf, out, dirs_exist_ok=True)
    return Path(out)


class Engine:
    """Holds the policy, reference, optimizer, data stream and counters of one run."""

    def __init__(
        self,
        cfg: DictConfig,
        model: torch.nn.Module,
        tok: Any,
        reward_fn: Any,
        train: list[Prompt],
        val: list[Prompt],
    ) -> None:
        self.cfg, self.model, self.tok, self.reward_fn, self.val = cfg, model, tok, reward_fn, val
        a = cfg.actor_rollout_ref.actor
        self.n = int(cfg.actor_rollout_ref.rollout.n)
        self.bs = int(cfg.data.train_batch_size)
        self.gen_bs = int(cfg.data.get("gen_batch_size") or self.bs)
        self.seed = int(cfg.rlvr.seed)
        self.stream = PromptStream(train, self.seed, shuffle=bool(cfg.data.shuffle))
        self.actor_cfg = algo.actor_config(cfg)
        self.need_ref = bool(a.use_kl_loss) or bool(cfg.algorithm.use_kl_in_reward)
        self.ref = copy.deepcopy(model).eval().requires_grad_(False) if self.need_ref else None
        # the starting policy, frozen: held-out drift from it is logged at every evaluation (whatever
        # the KL coefficient, so a beta=0 arm has a drift curve too); a resumed run's copy is taken
        # before its checkpoint loads, i.e. it is the same starting model
        self.init = copy.deepcopy(model).eval().requires_grad_(False)
        self.fast = bool(cfg.local.fast)  # core.fastpath: the same numbers, less work
        self.logprobs = bucketed_logprobs if self.fast else response_logprobs
        self.opt, self.sched = algo.optimizer(model.parameters(), a.optim, self.total_steps(), self.fast)
        self.critic = (
            Critic(cfg, self.total_steps(), self.fast) if str(cfg.algorithm.adv_estimator) == "gae" else None
        )
        self.kl_ctrl = get_kl_controller(cfg.algorithm.kl_ctrl) if cfg.algorithm.use_kl_in_reward else None
        self.distill = Distiller.maybe(cfg, tok)  # on-policy distillation: a fixed teacher (distill.py)
        self.gen = torch.Generator().manual_seed(self.seed)
        self.shuffle_rewards = bool(cfg.local.shuffle_rewards)
        self.step = 0
        self.model.train()

    def total_steps(self) -> int:
        t = self.cfg.trainer.total_training_steps
        if t is not None:
            return int(t)
        return int(self.cfg.trainer.total_epochs) * (len(self.stream.prompts) // self.bs)

    # ------------------------------------------------------------------ sampling
    def _sample(self, prompts: list[Prompt], n: int, sampling: Any) -> Rollout:
        self.model.eval()
        with decoding(self.model) if self.fast else contextlib.nullcontext():
            ro = generate(
                self.model,
                [p.ids for p in prompts],
                n,
                int(self.cfg.data.max_response_length),
                self.tok.eos_token_id,
                self.tok.pad_token_id,
                temperature=float(sampling.temperature),
                top_p=float(sampling.top_p),
                top_k=int(sampling.top_k),
                do_sample=bool(sampling.do_sample),
                generator=self.gen,
            )
        self.model.train()
        return plain_rollout(ro) if self.fast else ro

    def collect(
        self,
    ) -> tuple[list[Prompt], Rollout, torch.Tensor, dict[str, list[Any]], list[str], dict[str, float]]:
        """Generate until ``train_batch_size`` groups are kept (dynamic sampling) or once (no filter)."""
        fg = self.cfg.algorithm.filter_groups
        filt = bool(fg is not None and fg.enable)
        per_round = self.gen_bs if filt else self.bs
        kept_p, kept_r, kept_s, kept_t = [], [], [], []
        kept_x: dict[str, list[Any]] = {}
        all_scores, zero_var, groups_seen, n_gen = [], 0, 0, 0
        while True:
            n_gen += 1
            prompts = self.stream.take(per_round)
            ro = self._sample(prompts, self.n, self.cfg.actor_rollout_ref.rollout)
            scores, extra, texts = algo.score_rollout(self.cfg, self.reward_fn, self.tok, prompts, ro, self.n)
            if self.shuffle_rewards:
                scores, extra = self._shuffle(ro, scores, extra)
            all_scores.append(scores.sum(-1))
            vals = algo.group_metric(str(fg.metric) if filt else "seq_reward", scores, extra)
            keep, zv = algo.keep_groups(vals, self.n)
            zero_var += zv
            groups_seen += len(prompts)
            if not filt:
                keep = list(range(len(prompts)))
            rows = [g * self.n + j for g in keep for j in range(self.n)]
            kept_p += [prompts[g] for g in keep]
            kept_r.append(select(ro, rows))
            kept_s.append(scores[rows])
            kept_t += [texts[i] for i in rows]
            for k, v in extra.items():
                kept_x.setdefault(k, []).extend(v[i] for i in rows)
            if len(kept_p) >= self.bs:
                break
            mx = int(fg.max_num_gen_batches)
            if mx > 0 and n_gen >= mx:
                raise ValueError(
                    f"[algorithm.filter_groups] {n_gen=} >= max_num_gen_batches={mx}: only {len(kept_p)} of "
                    f"{self.bs} groups had non-zero {fg.metric} variance. The data are too easy or too hard for "
                    "the model (fix: raise algorithm.filter_groups.max_num_gen_batches, 0 = unlimited, or change the data)"
                )
        rows = list(range(self.bs * self.n))
        R = max(r.responses.shape[1] for r in kept_r)
        scores = torch.cat([torch.nn.functional.pad(s, (0, R - s.shape[1])) for s in kept_s])[rows]
        rollout = select(cat_rollouts(kept_r, self.tok.pad_token_id), rows)
        unf = torch.cat(all_scores)
        info = {
            "train/num_gen_batches": float(n_gen),
            "rlvr/unfiltered_score/mean": float(unf.mean()),
            "rlvr/zero_variance_group_frac": zero_var / max(groups_seen, 1),
        }
        extra = {k: v[: len(rows)] for k, v in kept_x.items()}
        return kept_p[: self.bs], rollout, scores, extra, kept_t[: len(rows)], info

    def _shuffle(self, ro: Rollout, scores: torch.Tensor, extra: dict[str, list[Any]]):
        """Control experiment (``local.shuffle_rewards``): permute rewards across the batch's samples."""
        perm = torch.randperm(scores.shape[0], generator=self.gen).tolist()
        seq = scores.sum(-1)[perm]
        out = torch.zeros_like(scores)
        last = (ro.response_lengths - 1).clamp(min=0)
        out[torch.arange(scores.shape[0]), last] = seq
        return out, {k: [v[j] for j in perm] for k, v in extra.items()}

    # ------------------------------------------------------------------ training
    def train_step(self) -> tuple[dict[str, float], dict[str, Any]]:
        """One RL step; returns metrics and the dump of its samples."""
        self.step += 1
        t0 = time.time()
        prompts, ro, scores, extra, texts, metrics = self.collect()
        metrics["timing_s/gen"] = time.time() - t0
        return self.learn(prompts, ro, scores, extra, texts, metrics)

    def learn(
        self,
        prompts: list[Prompt],
        ro: Rollout,
        scores: torch.Tensor,
        extra: dict[str, list[Any]],
        texts: list[str],
        metrics: dict[str, float],
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The step's learning from its scored samples (what :meth:`collect` returns): reference log-probs,
        advantages, the critic and actor updates, the lr schedule and the reference reset; returns metrics
        and the dump of its samples. ``tests/local/test_trainer_equivalence.py`` feeds it fixed samples."""
        metrics.update(rm_reward.step_metrics(extra))  # gold accuracy (and a learned reward's proxy score)
        t_gen = time.time()
        temp = float(self.cfg.actor_rollout_ref.rollout.temperature)
        ref_lp = values = teacher_lp = None
        with torch.no_grad():
            if self.distill is not None:
                teacher_lp = self.distill.teacher_logprobs(ro)
            if self.need_ref:
                ref_lp, _ = self.logprobs(
                    self.ref, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, temp, group=self.n
                )
            if self.critic is not None:
                values = self.critic.values(ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask)
                values = values * ro.response_mask
        uids = [f"{self.step}-{i // self.n}" for i in range(len(texts))]
        batch = algo.make_batch(ro, scores, uids, ref_lp, values)
        batch, kl_m = algo.compute_advantages(self.cfg, batch, self.kl_ctrl)
        metrics.update(kl_m)
        if self.critic is not None:
            metrics.update(self.critic.update(ro, batch, self.n))
        if int(self.cfg.trainer.critic_warmup or 0) > self.step:
            metrics["rlvr/critic_warmup"] = 1.0  # veRL: no actor update (nor lr step) while warmup > step
        else:
            epochs = int(self.cfg.actor_rollout_ref.actor.ppo_epochs)
            first, means = self.update_actor(ro, batch.batch["advantages"], ref_lp, epochs, teacher_lp)
            metrics.update(first)
            metrics.update(means)
            metrics["actor/lr"] = float(self.sched.get_last_lr()[0])
            self.sched.step()
        reset = self.cfg.rlvr.ref_reset_steps
        if self.ref is not None and reset and self.step % int(reset) == 0:
            self.ref.load_state_dict(self.model.state_dict())
            metrics["rlvr/ref_reset"] = 1.0
        metrics.update(data_metrics(batch, ro.prompt_mask, self.cfg, use_critic=self.critic is not None))
        metrics.update(
            {
                "timing_s/update_actor": time.time() - t_gen,
                "timing_s/step": time.time() - t_gen + metrics.get("timing_s/gen", 0.0),
                "training/global_step": float(self.step),
                "training/epoch": float(self.stream.epoch),
            }
        )
        dump = {
            "inputs": [prompts[i // self.n].text for i in range(len(texts))],
            "outputs": texts,
            "gts": [prompts[i // self.n].ground_truth for i in range(len(texts))],
            "scores": scores.sum(-1).tolist(),
            "extra": {**extra, "uid": uids, "response_length": ro.response_lengths.tolist()},
        }
        return metrics, dump

    def update_actor(
        self,
        ro: Rollout,
        adv: torch.Tensor,
        ref_lp: torch.Tensor | None,
        epochs: int,
        teacher_lp: torch.Tensor | None = None,
    ) -> tuple[dict[str, float], dict[str, float]]:
        """``epochs`` passes over mini-batches of ``ppo_mini_batch_size`` whole groups, in order, one
        optimizer step each (grad clip ``actor.optim.clip_grad``). Returns the rollout-vs-training
        metrics of the first mini-batch and the mean of each loss metric over the updates."""
        a = self.cfg.actor_rollout_ref.actor
        temp = float(self.cfg.actor_rollout_ref.rollout.temperature)
        mb = int(a.ppo_mini_batch_size) * self.n
        if ro.responses.shape[0] % mb:
            raise ValueError(
                f"[actor_rollout_ref.actor.ppo_mini_batch_size] {a.ppo_mini_batch_size} prompts do not divide "
                f"the {ro.responses.shape[0] // self.n} prompts of the step; fix: a divisor of data.train_batch_size"
            )
        want_ent_grad = float(a.entropy_coeff) != 0
        upd: dict[str, list[float]] = {}
        first: dict[str, float] = {}
        for epoch in range(epochs):
            for s in range(0, ro.responses.shape[0], mb):
                sl = slice(s, s + mb)
                R = int(ro.response_mask[sl].sum(-1).max())  # no padding waste beyond the longest response
                m = ro.response_mask[sl, :R]
                lp, ent = self.logprobs(
                    self.model,
                    ro.prompts[sl],
                    ro.prompt_mask[sl],
                    ro.responses[sl, :R],
                    m,
                    temp,
                    with_entropy=True,
                    group=self.n,  # each prompt encoded once per group (mini-batches hold whole groups)
                )
                if not want_ent_grad:
                    ent = ent.detach()
                if epoch == 0 and s == 0:
                    first = algo.rollout_vs_train(
                        ro.old_log_probs[sl, :R], lp.detach(), m, ro.responses[sl, :R]
                    )
                loss, lm = algo.policy_loss(
                    self.actor_cfg,
                    lp,
                    ro.old_log_probs[sl, :R],
                    adv[sl, :R],
                    m,
                    entropy=ent if want_ent_grad else None,
                    ref_log_prob=None if ref_lp is None else ref_lp[sl, :R],
                )
                if self.distill is not None:  # veRL's distillation loss on top (recipe=opd)
                    td = verl_batch(
                        ro.prompts[sl],
                        ro.prompt_mask[sl],
                        ro.responses[sl, :R],
                        m,
                        ro.old_log_probs[sl, :R],
                        teacher_lp[sl, :R],
                    )
                    loss, lm = self.distill.combine(self.actor_cfg, loss, lm, lp, td)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), float(a.optim.clip_grad))
                if torch.isfinite(gn):
                    self.opt.step()
                lm["actor/grad_norm"] = float(gn)
                lm["actor/entropy"] = float((ent.detach() * m).sum() / m.sum().clamp(min=1))
                for k, v in lm.items():
                    upd.setdefault(k, []).append(v)
        return first, {k: float(np.mean(v)) for k, v in upd.items()}

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> tuple[dict[str, float], dict[str, Any]]:
        """Held-out accuracy with ``rollout.val_kwargs``; veRL's ``process_validation_metrics`` names."""
        vk = self.cfg.actor_rollout_ref.rollout.val_kwargs
        n = int(vk.n)
        g_state = self.gen.get_state()
        self.gen.manual_seed(self.seed + 10_007)  # the same eval draws regardless of training history
        texts, scores_all, extra_all, lengths = [], [], {}, []
        drift_sum, drift_tokens = 0.0, 0.0
        for i in range(0, len(self.val), 128):
            chunk = self.val[i : i + 128]
            ro = self._sample(chunk, n, vk)
            lengths += ro.response_lengths.tolist()
            temp = float(vk.temperature) if vk.do_sample else 1.0
            d_sum, d_tok = drift(self.model, self.init, ro, temp, n)
            drift_sum, drift_tokens = drift_sum + d_sum, drift_tokens + d_tok
            sc, ex, tx = algo.score_rollout(self.cfg, self.reward_fn, self.tok, chunk, ro, n)
            texts += tx
            scores_all += sc.sum(-1).tolist()
            for k, v in ex.items():
                extra_all.setdefault(k, []).extend(v)
        self.gen.set_state(g_state)
        reps = [p for p in self.val for _ in range(n)]
        infos = {
            "reward": scores_all,
            **{
                k: [float(x) if isinstance(x, (bool, int, float)) else 0.0 for x in v]
                for k, v in extra_all.items()
                if k in ("acc", "format", "score")
            },
        }
        uids = [f"val-{i // n}" for i in range(len(reps))]
        res = process_validation_metrics(np.asarray([p.data_source for p in reps], dtype=object), uids, infos)
        metrics: dict[str, float] = {}
        for src, var2 in res.items():
            core = "acc" if "acc" in var2 else "reward"
            for var, m2 in var2.items():
                for name, val in m2.items():
                    sec = (
                        "val-core"
                        if var == core and name.startswith(("mean", "maj", "best")) and f"@{n}" in name
                        else "val-aux"
                    )
                    metrics[f"{sec}/{src}/{var}/{name}"] = float(val)
        acc = float(np.mean(infos.get("acc", infos["reward"])))
        metrics["rlvr/val_acc"] = acc
        metrics["rlvr/val_response_length"] = float(np.mean(lengths))  # tokens, EOS included
        metrics["rlvr/val_kl_to_init"] = drift_sum / max(drift_tokens, 1.0)
        dump = {
            "inputs": [p.text for p in reps],
            "outputs": texts,
            "gts": [p.ground_truth for p in reps],
            "scores": scores_all,
            "extra": extra_all,
        }
        return metrics, dump

    # ------------------------------------------------------------------ checkpoints
    def save(self, ckpt_dir: Path) -> None:
        d = ckpt_dir / f"global_step_{self.step}"
        d.mkdir(parents=True, exist_ok=True)
        state = {
            "model": self.model.state_dict(),
            "opt": self.opt.state_dict(),
            "sched": self.sched.state_dict(),
            "ref": None if self.ref is None else self.ref.state_dict(),
            "step": self.step,
            "stream_position": self.stream.position,
            "gen": self.gen.get_state(),
            "kl_coef": None if self.kl_ctrl is None else self.kl_ctrl.value,
            "critic": None if self.critic is None else self.critic.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "py_rng": random.getstate(),
        }
        tmp = d / "state.pt.tmp"
        torch.save(state, tmp)
        tmp.replace(d / "state.pt")
        # the policy as a standard HF checkpoint too, so evaluating the run dir (make eval, make
        # budget) needs nothing from the model cache, which may have been rebuilt since
        hf, hf_tmp = d / "huggingface", d / "huggingface.tmp"
        shutil.rmtree(hf_tmp, ignore_errors=True)
        models.save(self.model, self.tok, hf_tmp)
        shutil.rmtree(hf, ignore_errors=True)
        hf_tmp.rename(hf)
        (ckpt_dir / "latest_checkpointed_iteration.txt").write_text(str(self.step))

    def load(self, ckpt_dir: Path) -> bool:
        f = ckpt_dir / "latest_checkpointed_iteration.txt"
        if not f.is_file():
            return False
        state = torch.load(ckpt_dir / f"global_step_{int(f.read_text())}" / "state.pt", weights_only=False)
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["opt"])
        self.sched.load_state_dict(state["sched"])
        if self.ref is not None and state["ref"] is not None:
            self.ref.load_state_dict(state["ref"])
        if self.kl_ctrl is not None and state["kl_coef"] is not None:
            self.kl_ctrl.value = state["kl_coef"]
        if self.critic is not None and state.get("critic") is not None:
            self.critic.load_state_dict(state["critic"])
        self.step = int(state["step"])
        self.stream.position = int(state["stream_position"])
        self.gen.set_state(state["gen"])
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["py_rng"])
        return True
