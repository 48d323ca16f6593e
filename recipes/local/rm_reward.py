"""A learned reward in the local engine's loop: the reward model scores, the verifier keeps the gold.

With ``reward.reward_model.enable=true`` (``reward_model=orm`` or ``reward_model=prm``) the score
the policy is trained on -- the *proxy* -- is the reward model's reading of each response
(:mod:`data_pipelines.rm_scoring`; the checkpoint's ``rlvr_rm.json`` says which: ``last`` for an
ORM, ``min_step`` for a PRM), in place of the verifier's score; shaping the engine adds on top (DAPO's
overlong penalty) stays. The verifier still grades every response: its ``acc`` stays the
accuracy the engine reports (held-out ``rlvr/val_acc`` is gold accuracy), and each rollout
records ``rm_score`` (proxy) and ``verifier_score``. :func:`step_metrics` logs both means per step
(``rlvr/proxy_score``, ``rlvr/gold_acc``), the two curves of an over-optimisation plot.

The reward model is loaded once per process and checked against the policy's vocabulary before
the first step. Not covered: reward models served by vLLM (the GPU path is veRL's reward loop).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from core import reward_model as rmod
from core.data import Prompt
from core.sampler import Rollout
from data_pipelines.rm_scoring import default_aggregates, score_texts

KEY = "reward.reward_model.model_path"


def enabled(cfg: DictConfig) -> bool:
    """Whether the config trains on a learned reward (``reward.reward_model.enable``)."""
    return bool(OmegaConf.select(cfg, "reward.reward_model.enable", default=False))


@functools.cache
def _load(path: str) -> rmod.RewardModel:
    return rmod.load(path, key=KEY)


def reward_model(cfg: DictConfig, policy_tokenizer: Any) -> rmod.RewardModel:
    """The configured reward model, checked against the policy's vocabulary."""
    path = OmegaConf.select(cfg, KEY)
    if not path:
        raise ValueError(
            f"[{KEY}] reward.reward_model.enable=true needs a path; fix: reward_model=orm|prm or set it"
        )
    rm = _load(str(path))
    rmod.check_vocab(rm.info, policy_tokenizer, KEY, str(cfg.actor_rollout_ref.model.path))
    return rm


def rescore(
    cfg: DictConfig,
    tokenizer: Any,
    prompts: list[Prompt],
    rollout: Rollout,
    n: int,
    texts: list[str],
    scores: torch.Tensor,
    extra: dict[str, list[Any]],
) -> tuple[torch.Tensor, dict[str, list[Any]]]:
    """Replace each response's verifier score by the reward model's reading (shaping kept)."""
    rm = reward_model(cfg, tokenizer)
    agg = default_aggregates(rm)[0]
    rows = [prompts[i // n] for i in range(len(texts))]
    proxy = score_texts(rm, [p.ids for p in rows], texts, [p.data_source for p in rows], [agg])[agg]
    lengths = rollout.response_lengths.tolist()
    verifier = [float(x) for x in extra.get("score", [0.0] * len(texts))]
    out = scores.clone()
    for i, length in enumerate(lengths):
        if length > 0:
            out[i, length - 1] = scores[i, length - 1] - verifier[i] + proxy[i]
    extra = {**extra, "rm_score": proxy, "verifier_score": verifier, "score": [float(x) for x in out.sum(-1)]}
    return out, extra


def step_metrics(extra: dict[str, list[Any]]) -> dict[str, float]:
    """``rlvr/gold_acc`` (the verifier's accuracy on the step's rollouts) and, with a learned
    reward, ``rlvr/proxy_score`` (the reward model's mean score on them)."""
    out = {}
    if extra.get("acc"):
        out["rlvr/gold_acc"] = float(np.mean([float(bool(a)) for a in extra["acc"]]))
    if extra.get("rm_score"):
        out["rlvr/proxy_score"] = float(np.mean(extra["rm_score"]))
    return out
