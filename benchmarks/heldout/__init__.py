r"""The held-out verifier cases: loading, the level each source is scored at, and who has seen it.

What it does:
- ``sources()`` reads ``sources.json``: per source the **level** its origin defines (``answer``: the
  origin's harness compares two answer strings; ``response``: it scores a whole model response),
  why, the data source it is scored as (``math`` unless given) and the scorers it is **in-sample**
  for (their own regression suite, or a port of it) -- so a total can leave those out;
- ``load_heldout()`` reads every ``*.jsonl`` here, checks each row (unique id, a described source,
  a boolean label, string fields) and fails naming the file and row;
- ``load_tuning()`` reads the tuning table ``tests/rewards/math_table.jsonl`` (in-sample, labelled here);
- ``split_overlap()`` leaves out held-out rows that repeat a tuning-table case: the same gold and the
  same final answer (a tuning response's answer is what our extraction reads from it);
- ``answer_format()``: the coarse class of a gold (integer, fraction, interval/set, text, ...) the
  benchmark's per-format tables group by.

What it does not do: score anything (``benchmarks.bench_rewards``) or change a label.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewards.math.extract import extract_final
from rewards.sources.math import gold_answer

HERE = Path(__file__).resolve().parent
TUNING_TABLE = HERE.parent.parent / "tests" / "rewards" / "math_table.jsonl"
LEVELS = ("answer", "response")
_FIELDS = ("id", "source", "origin", "case", "gold", "response", "label", "original_label")


@dataclass(frozen=True)
class Source:
    """How one held-out source is scored and who has seen it."""

    name: str
    level: str
    why: str
    data_source: str = "math"
    in_sample_for: tuple[str, ...] = ()
    informed: tuple[str, ...] = ()
    note: str = ""

    def seen_by(self, scorer: str) -> bool:
        """Is this source in-sample for (or did it inform) ``scorer``? Variants of a scorer count."""
        base = scorer.split(" (")[0]
        return any(base == s.split(" (")[0] for s in self.in_sample_for + self.informed)


def sources(path: Path = HERE / "sources.json") -> dict[str, Source]:
    """Source name -> ``Source`` (a clear error for an unknown level or key)."""
    raw = json.loads(path.read_text())
    out = {}
    for name, d in raw.items():
        unknown = set(d) - {"level", "why", "data_source", "in_sample_for", "informed", "note"}
        if unknown or d.get("level") not in LEVELS or not d.get("why"):
            raise ValueError(
                f"{path}: source {name!r} needs level in {LEVELS} and a 'why' (unknown keys: {sorted(unknown)})"
            )
        out[name] = Source(
            name=name,
            level=d["level"],
            why=d["why"],
            data_source=d.get("data_source", "math"),
            in_sample_for=tuple(d.get("in_sample_for", ())),
            informed=tuple(d.get("informed", ())),
            note=d.get("note", ""),
        )
    return out


_FORMATS: list[tuple[str, re.Pattern[str]]] = [
    ("matrix", re.compile(r"\\begin\{[pbvBV]?matrix")),
    ("text", re.compile(r"\\text\{[^}]*[a-z]{3}[^}]*\}.*[a-z]{3}|^[^\\$]*[A-Za-z]{4,}[^\\]*$")),
    ("interval/set", re.compile(r"\\cup|\\infty|∞|\\\{|^\$?[\[(][^,]+,[^,]+[\])]\$?$|\\in(?![a-z])")),
    ("inequality", re.compile(r"<|>|\\[lg]eq?|\\[lg]eqslant|≥|≤|\\ne")),
    ("tuple/list", re.compile(r",")),
    ("equation", re.compile(r"=")),
    ("percent", re.compile(r"%")),
    ("integer", re.compile(r"^\$?[+-]?\d+\$?$")),
    ("decimal", re.compile(r"^\$?[+-]?\d*\.\d+\$?$")),
    ("fraction", re.compile(r"^\$?[+-]?(?:\\[dt]?frac\s*\{?\d+\}?\s*\{?\d+\}?|\d+\s*/\s*\d+)\$?$")),
    ("expression", re.compile(r"[a-zA-Z]")),
]


def answer_format(gold: str) -> str:
    """Coarse class of a gold answer (for the per-format table); the first pattern that matches."""
    g = gold.strip()
    if "####" in g:
        g = g.rsplit("####", 1)[1].strip()
    if not g:
        return "empty"
    for name, pat in _FORMATS:
        if pat.search(g):
            if name == "expression" and not re.search(r"[a-zA-Z]", re.sub(r"\\[a-z]+", "", g)):
                return "constant"
            return name
    return "other"


def golds(row: dict[str, Any]) -> list[str]:
    """The accepted gold answers of a row as strings (a row may list several)."""
    g = row["gold"]
    return [str(x) for x in g] if isinstance(g, list) else [str(g)]


def load_heldout(directory: Path = HERE) -> list[dict[str, Any]]:
    """Every held-out row, checked, with ``level`` and ``data_source`` from its source."""
    srcs = sources(directory / "sources.json")
    rows: list[dict[str, Any]] = []
    ids: set[str] = set()
    for path in sorted(directory.glob("*.jsonl")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path.name}:{n}: not JSON ({e})") from None
            missing = [k for k in _FIELDS if k not in r]
            if missing or r["source"] not in srcs or not isinstance(r["label"], bool):
                raise ValueError(
                    f"{path.name}:{n}: needs fields {list(_FIELDS)} (missing {missing}), a source described "
                    f"in sources.json (got {r.get('source')!r}) and a boolean label"
                )
            if r["id"] in ids:
                raise ValueError(f"{path.name}:{n}: duplicate id {r['id']!r}")
            ids.add(r["id"])
            src = srcs[r["source"]]
            r["level"], r["data_source"] = src.level, src.data_source
            rows.append(r)
    return rows


def load_tuning(path: Path = TUNING_TABLE) -> list[dict[str, Any]]:
    """The tuning table (labelled by this project): every row is a whole response."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for r in rows:
        r.update(source="tuning_table", level="response", id=f"table-{r['id']}")
    return rows


def _key(s: str) -> str:
    return re.sub(r"[\s$]", "", s)


def _answer_of(text: str, level: str = "response") -> str:
    """A row's final answer: an answer string read as a stored answer; a response, what our
    extraction reads from it (the whole text when it reads nothing)."""
    if level == "answer":
        return gold_answer(text)
    pred = extract_final(text, allow_gsm8k=True).pred
    return pred if pred is not None else text


def split_overlap(
    heldout: list[dict[str, Any]], tuning: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """(held-out rows kept, ids left out because the tuning table has the same gold and final answer)."""
    seen = {(_key(gold_answer(g)), _key(_answer_of(r["response"]))) for r in tuning for g in golds(r)}
    seen |= {(_key(gold_answer(g)), _key(r["response"])) for r in tuning for g in golds(r)}
    kept, left = [], []
    for r in heldout:
        ans = _key(_answer_of(r["response"], r["level"]))
        if any((_key(gold_answer(g)), ans) in seen for g in golds(r)) and ans:
            left.append(r["id"])
        else:
            kept.append(r)
    return kept, left
