"""The one SFT loop: the local engine's cold start and the pipelines' SFT stages both run it.

:func:`sft_loop` trains a causal LM on (prompt ids, target ids) pairs: token-mean NLL of the
target given the left-padded prompt (:func:`sft_step`), AdamW with a **constant** learning rate
after a linear warmup, grad clip 1, batches drawn with replacement from ``random.Random(seed)``.
Every ``eval_every`` steps it calls ``evaluate(step) -> pass rate`` and, with ``min_pass``,
**stops at the first evaluation reaching it** -- the "learnable band" start the feasibility runs
found RL needs (an annealed, over-trained start gave RL no consistent gradient).
:func:`examples` reads veRL SFT rows (``messages``: the prompt turns plus one final assistant
turn; the loss covers the assistant tokens + EOS only, as veRL's ``MultiTurnSFTDataset`` masks).
Not covered: multi-turn losses on every assistant turn, packing, resuming inside a loop.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from core import numerics
from core.data import chat_ids, read_rows
from core.sampler import left_pad, response_logprobs

Example = tuple[list[int], list[int]]


def sft_step(
    model: torch.nn.Module,
    pad_id: int,
    prompts: list[list[int]],
    targets: list[list[int]],
    opt: torch.optim.Optimizer,
    sched: Any,
) -> torch.Tensor:
    """One SFT update: token-mean NLL of ``targets`` given left-padded ``prompts``, grad clip 1."""
    p_ids, p_mask = left_pad(prompts, pad_id)
    width = max(len(t) for t in targets)
    r_ids = torch.full((len(targets), width), pad_id, dtype=torch.long)
    r_mask = torch.zeros((len(targets), width), dtype=torch.long)
    for j, t in enumerate(targets):
        r_ids[j, : len(t)] = torch.tensor(t)
        r_mask[j, : len(t)] = 1
    logp, _ = response_logprobs(model, p_ids, p_mask, r_ids, r_mask)
    loss = -(logp * r_mask).sum() / r_mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss


@dataclass
class SftResult:
    """What a loop did: steps, why it stopped, the last pass rate and loss, and the eval history."""

    steps: int = 0
    stopped_by: str = "max_steps"
    last_pass: float = float("nan")
    last_loss: float = float("nan")
    history: list[list[float]] = field(default_factory=list)
    seconds: float = 0.0


def sft_loop(
    model: torch.nn.Module,
    pad_id: int,
    data: list[Example],
    *,
    seed: int,
    lr: float,
    betas: tuple[float, float],
    warmup_steps: int,
    batch_size: int,
    max_steps: int,
    eval_every: int,
    min_pass: float | None,
    evaluate: Callable[[int], float] | None,
    log: Callable[[str], None],
    tag: str,
) -> SftResult:
    """Train ``model`` on ``data`` in place; ``evaluate(step)`` is the sampled pass rate (see module)."""
    opt = numerics.adamw(model.parameters(), lr=lr, betas=tuple(betas))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(1, warmup_steps)))
    rng = random.Random(seed)
    res, t0 = SftResult(), time.time()
    model.train()
    while res.steps < max_steps:
        idx = [rng.randrange(len(data)) for _ in range(batch_size)]
        loss = sft_step(model, pad_id, [data[i][0] for i in idx], [data[i][1] for i in idx], opt, sched)
        res.steps += 1
        res.last_loss = float(loss.item())
        if evaluate is None or res.steps % eval_every:
            continue
        res.last_pass = evaluate(res.steps)
        res.history.append([res.steps, round(res.last_loss, 4), res.last_pass])
        stop = f" (stop at >= {min_pass:.2f})" if min_pass is not None else ""
        log(
            f"{tag} step {res.steps}: loss {res.last_loss:.3f}, sampled pass {res.last_pass:.2f}{stop}, "
            f"{time.time() - t0:.0f}s"
        )
        if min_pass is not None and res.last_pass >= min_pass:
            res.stopped_by = "min_pass"
            break
    res.seconds = round(time.time() - t0, 1)
    return res


def examples(path: str | Path, tokenizer: Any, max_prompt: int, max_resp: int) -> list[Example]:
    """(prompt ids, assistant ids + EOS) of each ``messages`` row; overlong rows raise, naming the row."""
    out = []
    for i, row in enumerate(read_rows(Path(path))):
        msgs = list(row["messages"])
        if not msgs or msgs[-1]["role"] != "assistant":
            raise ValueError(f"[sft] {path} row {i}: messages must end with an assistant turn")
        ids = chat_ids(tokenizer, msgs[:-1])
        tgt = tokenizer(msgs[-1]["content"] + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        if len(ids) > max_prompt or len(tgt) > max_resp:
            raise ValueError(
                f"[sft] {path} row {i}: prompt {len(ids)} / response {len(tgt)} tokens exceed "
                f"max_prompt_length={max_prompt} / max_response_length={max_resp} (fix: raise them "
                "in the stage's local: section or shorten the data)"
            )
        out.append((ids, tgt))
    if not out:
        raise ValueError(f"[sft] {path} has no rows (fix: check the stage that wrote it)")
    return out
