"""reasoning-gym tasks (``reasoning_gym/<name>``, e.g. ``reasoning_gym/spell_backward``).

Generated with the ``reasoning-gym`` package's own generators (``reasoning_gym.create_dataset``),
seeded per (task, seed, split). ``data_source`` is ``reasoning_gym/<name>``; the ground truth is
the package's answer string; ``extra_info.rg_entry`` is the whole entry (question, answer,
metadata) as JSON, because several reasoning-gym scorers (``score_answer(answer, entry)``)
need the metadata. A curated set is registered in ``TASKS``; any other reasoning-gym dataset
name works through :func:`generate_reasoning_gym` (``make_data`` resolves
``reasoning_gym/<any>``). The package is imported only when rows are generated.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from data_pipelines.tasks import TASKS
from data_pipelines.tasks._common import derived_seed, make_row, resolve_template

PREFIX = "reasoning_gym/"
CURATED = (
    "spell_backward",
    "letter_counting",
    "word_sorting",
    "chain_sum",
    "basic_arithmetic",
    "number_sorting",
    "leg_counting",
    "gsm_symbolic",
    "base_conversion",
    "caesar_cipher",
    "word_sequence_reversal",
    "gcd",
    "lcm",
    "prime_factorization",
    "simple_equations",
)


def generate_reasoning_gym(
    task: str, n: int, seed: int, split: str, template: str = "r1_zero", **params: Any
) -> list[dict[str, Any]]:
    """``n`` rows of reasoning-gym dataset ``task``; ``params`` go to its config (e.g. ``min_word_len``)."""
    import reasoning_gym  # ~1.5 s; only its tasks need it (make data imports every task module)

    known = sorted(reasoning_gym.factory.DATASETS)
    if task not in known:
        raise KeyError(f"unknown reasoning-gym task {task!r}; known: {', '.join(known)}")
    tpl = resolve_template(template, ("answer_tag",), f"{PREFIX}{task}")
    ds = reasoning_gym.create_dataset(
        task, size=n, seed=derived_seed(PREFIX + task, seed, split) % 2**31, **params
    )
    rows = []
    for i, entry in enumerate(ds):
        rows.append(
            make_row(
                data_source=f"{PREFIX}{task}",
                question=entry["question"],
                answer=str(entry["answer"]),
                ability="reasoning",
                split=split,
                index=i,
                template=tpl,
                extra={"rg_task": task, "rg_entry": json.dumps(entry, ensure_ascii=False, default=str)},
            )
        )
    return rows


def task_for(name: str) -> Any:
    """The generator for ``reasoning_gym/<name>`` (registered or not)."""
    if not name.startswith(PREFIX):
        raise KeyError(f"{name!r} is not a reasoning-gym task name (they start with {PREFIX!r})")
    return functools.partial(generate_reasoning_gym, name[len(PREFIX) :])


for _name in CURATED:
    TASKS.add(PREFIX + _name, functools.partial(generate_reasoning_gym, _name))
