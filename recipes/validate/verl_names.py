"""Names the rules check against, read from veRL, never copied.

Advantage estimators and policy losses come from veRL's registries (group estimators are those
whose function takes the group ``index``), reward managers from ``REWARD_MANAGER``; KL
estimators, KL controllers and loss-aggregation modes, which veRL dispatches on strings, are
probed by calling veRL's own function once per name. Each list is read once (cached).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


@functools.cache
def adv_estimators() -> dict[str, Callable]:
    """veRL's registry with the project's own estimators (``recipes.shuffled_rewards``) registered."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY  # veRL: ~10 s, not at --help

    import recipes.shuffled_rewards  # noqa: F401 - registers grpo_shuffled (with veRL, as above)

    return dict(ADV_ESTIMATOR_REGISTRY)


@functools.cache
def group_estimators() -> frozenset[str]:
    """Estimators whose baseline is the group of one prompt's rollouts (they take ``index``)."""
    return frozenset(n for n, fn in adv_estimators().items() if "index" in inspect.signature(fn).parameters)


@functools.cache
def policy_losses() -> tuple[str, ...]:
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY  # veRL: ~10 s, not at --help

    return tuple(sorted(POLICY_LOSS_REGISTRY))


@functools.cache
def reward_managers() -> tuple[str, ...]:
    from verl.experimental.reward_loop.reward_manager import registry  # veRL: ~10 s, not at --help

    return tuple(sorted(registry.REWARD_MANAGER))


def _probe(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except (NotImplementedError, ValueError, AttributeError, TypeError, AssertionError):
        return False
    return True


@functools.cache
def kl_estimator_ok(name: str) -> bool:
    """Whether veRL's ``core_algos.kl_penalty`` computes ``name`` (``k3``, ``low_var_kl``, ``k3+``...)."""
    import torch  # ~3 s, with veRL: not at --help
    from verl.trainer.ppo.core_algos import kl_penalty  # veRL: ~10 s, not at --help

    return _probe(lambda: kl_penalty(torch.zeros(1), torch.zeros(1), str(name)))


@functools.cache
def kl_controller_ok(kind: str) -> bool:
    """Whether veRL's ``get_kl_controller`` builds a controller of type ``kind``."""
    from verl.trainer.ppo.core_algos import get_kl_controller  # veRL: ~10 s, not at --help

    c = SimpleNamespace(type=str(kind), kl_coef=0.1, horizon=1, target_kl=0.1)
    return _probe(lambda: get_kl_controller(c))


@functools.cache
def agg_mode_ok(mode: str) -> bool:
    """Whether veRL's ``core_algos.agg_loss`` aggregates with ``mode``."""
    import torch  # ~3 s, with veRL: not at --help
    from verl.trainer.ppo.core_algos import agg_loss  # veRL: ~10 s, not at --help

    kw = {"dp_size": 1, "batch_num_tokens": 1, "global_batch_size": 1, "loss_scale_factor": 1}
    return _probe(lambda: agg_loss(torch.zeros(1, 1), torch.ones(1, 1), str(mode), **kw))


def filter_metrics() -> tuple[str, ...]:
    """Per-sample keys a group filter can read: veRL's sequence rewards + the verifier's numbers."""
    import rewards  # the verifier's key list; validation loads the reward function anyway

    return ("seq_final_reward", "seq_reward", *(k for k in rewards.KEYS if k not in ("pred", "reason")))
