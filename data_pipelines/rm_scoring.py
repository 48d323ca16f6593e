"""Score responses with a trained reward model: text in, one number per response per reading out.

The one place that turns a response text into a reward model's score, so best-of-N selection
(``analysis.tts``) and the local engine's learned reward (``recipes.local.rm_reward``) read a
model the same way it was trained (``recipes.rm_train``): the prompt's chat-template ids, the
response re-tokenized from its text plus EOS (:func:`core.reward_model.encode`, what veRL's
reward loop does with a reward model too: it decodes and re-tokenizes), ``P(good)`` per token,
then an aggregation (:data:`core.reward_model.AGGREGATIONS`) over the step boundaries of the
response's step format (:mod:`data_pipelines.steps`).
Not covered: batching across several reward models in one forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from core import reward_model as rmod
from data_pipelines.steps import step_format


def default_aggregates(rm: rmod.RewardModel) -> tuple[str, ...]:
    """The readings of a reward model: ``last`` for an ORM, ``min_step`` and ``last_step`` for a PRM."""
    return ("last",) if rm.info.kind == "orm" else ("min_step", "last_step")


def score_texts(
    rm: rmod.RewardModel,
    prompt_ids: Sequence[Sequence[int]],
    texts: Sequence[str],
    data_sources: Sequence[str],
    aggregates: Sequence[str] | None = None,
    step_format_name: str | None = None,
    batch: int = 64,
) -> dict[str, list[float]]:
    """``{aggregation: [score per response]}`` for each (prompt ids, response text, data source)."""
    aggs = tuple(aggregates or default_aggregates(rm))
    fmt_name = step_format_name or rm.info.step_format
    ids, bounds = [], []
    for text, src in zip(texts, data_sources, strict=True):
        r_ids, ends = rmod.encode(rm.tokenizer, text)
        ids.append(r_ids)
        needs_steps = any(a != "last" for a in aggs)
        steps = step_format(fmt_name, src).split(text) if needs_steps else []
        bounds.append(rmod.boundary_tokens(ends, [s.end for s in steps]))
    probs = rmod.token_probs(rm, prompt_ids, ids, batch=batch)
    return {a: [rmod.aggregate(a, p, b) for p, b in zip(probs, bounds, strict=True)] for a in aggs}
