"""Corpus family ``chain_sum``: sums of k single-digit numbers written as web text would.

A document is either a *chat* turn (the user asks ``3+5+2+7``, as the RL prompt does) or *plain*
text. It answers either **directly** (one number) or **worked** (the chain of local steps of
:func:`data_pipelines.tasks.chain_sum.peel`), in one of three styles:

- ``peel``: ``3+5+2+7=8+2+7=10+7=17``
- ``check``: the chain, then ``check 10+7=17 ok`` (the last step redone)
- ``fix``: one step first written with a slip (``11+7``), then ``no 8+2=10 so 10+7`` and on

The answer sits in ``<think>...</think><answer>S</answer>`` (the RL prompt's R1-Zero format) only
in a ``tag`` share of the documents; otherwise it is bare. Direct answers are off by 1-3 in a
``direct_noise`` share (per k: hasty answers to long sums are often wrong); worked ones are right
(a ``fix`` repairs its slip). No document asks a held-out question: the test split's
partition (:func:`data_pipelines.tasks.chain_sum.split_terms`) is never written.
Defaults (mostly direct answers in chat, mostly worked ones in plain
text) are the laptop base model's design; they are parameters, not measurements. Not covered: other task families.
"""

from __future__ import annotations

import random

from data_pipelines.corpus import FAMILIES, Doc
from data_pipelines.corpus._mode import assistant_text, doc_meta, draw_mode, noise_levels
from data_pipelines.tasks.chain_sum import peel, question, split_terms

STYLES = ("peel", "check", "fix")


def worked_text(terms: list[int], style: str, rng: random.Random) -> str:
    """The worked chain for ``terms`` in ``style`` (see module).

    >>> worked_text([3, 5, 2], "check", random.Random(0))
    '3+5+2=8+2=10 check 8+2=10 ok'
    """
    chain = peel(terms)
    if style == "peel" or len(chain) < 3:
        return "=".join(chain)
    if style == "check":
        last = chain[-2]
        return f"{'='.join(chain)} check {last}={chain[-1]} ok"
    if style == "fix":
        i = rng.randrange(
            1, len(chain) - 1
        )  # a step with a sum to slip on (not the question, not the answer)
        prev, cur = chain[i - 1].split("+"), chain[i].split("+")
        wrong = "+".join([str(int(cur[0]) + rng.choice((-1, 1))), *cur[1:]])
        fix = f"{wrong} no {prev[0]}+{prev[1]}={cur[0]} so {chain[i]}"
        return "=".join([*chain[:i], fix, *chain[i + 1 :]])
    raise ValueError(f"[local.pretrain.corpus.params.chain_sum] unknown style {style!r}; known: {STYLES}")


@FAMILIES.register("chain_sum")
def write(
    rng: random.Random,
    ks: list[int] | None = None,
    lo: int = 1,
    hi: int = 9,
    chat: float = 0.6,
    worked_chat: float = 0.25,
    worked_plain: float = 0.85,
    tag: float = 0.7,
    tag_plain: float = 0.2,
    styles: list[float] | None = None,
    direct_noise: float | list[float] = 0.0,
) -> Doc:
    """One document (see module); every share is a probability drawn per document from ``rng``.

    ``direct_noise``: the share of direct answers that are off by 1-3, one value or one per ``ks``.
    """
    ks = [int(k) for k in (ks or range(2, 9))]
    noise = noise_levels(
        direct_noise,
        len(ks),
        "local.pretrain.corpus.params.chain_sum.direct_noise",
        "one value, or one per k",
    )
    ki = rng.randrange(len(ks))
    terms = split_terms(rng, "pretrain", [ks[ki]], lo, hi)  # never a held-out (test) prompt
    total, q = sum(terms), question(terms)
    mode = draw_mode(rng, chat, worked_chat, worked_plain, tag, tag_plain)
    worked = mode.worked
    style = rng.choices(STYLES, styles or [0.7, 0.15, 0.15])[0] if worked else "direct"
    style = "peel" if worked and len(terms) < 3 else style  # one step: nothing to check or fix
    answer, correct = total, True
    if not worked and rng.random() < noise[ki]:
        answer, correct = total + rng.choice((-3, -2, -1, 1, 2, 3)), False
    body = worked_text(terms, style, rng) if worked else ""
    out = assistant_text(mode, body, str(answer))
    meta = {**doc_meta("chain_sum", len(terms), mode, style, correct), "question": q}
    tagged = mode.tagged
    if mode.chat:
        return Doc(q, out, meta)
    if worked and not tagged:
        return Doc(None, out, meta)  # the chain starts with the question
    return Doc(None, f"{q}={out}" if not tagged else f"{q} {out}", meta)
