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


def dedup(rows: list[dict[str, Any]], label: str = "rows") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Drop rows whose (data_source, normalised question) was seen before; report what went."""
    seen: dict[tuple[str, str], str] = {}
    kept, examples, conflicts = [], [], 0
    for r in rows:
        key = (r["data_source"], normalise(text_of(r)))
        gold = r["reward_model"]["ground_truth"]
        if key in seen:
            conflicts += seen[key] != gold
            if len(examples) < 5:
                examples.append(text_of(r)[:200])
            continue
        seen[key] = gold
        kept.append(r)
    report = {
        "set": label,
        "input": len(rows),
        "removed": len(rows) - len(kept),
        "kept": len(kept),
        "conflicting_gold": conflicts,
        "examples": examples,
    }
    return kept, report


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
