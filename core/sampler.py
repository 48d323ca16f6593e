"""KV-cache sampling and response log-probabilities: the kernel of the local engine and of the
``local`` sampler of :mod:`core.sampling` (so evaluation, filtering and training sample alike).

:func:`generate` left-pads a batch of prompts, runs the prompt prefill **once per prompt** and
repeats the KV cache for the ``n`` samples of a group (prefill sharing), then decodes token by
token with temperature / top-k / top-p; a row that produced EOS is dropped from the batch and
the KV cache at once (no compute on finished rows), and decoding stops when none is left. It returns the
log-probability of each sampled token under the temperature-scaled, *unfiltered* distribution
(what veRL's actor recomputes as ``old_log_probs``), so no second forward pass is needed for them.
The response mask is built **by position** (every token up to and including the first EOS),
never by pad id: a model that samples ``<|pad|>`` mid-response keeps a consistent mask.

:func:`response_logprobs` recomputes per-token log-probs (and entropy) for training, applying
the LM head only to response positions (no logits for prompt positions).
Not covered: beam search, repetition penalties, stop strings other than EOS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class Rollout:
    """A batch of sampled responses (rows are grouped: ``n`` consecutive rows per prompt).

    Attributes:
        prompts: (B, P) left-padded prompt ids.
        prompt_mask: (B, P) 1 on real prompt tokens.
        responses: (B, R) sampled ids; positions after the first EOS hold ``pad_id``.
        response_mask: (B, R) 1 up to and including the first EOS (by position).
        old_log_probs: (B, R) log-prob of each sampled token at sampling time (0 where masked).
    """

    prompts: torch.Tensor
    prompt_mask: torch.Tensor
    responses: torch.Tensor
    response_mask: torch.Tensor
    old_log_probs: torch.Tensor

    @property
    def response_lengths(self) -> torch.Tensor:
        return self.response_mask.sum(-1)


def left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists into (ids, mask) tensors."""
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[i, width - len(s) :] = 1
    return ids, mask


def _stops(eos_id: int | Sequence[int]) -> torch.Tensor:
    ids = list(eos_id) if isinstance(eos_id, (list, tuple, set, frozenset)) else [int(eos_id)]
    return torch.tensor(ids, dtype=torch.long)


def position_mask(tokens: torch.Tensor, eos_id: int | Sequence[int]) -> torch.Tensor:
    """1 for every position up to and including the first EOS of each row (all 1 if no EOS);
    ``eos_id`` may be several stop ids (a chat model's end-of-turn and end-of-text).

    >>> position_mask(torch.tensor([[5, 2, 0, 2], [5, 5, 5, 5]]), eos_id=2).tolist()
    [[1, 1, 0, 0], [1, 1, 1, 1]]
    >>> position_mask(torch.tensor([[5, 3, 0, 2], [5, 2, 5, 5]]), eos_id=[2, 3]).tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0]]
    """
    is_eos = torch.isin(tokens, _stops(eos_id)).long()
    before = torch.cumsum(is_eos, dim=-1) - is_eos  # number of EOS strictly before each position
    return (before == 0).long()


def _filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    if top_k is not None and 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, idx = torch.sort(logits, descending=True, dim=-1)
        probs = sorted_logits.softmax(-1)
        drop = (probs.cumsum(-1) - probs) > top_p  # keep the smallest prefix with mass >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, idx, sorted_logits)
    return logits


@torch.no_grad()
def generate(
    model: torch.nn.Module,
    prompts: list[list[int]],
    n: int,
    max_new_tokens: int,
    eos_id: int | Sequence[int],
    pad_id: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    top_k: int = -1,
    do_sample: bool = True,
    generator: torch.Generator | None = None,
) -> Rollout:
    """Sample ``n`` responses per prompt with a KV cache (rows ``i*n .. i*n+n-1`` share prompt ``i``).

    ``do_sample=False`` (or ``temperature == 0``) decodes greedily; log-probs are then those of
    the untempered distribution. ``eos_id``: the stop token id, or several.
    """
    stops = _stops(eos_id)
    greedy = (not do_sample) or temperature == 0
    scale = 1.0 if greedy else float(temperature)
    ids, mask = left_pad(prompts, pad_id)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1)
    cache = out.past_key_values
    if n > 1:
        cache.batch_repeat_interleave(n)
    logits = out.logits[:, -1].repeat_interleave(n, dim=0)
    attn = mask.repeat_interleave(n, dim=0)
    next_pos = pos[:, -1:].repeat_interleave(n, dim=0) + 1
    rows = attn.shape[0]
    tokens = torch.full((rows, max_new_tokens), pad_id, dtype=torch.long)
    logps = torch.zeros((rows, max_new_tokens))
    active = torch.arange(rows)  # cache row k holds sample active[k]; finished samples are dropped
    steps = 0
    for t in range(max_new_tokens):
        logp_all = torch.log_softmax(logits.float() / scale, dim=-1)
        if greedy:
            tok = logp_all.argmax(-1)
        else:
            filt = _filter_logits(logits.float() / scale, top_k, top_p)
            tok = torch.multinomial(filt.softmax(-1), 1, generator=generator).squeeze(-1)
        tokens[active, t] = tok
        logps[active, t] = logp_all.gather(-1, tok[:, None]).squeeze(-1)
        steps = t + 1
        alive = ~torch.isin(tok, stops)
        if not bool(alive.any()) or t == max_new_tokens - 1:
            break
        if not bool(alive.all()):  # prune finished rows from the batch and the KV cache
            keep = alive.nonzero().squeeze(-1)
            cache.batch_select_indices(keep)
            active, tok, attn, next_pos = active[keep], tok[keep], attn[keep], next_pos[keep]
        attn = torch.cat([attn, torch.ones((attn.shape[0], 1), dtype=attn.dtype)], dim=1)
        out = model(
            input_ids=tok[:, None],
            attention_mask=attn,
            position_ids=next_pos,
            past_key_values=cache,
            use_cache=True,
        )
        cache = out.past_key_values
        logits = out.logits[:, -1]
        next_pos = next_pos + 1
    tokens, logps = tokens[:, :steps], logps[:, :steps]
    rmask = position_mask(tokens, eos_id)
    tokens = torch.where(rmask.bool(), tokens, torch.full_like(tokens, pad_id))
    return Rollout(
        prompts=ids.repeat_interleave(n, dim=0),
        prompt_mask=mask.repeat_interleave(n, dim=0),
        responses=tokens,
        response_mask=rmask,
        old_log_probs=logps * rmask,
    )


