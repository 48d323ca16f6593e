"""s1-style budget forcing on top of any sampler of :mod:`core.sampling` (test-time scaling).

``budget_force`` implements s1's budget forcing (Muennighoff et al. 2025, arXiv:2501.19393,
sec. 3.1): while the thinking is shorter than ``min_think`` tokens, an end of thinking (the
``think_end`` delimiter or EOS) is removed and ``wait_text`` appended, and sampling continues;
at ``max_think`` thinking tokens the thinking is cut and closed with ``think_end``, then the
answer is sampled (up to ``max_answer`` tokens). It works on text, re-tokenising the kept
prefix, so it needs no special tokens; with BPE tokenisers the re-encoded prefix can differ
from the sampled ids in rare merges (the text is identical). Not covered: beam search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.sampling import Completion, Sampler


@dataclass
class Forced:
    """A completion after budget forcing: text, thinking tokens and how often 'Wait' was added."""

    text: str
    think_tokens: int
    waits: int
    truncated: bool


@dataclass
class _Row:
    prompt: list[int]
    think: str = ""
    answer: str | None = None
    waits: int = 0
    truncated: bool = False
    phase: str = "think"


def _advance(
    r: _Row, comp: Completion, dec: Any, enc: Any, end: str, wait: str, limits: tuple[int, int, int]
) -> None:
    """Move one row's state machine (think -> answer -> done) by one sampled continuation."""
    lo, hi, max_answer = limits
    if r.phase == "answer":
        r.answer = (r.answer or "") + dec(comp.ids)
        r.phase = "done"
        return
    head, sep, tail = dec(comp.ids).partition(end)
    r.think += head
    n_think = len(enc(r.think))
    if (sep or comp.eos) and n_think < lo:  # ended too early: suppress the end, add "Wait"
        r.think, r.waits = r.think + wait, r.waits + 1
    elif sep:
        r.answer = tail
        r.phase = "done" if comp.eos or len(enc(tail)) >= max_answer else "answer"
    elif comp.eos:  # finished without the delimiter and long enough: keep as is
        r.phase = "done"
    elif n_think >= hi:  # budget spent: close the thinking and sample the answer
        r.answer, r.truncated, r.phase = "", True, "answer"


def budget_force(
    sampler: Sampler, prompts: list[list[int]], n: int, budget: dict[str, Any], max_tokens: int
) -> list[Forced]:
    """Sample ``n`` completions per prompt under s1 budget forcing (see module docstring).

    Each row is a small state machine (think -> answer -> done); rows in the same phase are
    sampled together, one continuation each, until all are done.
    """
    tok = sampler.tokenizer
    end = str(budget.get("think_end") or "</think>")
    wait = str(budget.get("wait_text") or " Wait")
    lo = int(budget.get("min_think") or 0)
    hi = int(budget.get("max_think") or max_tokens)
    max_answer = int(budget.get("max_answer") or max_tokens)

    def enc(text: str) -> list[int]:
        return list(tok.encode(text, add_special_tokens=False)) if text else []

    def dec(ids: list[int]) -> str:
        return tok.decode(ids, skip_special_tokens=False)

    rows = [_Row(prompts[i // n]) for i in range(len(prompts) * n)]
    results = dict(enumerate(sampler.generate(prompts, n, hi)))
    for _ in range(lo + 16):  # each "Wait" adds >= 1 thinking token, so this bounds the loop
        for i, comp in results.items():
            _advance(rows[i], comp, dec, enc, end, wait, (lo, hi, max_answer))
        todo = [i for i, r in enumerate(rows) if r.phase != "done"]
        if not todo:
            break
        inputs, budgets = [], []
        for i in todo:
            r = rows[i]
            if r.phase == "answer":
                inputs.append(r.prompt + enc(r.think + end + (r.answer or "")))
                budgets.append(max(1, max_answer - len(enc(r.answer or ""))))
            else:
                inputs.append(r.prompt + enc(r.think))
                budgets.append(max(1, hi - len(enc(r.think))))
        comps = sampler.generate(inputs, 1, max(budgets))
        results = {
            i: Completion(c.ids[:b], c.eos and len(c.ids) <= b)
            for i, b, c in zip(todo, budgets, comps, strict=True)
        }
    out = []
    for r in rows:
        text = r.think + (end + r.answer if r.answer is not None else "")
        out.append(Forced(text, len(enc(r.think)), r.waits, r.truncated))
    return out
