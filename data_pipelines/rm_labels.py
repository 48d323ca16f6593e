"""Step labels for process reward models, two ways, with their cost and their agreement.

- **Rule labels** (:func:`rule_labels`): a registered step format's checker
  (:mod:`data_pipelines.steps`) -- free, exact, only where a task's steps can be read by a program.
- **Monte-Carlo labels** (:func:`mc_labels`, Math-Shepherd, Wang et al. 2024, arXiv:2312.08935 §3.3):
  from the prefix ending at each step, ``k`` continuations by the policy, graded by the verifier;
  the step's value is the share that reach the right answer (soft), its hard label whether any
  does. The last step's label is the response's own outcome (no continuation needed). Cost:
  ``k`` samples per non-final step -- the "rollouts x steps" seed 004 §8 prices.
- :func:`agreement` -- percent agreement and Cohen's kappa (``statsmodels``) between two label
  sources over the steps both label.
Not covered: human labels, the three-class (positive/neutral/negative) PRM800K scheme.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.sampling import Sampler, score_text
from data_pipelines.steps import Step, StepFormat


@dataclass
class Cost:
    """What a label source spent: labels produced, policy samples and tokens generated, seconds."""

    labels: int = 0
    samples: int = 0
    tokens: int = 0
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        per = self.samples / self.labels if self.labels else float("nan")
        tok = self.tokens / self.labels if self.labels else float("nan")
        return {
            "labels": self.labels,
            "samples": self.samples,
            "tokens": self.tokens,
            "seconds": self.seconds,
            "samples_per_label": per,
            "tokens_per_label": tok,
            **self.extra,
        }


def rule_labels(
    fmt: StepFormat, steps: list[Step], ground_truth: str, extra_info: dict[str, Any]
) -> list[bool | None]:
    """The format's rule labels for ``steps`` (all ``None`` when the format has no checker)."""
    if fmt.check is None:
        return [None] * len(steps)
    return fmt.check(steps, ground_truth, extra_info)


@dataclass
class Item:
    """One response to label: its prompt ids, text, steps, verifier outcome and prompt record."""

    prompt_ids: list[int]
    text: str
    steps: list[Step]
    acc: bool
    prompt: Any  # core.data.Prompt (what the reward function needs)


def mc_labels(
    items: Sequence[Item],
    sampler: Sampler,
    reward_fn: Callable[..., Any],
    k: int,
    max_new_tokens: int,
    batch_prompts: int = 32,
) -> tuple[list[list[float]], Cost]:
    """Soft Monte-Carlo values per step of each item (the share of ``k`` continuations graded right).

    Continuations start from the prompt plus the response text up to each non-final step's end,
    tokenized by the sampler's tokenizer; the final step takes the item's own outcome.
    """
    t0 = time.perf_counter()
    tok = sampler.tokenizer
    jobs: list[tuple[int, int, list[int], str]] = []  # (item, step, prefix ids, prefix text)
    for i, it in enumerate(items):
        for j, st in enumerate(it.steps[:-1]):
            prefix = it.text[: st.end]
            ids = tok(prefix, add_special_tokens=False)["input_ids"]
            jobs.append((i, j, list(it.prompt_ids) + list(ids), prefix))
    values = [[float(it.acc)] * len(it.steps) for it in items]
    cost = Cost()
    for s in range(0, len(jobs), batch_prompts):
        chunk = jobs[s : s + batch_prompts]
        comps = sampler.generate([c[2] for c in chunk], k, max_new_tokens, batch=batch_prompts)
        for q, (i, j, _, prefix) in enumerate(chunk):
            outs = comps[q * k : (q + 1) * k]
            hits = 0
            for c in outs:
                text = prefix + tok.decode(c.ids, skip_special_tokens=True)
                hits += bool(score_text(reward_fn, items[i].prompt, text)[1])
                cost.tokens += len(c.ids) + int(c.eos)
            values[i][j] = hits / k
            cost.samples += k
    cost.labels = sum(len(it.steps) for it in items)
    cost.seconds = time.perf_counter() - t0
    cost.extra = {"k": k, "continued_steps": len(jobs)}
    return values, cost


def agreement(a: Sequence[bool | None], b: Sequence[bool | None]) -> dict[str, float]:
    """Agreement of two label lists over positions both label: share equal, Cohen's kappa, count.

    >>> agreement([True, False, None, True], [True, True, False, True])["agree"]
    0.6666666666666666
    """
    from statsmodels.stats.inter_rater import cohens_kappa  # statsmodels loads in ~1 s; only this needs it

    pairs = [(bool(x), bool(y)) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not pairs:
        return {
            "n": 0,
            "agree": float("nan"),
            "kappa": float("nan"),
            "a_pos": float("nan"),
            "b_pos": float("nan"),
        }
    table = np.zeros((2, 2))
    for x, y in pairs:
        table[int(x), int(y)] += 1
    agree = float(np.trace(table) / len(pairs))
    single = (table.sum(0) == len(pairs)).any() or (table.sum(1) == len(pairs)).any()
    kappa = float("nan") if single else float(cohens_kappa(table).kappa)
    return {
        "n": len(pairs),
        "agree": agree,
        "kappa": kappa,
        "a_pos": float(table[1].sum() / len(pairs)),
        "b_pos": float(table[:, 1].sum() / len(pairs)),
    }