def response_logprobs(
    model: torch.nn.Module,
    prompts: torch.Tensor,
    prompt_mask: torch.Tensor,
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    temperature: float = 1.0,
    with_entropy: bool = False,
    group: int = 1,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probs (B, R) of ``responses`` (and entropy if asked) under ``model``.

    The LM head runs only on the R positions that predict response tokens (the causal LM's own
    forward with ``logits_to_keep``, so any HF causal LM works, whatever its module names and
    whatever it does after the head, e.g. logit soft-capping). With ``group=n``
    (rows ``i*n .. i*n+n-1`` share one prompt) the prompt is encoded once per group and its KV
    cache repeated for the n responses, with gradients flowing through the shared prompt.
    Logits are divided by ``temperature`` as veRL's actor does.
    """
    P = prompts.shape[1]
    R = responses.shape[1]
    attn = torch.cat([prompt_mask, response_mask], dim=1)
    if group > 1:
        pm = prompt_mask[::group]
        pos_p = (pm.cumsum(-1) - 1).clamp(min=0)
        out = model(
            input_ids=prompts[::group],
            attention_mask=pm,
            position_ids=pos_p,
            use_cache=True,
            logits_to_keep=1,
        )
        cache = out.past_key_values
        cache.batch_repeat_interleave(group)
        pos_r = pos_p[:, -1:].repeat_interleave(group, dim=0) + 1 + torch.arange(R)[None]
        logits_r = model(
            input_ids=responses,
            attention_mask=attn,
            position_ids=pos_r,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=torch.arange(R - 1),
        ).logits
        logits = torch.cat([out.logits.repeat_interleave(group, dim=0), logits_r], dim=1)
    else:
        ids = torch.cat([prompts, responses], dim=1)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids,
            attention_mask=attn,
            position_ids=pos,
            logits_to_keep=torch.arange(P - 1, P + R - 1),
        ).logits
    logits = logits.float()
    if temperature and temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1)
    token_logp = logp.gather(-1, responses[..., None]).squeeze(-1)
    entropy = None
    if with_entropy:
        entropy = -(logp.exp() * logp).sum(-1)
    return token_logp, entropy


def cat_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Concatenate rollouts, left-padding prompts and right-padding responses to common widths."""
    P = max(r.prompts.shape[1] for r in parts)
    R = max(r.responses.shape[1] for r in parts)

    def lp(x: torch.Tensor, w: int, v: int) -> torch.Tensor:
        return torch.nn.functional.pad(x, (w - x.shape[1], 0), value=v)

    def rp(x: torch.Tensor, w: int, v: float) -> torch.Tensor:
        return torch.nn.functional.pad(x, (0, w - x.shape[1]), value=v)

    return Rollout(
        prompts=torch.cat([lp(r.prompts, P, pad_id) for r in parts]),
        prompt_mask=torch.cat([lp(r.prompt_mask, P, 0) for r in parts]),
        responses=torch.cat([rp(r.responses, R, pad_id) for r in parts]),
        response_mask=torch.cat([rp(r.response_mask, R, 0) for r in parts]),
        old_log_probs=torch.cat([rp(r.old_log_probs, R, 0.0) for r in parts]),
    )


def select(r: Rollout, idx: list[int]) -> Rollout:
    """The rows ``idx`` of a rollout."""
    t = torch.tensor(idx, dtype=torch.long)
    return Rollout(r.prompts[t], r.prompt_mask[t], r.responses[t], r.response_mask[t], r.old_log_probs[t])
