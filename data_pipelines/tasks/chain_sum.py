"""``chain_sum``: the sum of k single-digit numbers (``"3+5+2+7"`` -> ``"17"``), k = difficulty.

The laptop *base* model's RL task. Its worked solution is a chain of local steps -- add the first
two terms, copy the rest (``3+5+2+7=8+2+7=10+7=17``) -- each step a small fact next to the one
before it, while a direct answer must sum all k terms in one token position, which a ~1M-parameter
model cannot do reliably for large k. So more worked steps make a correct answer likelier: the
setting in which an outcome reward alone can select longer responses (R1-Zero's curve).

Rows use ``data_source="arithmetic"`` (its verifier reads the integer answer) and record ``terms``
and ``k`` in ``extra_info``. :func:`peel` writes the worked chain; :func:`sft_response` the
worked solution in the R1-Zero tag format. Not covered: multi-digit terms, subtraction.
"""

from __future__ import annotations

import random
from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import draw_in_split, make_row, resolve_template, task_rng


def draw_terms(rng: random.Random, k: int, lo: int = 1, hi: int = 9) -> list[int]:
    """``k`` terms uniform in ``[lo, hi]``."""
    return [rng.randint(lo, hi) for _ in range(k)]


def split_terms(
    rng: random.Random, split: str, ks: list[int], lo: int, hi: int, seen: set[str] | None = None
) -> list[int]:
    """Terms for one prompt of ``split``: a test prompt from the held-out partition
    (:func:`~data_pipelines.tasks._common.held_out`) and not in ``seen`` (test prompts are
    distinct); any other split's prompt (and every pretraining document) from outside it.

    Raises ``ValueError`` when the held-out partition has no unseen prompt left.
    """
    terms = draw_in_split(
        "chain_sum", rng, split, lambda r: draw_terms(r, r.choice(ks), lo, hi), question, seen
    )
    if terms is not None:
        return terms
    raise ValueError(
        f"[data] chain_sum ks={ks} lo={lo} hi={hi}: no distinct held-out prompt left after {len(seen or ())} "
        "(fix: fewer test rows, local.task.val_n / n_test, or a wider task: more ks or a larger hi)"
    )


def question(terms: list[int]) -> str:
    """The question text.

    >>> question([3, 5, 2])
    '3+5+2'
    """
    return "+".join(map(str, terms))


def peel(terms: list[int]) -> list[str]:
    """The chain of expressions from the question to the sum, one addition per step.

    >>> peel([3, 5, 2, 7])
    ['3+5+2+7', '8+2+7', '10+7', '17']
    """
    out, rest = [question(terms)], list(terms)
    while len(rest) > 1:
        rest = [rest[0] + rest[1], *rest[2:]]
        out.append(question(rest))
    return out


def sft_response(extra_info: dict[str, Any]) -> str:
    """The worked solution in the R1-Zero format (a cold start on this task would train on it).

    >>> sft_response({"terms": [3, 5, 2]})
    '<think>3+5+2=8+2=10</think><answer>10</answer>'
    """
    terms = [int(t) for t in extra_info["terms"]]
    return f"<think>{'='.join(peel(terms))}</think><answer>{sum(terms)}</answer>"


@TASKS.register("chain_sum")
def generate(
    n: int,
    seed: int,
    split: str,
    template: str = "plain",
    ks: list[int] | None = None,
    lo: int = 1,
    hi: int = 9,
) -> list[dict[str, Any]]:
    """``n`` rows; each picks k uniformly from ``ks`` (default 2..8); deterministic in (seed, split, params).

    The test split's prompts are distinct and come from the held-out partition, every other
    split's from outside it (:func:`split_terms`), so train and test never share a prompt and
    prefix-stable in ``n``. When a short k's held-out prompts run out, test rows draw longer ks.
    """
    ks = [int(k) for k in (ks or range(2, 9))]
    if not ks or any(k < 2 or k > 16 for k in ks):
        raise ValueError(f"[data] chain_sum ks must be a non-empty list of 2..16, got {ks}")
    if not 0 <= lo <= hi <= 9:
        raise ValueError(f"[data] chain_sum needs 0 <= lo ({lo}) <= hi ({hi}) <= 9 (single-digit terms)")
    tpl = resolve_template(template, ("answer_tag",), "chain_sum")
    rng = task_rng("chain_sum", seed, split)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i in range(n):
        terms = split_terms(rng, split, ks, lo, hi, seen)
        seen.add(question(terms))
        rows.append(
            make_row(
                data_source="arithmetic",
                question=question(terms),
                answer=str(sum(terms)),
                ability="math",
                split=split,
                index=i,
                template=tpl,
                extra={"terms": terms, "k": len(terms), "digits": len(terms)},
            )
        )
    return rows
