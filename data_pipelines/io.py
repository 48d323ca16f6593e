"""Parquet in veRL's schema: atomic writing, manifests and a load check (reading and file hashes
are :mod:`core.data`'s, re-exported here for the data commands).

``write_rows`` validates every row (:func:`data_pipelines.schema.validate_row`), writes with an
explicit pyarrow type for the fixed columns and an inferred struct for ``extra_info``, and
replaces the target atomically (a killed writer leaves no half-written file under the final
name). ``check_loads_in_verl`` opens a file with veRL's own ``RLHFDataset`` and fails if veRL
drops any row (its overlong-prompt filter drops silently). Nothing here talks to the network.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from omegaconf import OmegaConf

from core import versions
from core.data import read_rows, sha256_file
from data_pipelines.schema import validate_row

__all__ = [
    "atomic_write_table",
    "check_loads_in_verl",
    "read_rows",
    "rows_to_table",
    "sha256_file",
    "write_manifest",
    "write_rows",
]

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
FIXED_TYPES = {
    "data_source": pa.string(),
    "prompt": pa.list_(MESSAGE),
    "ability": pa.string(),
    "reward_model": pa.struct([("style", pa.string()), ("ground_truth", pa.string())]),
}


def atomic_write_table(table: pa.Table, path: str | os.PathLike[str]) -> None:
    """Write ``table`` to ``path`` through a temporary file in the same directory + ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rows_to_table(rows: list[dict[str, Any]], where: str = "<rows>") -> pa.Table:
    """Validate ``rows`` and build a table with veRL's column types (extra columns are inferred)."""
    for i, r in enumerate(rows):
        validate_row(r, where, i)
    if not rows:
        raise ValueError(f"{where}: no rows to write (fix: generate n >= 1 rows or check the input)")
    columns: dict[str, pa.Array] = {}
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for k in keys:
        values = [r.get(k) for r in rows]
        try:
            columns[k] = pa.array(values, type=FIXED_TYPES.get(k))
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise ValueError(f"{where}: column {k!r} has inconsistent types across rows: {e}") from e
    return pa.table(columns)


def write_rows(rows: list[dict[str, Any]], path: str | os.PathLike[str]) -> dict[str, Any]:
    """Write rows as veRL parquet; return ``{path, rows, sha256}`` for the manifest."""
    atomic_write_table(rows_to_table(rows, str(path)), path)
    return {"path": str(path), "rows": len(rows), "sha256": sha256_file(path)}


def write_manifest(out_dir: str | os.PathLike[str], manifest: dict[str, Any]) -> Path:
    """Write ``manifest.json`` (adds creation time and library versions) and return its path."""
    full = {
        **manifest,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
    }
    path = Path(out_dir) / "manifest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(full, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def check_loads_in_verl(path: str | os.PathLike[str], tokenizer: Any, max_prompt_length: int = 4096) -> int:
    """Open ``path`` with veRL's ``RLHFDataset`` + ``collate_fn``; return the row count.

    Raises ``ValueError`` if veRL's overlong-prompt filter (or a tokenizer error, which veRL
    turns into "too long") drops rows: raise ``max_prompt_length`` or shorten the prompts.
    """
    from verl.utils.dataset.rl_dataset import (  # veRL loads in ~10 s; only this check needs it
        RLHFDataset,
        collate_fn,
    )

    expected = pq.ParquetFile(path).metadata.num_rows
    cfg = OmegaConf.create(
        {
            "max_prompt_length": max_prompt_length,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "cache_dir": str(Path(path).parent / ".verl_cache"),
        }
    )
    ds = RLHFDataset(data_files=[str(path)], tokenizer=tokenizer, config=cfg)
    if len(ds) != expected:
        raise ValueError(
            f"{path}: veRL's RLHFDataset kept {len(ds)} of {expected} rows "
            f"(prompts over max_prompt_length={max_prompt_length} tokens or failing the chat template)"
        )
    batch = collate_fn([ds[i] for i in range(min(2, len(ds)))])
    for key in ("data_source", "reward_model", "raw_prompt"):
        if key not in batch:
            raise ValueError(f"{path}: veRL's collate_fn output lacks {key!r}")
    return len(ds)
