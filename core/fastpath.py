"""The local engine's fast path (``local.fast``): the same numbers as the plain path, less work.

- :func:`bucketed_logprobs`: response log-probs of a batch computed in length buckets. A batch's
  rows are padded to its longest response, so when lengths are spread most of the forward and
  backward work is on padding (r1_zero at laptop scale: most of each group of 8). The rows are
  sorted by response length and split into contiguous chunks, each run through
  :func:`core.sampler.response_logprobs` with its prompts and responses trimmed to the chunk's own
  widths (each row's whole sequence in one forward); the per-row results are scattered back into
  the (B, R) layout, 0 where masked. Causal attention and the masks make a row's log-probs
  independent of the other rows and of padding, so losses and gradients are unchanged up to float
  rounding. :func:`plan` chooses the chunks by dynamic programming on a cost model (a fixed
  per-call cost in token-equivalents plus one per token computed) and keeps the single call with
  the prompt encoded once per group when that is estimated cheaper.
- :func:`decoding`: a context for sampling -- ``torch.inference_mode`` and the model's *eager*
  attention (for one-token decoding steps it has less per-call overhead than SDPA's kernel). The
  generator's draws are the same, and the probabilities agree up to float rounding, so the same
  tokens are sampled unless a draw falls within rounding of a boundary between two tokens;
  :func:`plain_rollout` turns the inference tensors back into ordinary ones for training.
Not covered: packing several rows into one sequence (needs per-sequence attention masks),
``torch.compile`` (its compile time was not paid back within a laptop run).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields

import torch

from core.sampler import Rollout, response_logprobs

#: fixed cost of one forward+backward call in token-equivalents: on the laptop models (4-layer
#: Qwen2s of ~1M parameters, one thread) a call of a few tokens cost about as much as ~90 more
#: tokens of a large call
CALL_OVERHEAD_TOKENS = 96


def plan(
    prompt_lens: list[int], resp_lens: list[int], overhead: int = CALL_OVERHEAD_TOKENS
) -> list[list[int]]:
    """Rows split into chunks (lists of row indices, shortest responses first) minimising
    ``sum(overhead + rows * (max prompt + max response))`` over contiguous runs of the sorted rows.

    >>> plan([4] * 4, [1, 50, 2, 48], overhead=10)
    [[0, 2], [3, 1]]
    >>> plan([4] * 4, [10, 11, 12, 13], overhead=10)
    [[0, 1, 2, 3]]
    """
    order = sorted(range(len(resp_lens)), key=lambda i: (resp_lens[i], i))
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cost of the first j sorted rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        max_p = 0
        for i in range(j, 0, -1):  # chunk = sorted rows i-1 .. j-1
            max_p = max(max_p, prompt_lens[order[i - 1]])
            c = best[i - 1] + overhead + (j - i + 1) * (max_p + resp_lens[order[j - 1]])
            if c < best[j]:
                best[j], cut[j] = c, i - 1
    chunks, j = [], n
    while j > 0:
        chunks.append(order[cut[j] : j])
        j = cut[j]
    return chunks[::-1]


def plan_cost(prompt_lens: list[int], resp_lens: list[int], chunks: list[list[int]]) -> float:
    """The cost model of :func:`plan` for given chunks."""
    return sum(
        CALL_OVERHEAD_TOKENS + len(c) * (max(prompt_lens[i] for i in c) + max(resp_lens[i] for i in c))
        for c in chunks
    )


def grouped_cost(prompt_width: int, resp_width: int, rows: int, group: int) -> float:
    """The same cost model for one padded call with the prompt encoded once per group (two calls)."""
    return 2 * CALL_OVERHEAD_TOKENS + (rows // group) * prompt_width + rows * resp_width


def bucketed_logprobs(
    model: torch.nn.Module,
    prompts: torch.Tensor,
    prompt_mask: torch.Tensor,
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    temperature: float = 1.0,
    with_entropy: bool = False,
    group: int = 1,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`core.sampler.response_logprobs` of the batch (left-padded prompts, right-padded
    responses; rows grouped by ``group`` per prompt), computed chunk by chunk as :func:`plan`
    splits it -- or in one grouped call when the cost model says so; masked positions hold 0."""
    p_len = prompt_mask.sum(-1).tolist()
    r_len = response_mask.sum(-1).tolist()
    B, R = responses.shape
    P = prompts.shape[1]
    chunks = plan(p_len, r_len)
    mask = response_mask.to(torch.float32)
    if group > 1 and grouped_cost(max(p_len), max(r_len), B, group) <= plan_cost(p_len, r_len, chunks):
        lp, ent = response_logprobs(
            model, prompts, prompt_mask, responses, response_mask, temperature, with_entropy, group
        )
        return lp * mask, None if ent is None else ent * mask
    lp_parts, ent_parts, rows = [], [], []
    for chunk in chunks:
        idx = torch.tensor(chunk, dtype=torch.long)
        wp = max(max(p_len[i] for i in chunk), 1)
        wr = max(max(r_len[i] for i in chunk), 1)
        lp, ent = response_logprobs(
            model,
            prompts[idx, P - wp :],
            prompt_mask[idx, P - wp :],
            responses[idx, :wr],
            response_mask[idx, :wr],
            temperature,
            with_entropy=with_entropy,
        )
        lp_parts.append(torch.nn.functional.pad(lp, (0, R - wr)))
        if ent is not None:
            ent_parts.append(torch.nn.functional.pad(ent, (0, R - wr)))
        rows += chunk
    inv = torch.empty(B, dtype=torch.long)
    inv[torch.tensor(rows, dtype=torch.long)] = torch.arange(B)
    lp = torch.cat(lp_parts)[inv] * mask
    ent = torch.cat(ent_parts)[inv] * mask if ent_parts else None
    return lp, ent


@contextmanager
def decoding(model: torch.nn.Module) -> Iterator[None]:
    """Sampling with ``torch.inference_mode`` and eager attention (restored on exit; a model without
    transformers' ``set_attn_implementation`` keeps its own)."""
    swap = hasattr(model, "set_attn_implementation")
    before = model.config._attn_implementation if swap else None
    if swap:
        model.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            yield
    finally:
        if swap:
            model.set_attn_implementation(before)


def plain_rollout(ro: Rollout) -> Rollout:
    """A rollout made under ``torch.inference_mode`` as ordinary tensors (usable by autograd)."""
    with torch.inference_mode(False):
        return Rollout(**{f.name: getattr(ro, f.name).clone() for f in fields(ro)})
