"""The project's OmegaConf resolvers, registered on import (``core.compose`` imports this module).

A size written as a relation to another follows it when a scale profile changes it:

- ``${rlvr.mul:a,b}`` = a * b and ``${rlvr.div:a,b}`` = a / b (whole numbers; a division that is
  not exact fails by the key's full name): DAPO's generation batch is
  ``${rlvr.mul:${data.train_batch_size},3}``, a recipe's mini-batch
  ``${rlvr.div:${data.train_batch_size},16}`` for 16 updates per rollout.
- ``${rlvr.updates:<section>}``: optimizer updates per rollout of ``actor_rollout_ref.actor`` or
  ``critic`` (batch / mini-batch x epochs), read from the config root.
- ``${rlvr.sqrt_div:x,k}`` = x / sqrt(k): a learning rate for k updates per rollout from the one
  calibrated for a single update (the laptop profile's lr).
- ``${rlvr.token_budget:prompt,response,sp}`` = ceil((prompt + response) / sp): the smallest
  dynamic-batch token budget per GPU (``*_max_token_len_per_gpu``) veRL accepts for sequences of
  ``prompt + response`` tokens under Ulysses sequence parallelism ``sp`` (veRL multiplies the budget
  by ``sp`` and asserts it holds the longest sequence: ``utils/seqlen_balancing.py``); the GPU
  profiles derive every budget with it, so a budget follows the recipe's lengths.

Resolved configs (``config.yaml``, veRL's ``verl_config.yaml``) hold the plain numbers. Does not:
compose or validate anything.
"""

from __future__ import annotations

import math
from typing import Any

from omegaconf import OmegaConf


def _expr(name: str, args: tuple[object, ...], node: Any) -> str:
    """The interpolation as written (``${rlvr.div:${data.train_batch_size},16}``) and its values."""
    written = node._value() if node is not None else None
    values = f"${{{name}:{','.join(map(str, args))}}}"
    return values if not isinstance(written, str) or written == values else f"{written} = {values}"


def _whole(name: str, args: tuple[object, ...], node: Any) -> None:
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        raise ValueError(f"{_expr(name, args, node)}: takes whole numbers")


def mul(a: int, b: int, _node_: Any = None) -> int:
    """``${rlvr.mul:a,b}`` = a * b (whole numbers).

    >>> mul(512, 3)
    1536
    """
    _whole("rlvr.mul", (a, b), _node_)
    return a * b


def div(a: int, b: int, _node_: Any = None) -> int:
    """``${rlvr.div:a,b}`` = a / b, which must be a positive whole number.

    >>> div(512, 16)
    32
    >>> div(8, 16)
    Traceback (most recent call last):
    ...
    ValueError: ${rlvr.div:8,16}: 8 is not a positive multiple of 16 (fix: a batch size that is a multiple of 16)
    """
    _whole("rlvr.div", (a, b), _node_)
    if b <= 0 or a <= 0 or a % b:
        raise ValueError(
            f"{_expr('rlvr.div', (a, b), _node_)}: {a} is not a positive multiple of {b} "
            f"(fix: a batch size that is a multiple of {b})"
        )
    return a // b


def updates(section: str, _root_: Any = None) -> int:
    """``${rlvr.updates:actor_rollout_ref.actor}``: data.train_batch_size / ppo_mini_batch_size x ppo_epochs."""
    node = OmegaConf.select(_root_, section)
    batch, mini = int(_root_.data.train_batch_size), int(node.ppo_mini_batch_size)
    if mini <= 0 or batch % mini:
        raise ValueError(
            f"[{section}.ppo_mini_batch_size] ({mini}) does not divide data.train_batch_size ({batch}) "
            f"into whole updates per rollout (fix: a mini-batch size that divides {batch})"
        )
    return div(batch, mini) * int(node.ppo_epochs)


def sqrt_div(x: float, k: int) -> float:
    """``${rlvr.sqrt_div:x,k}`` = x / sqrt(k).

    >>> sqrt_div(1e-4, 16)
    2.5e-05
    """
    if not (isinstance(k, int) and k > 0):
        raise ValueError(f"${{rlvr.sqrt_div:{x},{k}}}: k must be a positive whole number")
    return float(x) / math.sqrt(k)


def token_budget(prompt: int, response: int, sp: int = 1, _node_: Any = None) -> int:
    """``${rlvr.token_budget:prompt,response,sp}`` = ceil((prompt + response) / sp) tokens per GPU.

    One full-length sequence per Ulysses group per micro-batch: veRL packs a micro-batch of up to
    budget x sp tokens and splits it over the sp ranks, so each GPU holds at most the budget.

    >>> token_budget(2048, 20480)
    22528
    >>> token_budget(2048, 20480, 8)
    2816
    """
    _whole("rlvr.token_budget", (prompt, response, sp), _node_)
    if prompt < 0 or response <= 0 or sp <= 0:
        raise ValueError(
            f"{_expr('rlvr.token_budget', (prompt, response, sp), _node_)}: lengths must be >= 0 (response > 0) "
            "and the sequence-parallel size >= 1 (fix: data.max_prompt_length, data.max_response_length, "
            "ulysses_sequence_parallel_size)"
        )
    return -(-(prompt + response) // sp)


#: The project's OmegaConf resolvers (registered on import of this module).
RESOLVERS = {
    "rlvr.mul": mul,
    "rlvr.div": div,
    "rlvr.updates": updates,
    "rlvr.sqrt_div": sqrt_div,
    "rlvr.token_budget": token_budget,
}


def register_resolvers() -> None:
    """Register :data:`RESOLVERS` with OmegaConf (idempotent)."""
    for name, fn in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


register_resolvers()
