"""``sum_question``: "What is 7 + 12?" as a person would ask a chat model, graded by the math verifier.

The task for a real instruct model (SmolLM2-135M-Instruct, ``model=smollm2_135m``), which answers
in prose: rows use ``data_source="math"``, whose verifier credits the answer where a reply states
it -- ``Answer: 19``, ``The answer is 19``, ``\\boxed{19}`` -- and refuses a bare ``7 + 12 = 19``
(no answer marker). The default template is ``dapo`` (the last line ``Answer: <answer>``). Terms
are drawn uniformly from ``[lo, hi]``; the held-out partition
(:func:`~data_pipelines.tasks._common.held_out` of the question) keeps test questions out of the
train split, and test questions are distinct. ``extra_info`` records ``terms``.
Not covered: subtraction, multiplication, numbers written in words.
"""

from __future__ import annotations

from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import draw_in_split, make_row, resolve_template, task_rng

#: the answer formats the math verifier reads
ACCEPTED = ("answer_line", "boxed", "answer_tag")


def question(terms: list[int]) -> str:
    """The question for ``terms``.

    >>> question([7, 12])
    'What is 7 + 12?'
    """
    return f"What is {' + '.join(map(str, terms))}?"


@TASKS.register("sum_question")
def generate(
    n: int, seed: int, split: str, template: str = "dapo", lo: int = 1, hi: int = 19, k: int = 2
) -> list[dict[str, Any]]:
    """``n`` rows for ``split``; deterministic in (seed, split, params).

    Args:
        n: number of rows.
        seed: master seed (train and test draw from different streams).
        split: ``"test"`` draws distinct questions from the held-out partition; any other split
            draws outside it (repeats allowed).
        template: prompt template name (its answer format must be one the math verifier reads).
        lo, hi: the terms' range, inclusive.
        k: number of terms.
    """
    if not (0 <= lo <= hi and k >= 2):
        raise ValueError(f"[data] sum_question needs 0 <= lo ({lo}) <= hi ({hi}) and k ({k}) >= 2")
    tpl = resolve_template(template, ACCEPTED, "sum_question")
    rng = task_rng("sum_question", seed, split)
    seen: set[str] = set()
    rows = []
    for i in range(n):
        terms = draw_in_split(
            "sum_question", rng, split, lambda r: [r.randint(lo, hi) for _ in range(k)], question, seen
        )
        if terms is None:
            raise ValueError(
                f"[data] sum_question: no unseen held-out question left after {len(seen)} test rows "
                f"(lo={lo}, hi={hi}, k={k}); fix: fewer test rows or a wider range"
            )
        q = question(terms)
        seen.add(q)
        fields = {
            "question": q,
            "answer": str(sum(terms)),
            "split": split,
            "index": i,
            "extra": {"terms": terms},
        }
        rows.append(make_row(data_source="math", ability="math", template=tpl, **fields))
    return rows
