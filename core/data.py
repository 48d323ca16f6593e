"""Prompt rows of veRL parquet files, as the samplers, the engine and the evaluations read them.

:func:`read_rows` reads a parquet file as dicts, :func:`sha256_file` hashes a file; :func:`chat_ids` applies a tokenizer's chat
template to a prompt's messages (generation prompt added); :func:`load_prompts` turns veRL rows
(``prompt``, ``data_source``, ``reward_model.ground_truth``, ``extra_info``) into :class:`Prompt`
objects and refuses a prompt longer than ``data.max_prompt_length``, naming the row and the key.
Not covered: writing or validating parquet (``data_pipelines.io``), multi-modal rows.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq


@dataclass
class Prompt:
    """One prompt row: token ids plus what the reward function needs."""

    ids: list[int]
    text: str
    data_source: str
    ground_truth: str
    extra_info: dict[str, Any]


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a parquet file as a list of dicts (``FileNotFoundError`` names the path)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such parquet file: {path} (fix: run `make data DATA=<name>` first)")
    return pq.read_table(path).to_pylist()


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def chat_ids(
    tokenizer: Any, messages: list[dict[str, Any]], chat_kwargs: Mapping[str, Any] | None = None
) -> list[int]:
    """Token ids of ``messages`` under the tokenizer's chat template, with the generation prompt
    (``chat_kwargs``: veRL's ``data.apply_chat_template_kwargs``, e.g. ``enable_thinking``)."""
    msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
    ids = tokenizer.apply_chat_template(
        msgs, tokenize=True, add_generation_prompt=True, **(chat_kwargs or {})
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def files_of(value: Any) -> list[str]:
    """``data.train_files``-style values (one path or a list of paths) as a list of strings."""
    if isinstance(value, (str, os.PathLike)):
        return [str(value)]
    return [str(v) for v in value]


def load_prompts(
    files: Any,
    tokenizer: Any,
    max_prompt_length: int,
    limit: int | None = None,
    chat_kwargs: Mapping[str, Any] | None = None,
) -> list[Prompt]:
    """Read veRL parquet rows and tokenize their chat prompts (error if one exceeds the limit)."""
    out: list[Prompt] = []
    for f in files_of(files):
        for i, row in enumerate(read_rows(Path(f).expanduser())):
            ids = chat_ids(tokenizer, row["prompt"], chat_kwargs)
            if len(ids) > max_prompt_length:
                raise ValueError(
                    f"[data] data.max_prompt_length ({max_prompt_length}) < {len(ids)} tokens for row {i} "
                    f"of {f} (fix: raise data.max_prompt_length or shorten the prompts)"
                )
            out.append(
                Prompt(
                    ids,
                    row["prompt"][-1]["content"],
                    row["data_source"],
                    str(row["reward_model"]["ground_truth"]),
                    dict(row.get("extra_info") or {}),
                )
            )
            if limit is not None and len(out) >= limit:
                return out
    if not out:
        raise ValueError(f"[data] no rows in {files}")
    return out
