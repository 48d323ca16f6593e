"""The reward of the ``verl_trainer`` rehearsal: a deterministic coin per response, in veRL's signature.

The rehearsal's model is a tiny random Qwen2 that never solves a task, so the recipe's verifier
would score every response alike; GRPO's advantages would all be 0 and DAPO's group filter
(``algorithm.filter_groups``) would keep no group and generate forever. A coin (heads with
probability 1/2, from a hash of the response and the gold) gives every group varied rewards, so
every path of the trainer runs. It takes and ignores the recipe's ``reward_kwargs``; the recipe's
reward manager, overlong penalty and reward workers are the recipe's. Not a verifier: the
``reward`` pre-flight check tests the recipe's own.

>>> compute_score("arithmetic", "12", "12") == compute_score("arithmetic", "12", "12")
True
"""

from __future__ import annotations

import hashlib
from typing import Any


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **kwargs: Any
) -> dict[str, Any]:
    """``{"score", "acc"}``: 1.0 or 0.0 by a hash of ``solution_str`` and ``ground_truth``."""
    heads = int(hashlib.sha256(f"{solution_str}|{ground_truth}".encode()).hexdigest()[:8], 16) % 2 == 0
    return {"score": float(heads), "acc": heads}
