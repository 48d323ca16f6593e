"""Deduplication (normalised text) and n-gram decontamination against evaluation sets.

Both compare ``extra_info.question`` (the bare question, without template or task rules;
falls back to the last user message) and return ``(kept_rows, report)``; the report counts
what was removed and shows a few examples, so nothing disappears silently.

* Dedup: NFKC, lower case, whitespace collapsed. The first occurrence is kept; duplicates
  whose gold answers disagree are counted separately (``conflicting_gold``).
* Decontamination: a training row is removed when it shares an n-gram (default 13 tokens,
  the GPT-3 / Tulu convention) with an evaluation row. Tokens are words, numbers, single
  punctuation marks and single CJK characters, so Chinese text works. Texts shorter than n
  tokens are compared whole. An n-gram that occurs in more than ``max_df`` of the evaluation
  rows (and in at least 2) is template boilerplate (e.g. "Spell this word backward …") and
  is ignored. Not covered: paraphrases, translated or numerically perturbed copies.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from data_pipelines.schema import question_of

TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W_\u3400-\u9fff\uf900-\ufaff]+|[^\w\s]", re.UNICODE)


def text_of(row: dict[str, Any]) -> str:
    """The bare question of a row (``extra_info.question`` or the last user message)."""
    q = (row.get("extra_info") or {}).get("question")
    return q if isinstance(q, str) and q else question_of(row)


def normalise(text: str) -> str:
    """Normalised text for exact-duplicate detection.

    >>> normalise("  What is\\n 1+1？ ") == normalise("what is 1+1?")
    True
    """
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


def tokens(text: str) -> list[str]:
    """Word/number/punctuation/CJK-character tokens of normalised text.

    >>> tokens("月薪8700元, x+1")
    ['月', '薪', '8700', '元', ',', 'x', '+', '1']
    """
    return TOKEN.findall(normalise(text))


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    """All n-grams of ``text``'s tokens; the whole token tuple if it is shorter than n."""
    toks = tokens(text)
    if len(toks) < n:
        return {tuple(toks)} if toks else set()
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


class Deduper:
    """Streaming dedup on (data_source, normalised question): :meth:`keep` says whether a row is new.

    Lets the hub adapters drop duplicates while converting (DAPO-Math-17k ships every problem
    ~100 times), so only unique rows are ever held in memory.
    """

    def __init__(self, label: str = "rows") -> None:
        self.label, self.input, self.conflicts = label, 0, 0
        self.seen: dict[tuple[str, str], str] = {}
        self.examples: list[str] = []

    def keep(self, row: dict[str, Any]) -> bool:
        self.input += 1
        key = (row["data_source"], normalise(text_of(row)))
        gold = row["reward_model"]["ground_truth"]
        if key in self.seen:
            self.conflicts += self.seen[key] != gold
            if len(self.examples) < 5:
                self.examples.append(text_of(row)[:200])
            return False
        self.seen[key] = gold
        return True

    def report(self) -> dict[str, Any]:
        kept = len(self.seen)
        return {
            "set": self.label,
            "input": self.input,
            "removed": self.input - kept,
            "kept": kept,
            "conflicting_gold": self.conflicts,
            "examples": self.examples,
        }


def dedup(rows: list[dict[str, Any]], label: str = "rows") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Drop rows whose (data_source, normalised question) was seen before; report what went."""
    d = Deduper(label)
    kept = [r for r in rows if d.keep(r)]
    return kept, d.report()


def eval_index(eval_rows: list[dict[str, Any]], n: int = 13, max_df: float = 0.05) -> set[tuple[str, ...]]:
    """The informative n-grams of the evaluation rows (boilerplate n-grams removed)."""
    df: Counter[tuple[str, ...]] = Counter()
    for r in eval_rows:
        df.update(ngrams(text_of(r), n))
    limit = max(2, int(max_df * len(eval_rows)))
    return {g for g, c in df.items() if c <= limit or len(g) < n}


def decontaminate(
    rows: list[dict[str, Any]],
    eval_rows: list[dict[str, Any]],
    n: int = 13,
    max_df: float = 0.05,
    label: str = "train",
    against: str = "eval",
    mode: str = "ngram",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Remove rows sharing an informative n-gram with ``eval_rows``; report what went.

    ``mode="exact"`` compares whole normalised questions instead: right for procedural tasks,
    whose questions share phrasing and numbers by construction, so n-grams would flag
    different instances.
    """
    if mode not in ("ngram", "exact"):
        raise ValueError(f"[data] decontam mode must be 'ngram' or 'exact', got {mode!r}")
    if n < 1:
        raise ValueError(f"[data] decontam.n must be >= 1, got {n}")
    exact = mode == "exact"
    index: set[Any] = set()
    if eval_rows:
        index = {normalise(text_of(r)) for r in eval_rows} if exact else eval_index(eval_rows, n, max_df)
    kept, examples = [], []
    for r in rows:
        grams = {normalise(text_of(r))} if exact else ngrams(text_of(r), n)
        if index and not grams.isdisjoint(index):
            if len(examples) < 5:
                examples.append(text_of(r)[:200])
            continue
        kept.append(r)
    report = {
        "set": label,
        "against": against,
        "mode": mode,
        "eval_rows": len(eval_rows),
        "n": n,
        "max_df": max_df,
        "input": len(rows),
        "removed": len(rows) - len(kept),
        "kept": len(kept),
        "examples": examples,
    }
    return kept, report
