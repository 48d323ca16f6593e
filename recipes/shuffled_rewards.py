"""The shuffled-reward control as a veRL advantage estimator: ``grpo_shuffled`` (``adv=grpo_shuffled``).

A control, not a method: GRPO's group advantage (DeepSeekMath, arXiv:2402.03300, eq. 3; veRL's
``compute_grpo_outcome_advantage``) computed on the step's rewards after a uniformly random permutation
across **all** the step's samples (every prompt's ``rollout.n`` responses), each sequence reward placed
on its new row's last response token. A gain that survives it does not come from the reward signal.
It is the permutation of the local engine's ``local.shuffle_rewards`` (``recipes/local/trainer.py``,
``Engine._shuffle``: the same rows, the same placement) moved to where veRL's trainer can take it: veRL
scores each sample on its own as the rollout streams in (``verl/experimental/reward_loop``), so no
reward manager or reward function sees the batch, and the first place that holds the whole step's
rewards is the advantage (``trainer_base._compute_advantage``), which dispatches through veRL's
registry (``register_adv_est``). What differs from ``local.shuffle_rewards``:

- the random stream: a generator per process seeded from the config's ``data.seed`` (the project sets
  it to ``rlvr.seed``; 0 without one), advanced once per step, restarted with every trainer process
  (each of R1-Zero's reference-reset segments); the local engine draws from its sampling generator;
- what the logs show: veRL's ``critic/score/mean`` and rollout dumps hold the unshuffled scores (the
  local engine logs the shuffled ones; the batch mean is the same), and only the advantage sees the
  permutation -- which is all GRPO reads of a reward.

veRL imports this module in each of its processes through ``actor_rollout_ref.model.external_lib``
(``HFModelConfig.__post_init__`` imports it), which ``conf/adv/grpo_shuffled.yaml`` sets; the project's
validation and the local engine import it themselves. Not covered: estimators other than GRPO (with
or without the std normalisation), DAPO's group filter (it reads the unshuffled rewards on veRL).

>>> import numpy as np, torch
>>> r = torch.tensor([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
>>> m = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
>>> out = shuffle_rewards(r, m, torch.Generator().manual_seed(0))
>>> sorted(out.sum(-1).tolist()) == sorted(r.sum(-1).tolist()), out[0, 0].item(), out[1, 1].item()
(True, 0.0, 0.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage, register_adv_est

NAME = "grpo_shuffled"
#: the module veRL's processes import (``actor_rollout_ref.model.external_lib``) to know :data:`NAME`
MODULE = __name__
_GENERATORS: dict[int, torch.Generator] = {}


def shuffle_rewards(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """The sequence rewards (B, R -> B) permuted across all B rows, each on its row's last response token.

    Args:
        token_level_rewards: (B, R) scores; a row's reward is its sum.
        response_mask: (B, R) 1 on response tokens; an empty row's reward lands on position 0.
        generator: the permutation's random stream.
    """
    seq = token_level_rewards.sum(-1)
    perm = torch.randperm(seq.shape[0], generator=generator)
    out = torch.zeros_like(token_level_rewards)
    last = (response_mask.sum(-1).long() - 1).clamp(min=0)
    out[torch.arange(seq.shape[0]), last] = seq[perm]
    return out


def seed_of(config: Any) -> int:
    """``data.seed`` of the root config ``config`` (veRL's ``algorithm`` section) belongs to; 0 without one."""
    if not isinstance(config, DictConfig):
        return 0
    seed = OmegaConf.select(config._get_root(), "data.seed", default=None)
    return 0 if seed is None else int(seed)


def _generator(config: Any) -> torch.Generator:
    seed = seed_of(config)
    if seed not in _GENERATORS:
        _GENERATORS[seed] = torch.Generator().manual_seed(seed)
    return _GENERATORS[seed]


@register_adv_est(NAME)
def compute_grpo_shuffled_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: np.ndarray,
    config: Any = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO's advantage (and returns) of the rewards after :func:`shuffle_rewards`; shapes (B, R).

    ``config.norm_adv_by_std_in_grpo`` (default true) as for ``grpo``; ``index``: the group id per row."""
    shuffled = shuffle_rewards(token_level_rewards, response_mask, _generator(config))
    norm = True if config is None else bool(config.get("norm_adv_by_std_in_grpo", True))
    return compute_grpo_outcome_advantage(
        shuffled, response_mask, index, norm_adv_by_std_in_grpo=norm, config=config
    )
