"""Rejection sampling (R1's stage 3): correct, well-formatted samples -> an SFT dataset.

Reads the filter's samples (every prompt, not only the filtered ones), keeps responses with
``acc`` true and ``format > 0`` (the verifier's format check), drops empty and duplicate
responses per prompt, keeps at most ``max_per_prompt`` of them (lowest sample index first),
and writes parquet in the form veRL's SFT trainer (``MultiTurnSFTDataset``, ``data.messages_key:
messages``) reads: a ``messages`` column holding the prompt messages plus the assistant
response, next to ``data_source``, ``ground_truth``, ``prompt_index``, ``sample_index``.
``python -m data_pipelines.rejection cache=<filter cache entry dir> data=<parquet> out=<file>``
rebuilds it from a cache without sampling again (a Hydra app: ``conf/datagen/rejection.yaml``). Not covered: mixing in non-reasoning SFT data
(R1's ~200k writing/QA rows), or judging readability with a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from omegaconf import DictConfig, OmegaConf

from core.cli import hydra_main
from core.data import read_rows, sha256_file
from data_pipelines.io import atomic_write_table
from data_pipelines.samples import ShardStore

MESSAGES = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))


def select(
    rows: list[dict[str, Any]], samples: pa.Table, max_per_prompt: int = 4
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """SFT records from ``samples`` for the prompts in ``rows``; plus counts of what was rejected."""
    if max_per_prompt < 1:
        raise ValueError(f"[filter] sft.max_per_prompt must be >= 1, got {max_per_prompt}")
    counts = {
        "samples": samples.num_rows,
        "wrong": 0,
        "bad_format": 0,
        "empty": 0,
        "duplicate": 0,
        "over_cap": 0,
        "kept": 0,
    }
    seen: dict[int, set[str]] = {}
    out = []
    for s in samples.to_pylist():
        response = s["response"] or ""
        reason = (
            "wrong"
            if not s["acc"]
            else "bad_format"
            if not (s["format"] or 0) > 0
            else "empty"
            if not response.strip()
            else None
        )
        kept_here = seen.setdefault(s["prompt_index"], set())
        if reason is None and response in kept_here:
            reason = "duplicate"
        if reason is None and len(kept_here) >= max_per_prompt:
            reason = "over_cap"
        if reason:
            counts[reason] += 1
            continue
        kept_here.add(response)
        row = rows[s["prompt_index"]]
        out.append(
            {
                "messages": [*row["prompt"], {"role": "assistant", "content": response}],
                "data_source": row["data_source"],
                "ground_truth": row["reward_model"]["ground_truth"],
                "prompt_index": s["prompt_index"],
                "sample_index": s["sample_index"],
            }
        )
    counts["kept"] = len(out)
    counts["prompts_with_a_kept_sample"] = sum(1 for v in seen.values() if v)
    return out, counts


def write_sft(records: list[dict[str, Any]], path: str | Path) -> dict[str, Any]:
    """Write SFT records (an empty file with the right columns if there are none)."""
    schema = pa.schema(
        [
            ("messages", MESSAGES),
            ("data_source", pa.string()),
            ("ground_truth", pa.string()),
            ("prompt_index", pa.int64()),
            ("sample_index", pa.int64()),
        ]
    )
    atomic_write_table(pa.Table.from_pylist(records, schema=schema), path)
    return {"path": str(path), "rows": len(records), "sha256": sha256_file(path)}


def check_loads_in_verl_sft(path: str | Path, tokenizer: Any, max_length: int = 4096) -> int:
    """Open ``path`` with veRL's ``MultiTurnSFTDataset`` and tokenize one item; return its length."""
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset  # veRL: ~10 s; only this check

    cfg = OmegaConf.create(
        {"messages_key": "messages", "max_length": max_length, "truncation": "right", "pad_mode": "right"}
    )
    ds = MultiTurnSFTDataset(parquet_files=str(path), tokenizer=tokenizer, config=cfg)
    if len(ds):
        item = ds[0]
        if "input_ids" not in item or "loss_mask" not in item:
            raise ValueError(f"{path}: veRL's MultiTurnSFTDataset item lacks input_ids/loss_mask")
    return len(ds)


def command(cfg: DictConfig) -> int:
    """Rebuild ``sft.parquet`` from a filter cache entry; print what was written."""
    cache = Path(str(cfg.cache))
    rows = read_rows(str(cfg.data))
    store = ShardStore(
        cache.parent, cache.name, {}, len(rows), int(OmegaConf.load(cache / "chunks.json").chunk)
    )
    records, counts = select(rows, store.load(), int(cfg.max_per_prompt))
    info = write_sft(records, str(cfg.out))
    print(f"[rejection] {info['rows']} SFT rows -> {info['path']}; {counts}")
    return 0


main = hydra_main("datagen", "rejection", command)


if __name__ == "__main__":
    main()
