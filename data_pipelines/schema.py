"""veRL's RL parquet row schema: checking one row, and the error that names where it broke.

A row is what veRL's ``RLHFDataset`` reads::

    {"data_source": "overtime_pay",
     "prompt": [{"role": "user", "content": "..."}],
     "ability": "math",
     "reward_model": {"style": "rule", "ground_truth": "1600"},
     "extra_info": {"index": 0, "split": "train", ...}}

``extra_info`` values are kept flat (str/int/float/bool/None or a list of those) so that
pyarrow infers one struct type for a whole file; nested task metadata is stored as a JSON
string. This module only checks rows; writing them is :mod:`data_pipelines.io`.
"""

from __future__ import annotations

from typing import Any

ROLES = ("system", "user", "assistant")
SCALARS = (str, int, float, bool, type(None))


class RowError(ValueError):
    """A malformed row: the message names the file (or source), the row and the key."""

    def __init__(self, where: str, row: int, key: str, problem: str, fix: str = "") -> None:
        self.where, self.row, self.key = where, row, key
        msg = f"{where}: row {row}: {key}: {problem}"
        if fix:
            msg += f" (fix: {fix})"
        super().__init__(msg)


def _check_messages(msgs: Any, where: str, row: int, key: str) -> None:
    if not isinstance(msgs, list) or not msgs:
        raise RowError(where, row, key, f"must be a non-empty list of {{role, content}}, got {msgs!r:.80}")
    for j, m in enumerate(msgs):
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise RowError(
                where, row, f"{key}[{j}]", f"must be a dict with keys role, content; got {m!r:.80}"
            )
        if m["role"] not in ROLES:
            raise RowError(where, row, f"{key}[{j}].role", f"unknown role {m['role']!r}; known: {ROLES}")
        if not isinstance(m["content"], str) or not m["content"].strip():
            raise RowError(where, row, f"{key}[{j}].content", "must be a non-empty string")


def validate_row(row: Any, where: str = "<rows>", index: int = 0) -> dict[str, Any]:
    """Check one row against veRL's schema; return it unchanged or raise :class:`RowError`.

    >>> validate_row({"data_source": "gsm8k", "prompt": [{"role": "user", "content": "1+1?"}],
    ...   "ability": "math", "reward_model": {"style": "rule", "ground_truth": "2"},
    ...   "extra_info": {"index": 0, "split": "train"}})["data_source"]
    'gsm8k'
    >>> validate_row({"data_source": "gsm8k"}, "a.parquet", 3)
    Traceback (most recent call last):
    ...
    data_pipelines.schema.RowError: a.parquet: row 3: prompt: missing key (fix: every row needs data_source, prompt, ability, reward_model, extra_info)
    """
    if not isinstance(row, dict):
        raise RowError(where, index, "<row>", f"must be a dict, got {type(row).__name__}")
    for key in ("data_source", "prompt", "ability", "reward_model", "extra_info"):
        if key not in row:
            raise RowError(
                where,
                index,
                key,
                "missing key",
                "every row needs data_source, prompt, ability, reward_model, extra_info",
            )
    for key in ("data_source", "ability"):
        if not isinstance(row[key], str) or not row[key]:
            raise RowError(where, index, key, f"must be a non-empty string, got {row[key]!r:.80}")
    _check_messages(row["prompt"], where, index, "prompt")
    rm = row["reward_model"]
    if not isinstance(rm, dict) or rm.get("style") != "rule":
        raise RowError(where, index, "reward_model.style", f"must be 'rule', got {rm!r:.80}")
    gt = rm.get("ground_truth")
    if not isinstance(gt, str) or not gt.strip():
        raise RowError(
            where,
            index,
            "reward_model.ground_truth",
            f"must be a non-empty string, got {gt!r:.80}",
            "store the gold answer as text, e.g. '1600'",
        )
    ei = row["extra_info"]
    if not isinstance(ei, dict):
        raise RowError(where, index, "extra_info", f"must be a dict, got {type(ei).__name__}")
    if not isinstance(ei.get("index"), int) or isinstance(ei.get("index"), bool):
        raise RowError(where, index, "extra_info.index", f"must be an int, got {ei.get('index')!r}")
    if not isinstance(ei.get("split"), str):
        raise RowError(where, index, "extra_info.split", f"must be a string, got {ei.get('split')!r}")
    for k, v in ei.items():
        flat = isinstance(v, SCALARS) or (isinstance(v, list) and all(isinstance(x, SCALARS) for x in v))
        if not flat:
            raise RowError(
                where,
                index,
                f"extra_info.{k}",
                f"must be a scalar or a list of scalars, got {type(v).__name__}",
                "store nested metadata as a JSON string",
            )
    return row


def question_of(row: dict[str, Any]) -> str:
    """The text of the last user message (the question as the model sees it)."""
    users = [m["content"] for m in row["prompt"] if m["role"] == "user"]
    return users[-1] if users else ""
