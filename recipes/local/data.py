"""Prompts for the local engine: the veRL parquet files, written on first use, and a resumable order.

:func:`ensure_task_files` writes ``data.train_files`` / ``data.val_files`` with a registered task
generator (``local.task``; the embedded ``arithmetic`` task at laptop scale) when they do not
exist yet, through ``data_pipelines.io.write_rows`` (veRL's schema, atomic); reading and
tokenizing them is :func:`core.data.load_prompts`. :class:`PromptStream` yields prompts in a
seeded order that reshuffles every epoch; its position is one integer, so a checkpoint resumes
the exact same data order. Not covered: multi-modal rows, several files per split mixed by weight.
"""

from __future__ import annotations

import fcntl
import json
import random
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from core.data import Prompt, files_of
from data_pipelines.io import write_rows
from data_pipelines.tasks import TASKS


def ensure_task_files(cfg: DictConfig) -> None:
    """Write the configured task's train/val parquet files if missing (file-locked).

    Each written file gets a ``<file>.task.json`` sidecar with the generator spec; a file whose
    sidecar disagrees with the current ``local.task`` is refused (it would silently be stale).
    """
    task = cfg.local.task
    for key, split, n_key in (("data.train_files", "train", "train_n"), ("data.val_files", "test", "val_n")):
        for f in files_of(OmegaConf.select(cfg, key)):
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
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path.parent / ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not path.is_file():
                    rows = TASKS.get(spec["name"])(
                        n=spec["n"], seed=spec["seed"], split=split, **spec["params"]
                    )
                    side.write_text(json.dumps(spec) + "\n")
                    write_rows(rows, path)


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
