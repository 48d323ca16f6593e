"""The filter's sample cache: one parquet shard per chunk of prompts, written atomically.

Layout under ``<cache_dir>/<key>/``: ``key.json`` (what the key hashes: model fingerprint,
sampling parameters, verifier version, data hash), ``chunks.json`` (the chunking, fixed at
creation), and ``samples-00000.parquet``… — one row per sample: ``prompt_index``,
``sample_index``, ``data_source``, ``response``, ``score``, ``acc``, ``format``, ``pred``,
``reason``. A shard exists only once complete (temp file + ``os.replace``), so after a SIGKILL
the next run redoes exactly the chunks whose shard is missing. Not covered: several processes
writing one cache at once (the second would redo chunks; results stay identical).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from data_pipelines.io import atomic_write_table

SAMPLE_SCHEMA = pa.schema(
    [
        ("prompt_index", pa.int64()),
        ("sample_index", pa.int64()),
        ("data_source", pa.string()),
        ("response", pa.string()),
        ("score", pa.float64()),
        ("acc", pa.bool_()),
        ("format", pa.float64()),
        ("pred", pa.string()),
        ("reason", pa.string()),
    ]
)


class ShardStore:
    """Chunks of prompt indices and their sample shards under one cache key."""

    def __init__(
        self, root: str | Path, key: str, key_parts: dict[str, Any], num_prompts: int, chunk: int
    ) -> None:
        self.dir = Path(root) / key
        self.dir.mkdir(parents=True, exist_ok=True)
        for leftover in self.dir.glob(".*.tmp"):  # a killed writer's temp file
            leftover.unlink(missing_ok=True)
        meta = {"num_prompts": num_prompts, "chunk": chunk}
        self._write_once("key.json", {"key": key, **key_parts})
        stored = self._write_once("chunks.json", meta)
        if stored != meta:
            raise ValueError(
                f"[filter] cache {self.dir} was made with {stored}, now {meta} "
                "(fix: keep sampling.batch_prompts as it was, or delete that cache directory)"
            )
        self.chunks = [list(range(s, min(s + chunk, num_prompts))) for s in range(0, num_prompts, chunk)]

    def _write_once(self, name: str, obj: dict[str, Any]) -> dict[str, Any]:
        path = self.dir / name
        if path.is_file():
            return json.loads(path.read_text())
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str))
        os.replace(tmp, path)
        return obj

    def shard(self, i: int) -> Path:
        return self.dir / f"samples-{i:05d}.parquet"

    def pending(self) -> list[int]:
        """Chunk ids whose shard is not written yet."""
        return [i for i in range(len(self.chunks)) if not self.shard(i).is_file()]

    def write(self, i: int, records: list[dict[str, Any]]) -> None:
        atomic_write_table(pa.Table.from_pylist(records, schema=SAMPLE_SCHEMA), self.shard(i))

    def load(self) -> pa.Table:
        """All samples, ordered by (prompt_index, sample_index); fails if a shard is missing."""
        missing = self.pending()
        if missing:
            raise RuntimeError(
                f"[filter] {len(missing)} chunks of {self.dir} are not sampled yet: {missing[:5]}…"
            )
        tables = [pq.read_table(self.shard(i), schema=SAMPLE_SCHEMA) for i in range(len(self.chunks))]
        table = pa.concat_tables(tables) if tables else SAMPLE_SCHEMA.empty_table()
        return table.sort_by([("prompt_index", "ascending"), ("sample_index", "ascending")])
