"""Prompts for the local engine: the veRL parquet files, written on first use, and a resumable order.

:func:`ensure_task_files` writes ``data.train_files`` / ``data.val_files`` with a registered task
generator (``local.task``; the embedded ``arithmetic`` task at laptop scale) when they do not
exist yet, through ``data_pipelines.io.write_rows`` (veRL's schema, atomic). :func:`load_prompts`
reads a parquet file, applies the tokenizer's chat template and refuses prompts longer than
``data.max_prompt_length`` (naming the key). :class:`PromptStream` yields prompts in a seeded
order that reshuffles every epoch; its position is one integer, so a checkpoint resumes the
exact same data order. Not covered: multi-modal rows, several files per split mixed by weight.
"""

from __future__ import annotations

import fcntl
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


@dataclass
class Prompt:
    """One prompt row: token ids plus what the reward function needs."""

    ids: list[int]
    text: str
    data_source: str
    ground_truth: str
    extra_info: dict[str, Any]


def _files(value: Any) -> list[str]:
    if isinstance(value, (list, tuple, ListConfig)):
        return [str(v) for v in value]
    return [str(value)]


def ensure_task_files(cfg: DictConfig) -> None:
    """Write the configured task's train/val parquet files if missing (file-locked).

    Each written file gets a ``<file>.task.json`` sidecar with the generator spec; a file whose
    sidecar disagrees with the current ``local.task`` is refused (it would silently be stale).
    """
    task = OmegaConf.select(cfg, "local.task", default=None)
    for key, split, n_key in (("data.train_files", "train", "train_n"), ("data.val_files", "test", "val_n")):
        for f in _files(OmegaConf.select(cfg, key)):
            path = Path(f).expanduser()
            spec = None
            if task is not None:
                spec = {
                    "name": str(task.name),
                    "n": int(task[n_key]),
                    "seed": int(task.seed),
                    "split": split,
                    "params": OmegaConf.to_container(task.get("params", {}), resolve=True) or {},
                }
            side = path.with_name(path.name + ".task.json")
            if path.is_file():
                if spec is not None and side.is_file() and json.loads(side.read_text()) != spec:
                    raise ValueError(
                        f"[local.task] {key}: {path} was generated from {side.read_text().strip()}, but local.task "
                        f"now asks for {json.dumps(spec)} (fix: point {key} at a new file, or delete the old one)"
                    )
                continue
            if spec is None:
                raise FileNotFoundError(
                    f"[data] {key}: {path} does not exist and no local.task is configured to write it "
                    f"(fix: make data DATA=<name> OUT={path.parent}, or use dataset=arithmetic)"
                )
            from data_pipelines.io import write_rows
            from data_pipelines.tasks import TASKS

            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path.parent / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not path.is_file():
                    rows = TASKS.get(spec["name"])(
                        n=spec["n"], seed=spec["seed"], split=split, **spec["params"]
                    )
                    side.write_text(json.dumps(spec) + "\n")
                    write_rows(rows, path)


def load_prompts(
    files: Any, tokenizer: Any, max_prompt_length: int, limit: int | None = None
) -> list[Prompt]:
    """Read veRL parquet rows and tokenize their chat prompts (error if one exceeds the limit)."""
    from data_pipelines.io import read_rows

    out: list[Prompt] = []
    for f in _files(files):
        for i, row in enumerate(read_rows(Path(f).expanduser())):
            msgs = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
            ids = tokenizer.apply_chat_template(msgs, tokenize=True, add_generation_prompt=True)
            ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
            if len(ids) > max_prompt_length:
                raise ValueError(
                    f"[data] data.max_prompt_length ({max_prompt_length}) < {len(ids)} tokens for row {i} "
                    f"of {f} (fix: raise data.max_prompt_length or shorten the prompts)"
                )
            out.append(
                Prompt(
                    ids,
                    msgs[-1]["content"],
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


class PromptStream:
    """An endless, seeded, epoch-reshuffled order over ``prompts``; ``position`` is its whole state."""

    def __init__(self, prompts: list[Prompt], seed: int, shuffle: bool = True, position: int = 0) -> None:
        self.prompts, self.seed, self.shuffle, self.position = prompts, seed, shuffle, position
        self._epoch, self._order = -1, list(range(len(prompts)))

    def _index(self, k: int) -> int:
        epoch, i = divmod(k, len(self.prompts))
        if epoch != self._epoch:
            self._order = list(range(len(self.prompts)))
            if self.shuffle:
                random.Random(f"{self.seed}/{epoch}").shuffle(self._order)
            self._epoch = epoch
        return self._order[i]

    @property
    def epoch(self) -> int:
        return self.position // len(self.prompts)

    def take(self, count: int) -> list[Prompt]:
        """The next ``count`` prompts (advances ``position``)."""
        out = [self.prompts[self._index(self.position + j)] for j in range(count)]
        self.position += count
        return out
