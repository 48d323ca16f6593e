"""Prompts for the local engine: the veRL parquet files, written on first use, and a resumable order.

:func:`ensure_task_files` writes ``data.train_files`` / ``data.val_files`` with a registered task
generator (``local.task``; the embedded ``arithmetic`` task at laptop scale) when they do not
exist yet, through ``data_pipelines.io.write_rows`` (veRL's schema, atomic). :func:`load_split`
reads and tokenizes them (:func:`core.data.load_prompts`) and treats a prompt longer than
``data.max_prompt_length`` as veRL's keys say: dropped and counted with
``data.filter_overlong_prompts`` (``RLHFDataset``), else cut by ``data.truncation`` with veRL's own
``postprocess_data`` (``left`` keeps the end, ``right`` the start, ``middle`` both ends) or
refused by file and row (``error``, veRL's default). veRL 0.9.1's agent loop itself left-truncates
any prompt longer than ``rollout.prompt_length`` whatever ``data.truncation`` says; the keys'
documented meaning is followed here. :class:`PromptStream` yields prompts in a seeded order that
reshuffles every epoch; its position is one integer, so a checkpoint resumes the exact same data
order. Not covered: multi-modal rows, several files per split mixed by weight.
"""

from __future__ import annotations

import fcntl
import json
import random
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.data import Prompt, files_of, load_prompts
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


def truncate(ids: list[int], max_len: int, mode: str) -> list[int]:
    """``ids`` cut to ``max_len`` tokens by veRL's ``postprocess_data`` (``left``/``right``/``middle``).

    >>> truncate(list(range(10)), 4, "left"), truncate(list(range(10)), 4, "middle")
    ([6, 7, 8, 9], [0, 1, 8, 9])
    """
    import torch  # only when a prompt is too long
    from verl.utils.torch_functional import postprocess_data  # veRL: ~10 s, only when a prompt is too long

    t = torch.tensor([ids])
    out, _ = postprocess_data(t, torch.ones_like(t), max_len, pad_token_id=0, left_pad=True, truncation=mode)
    return out[0].tolist()


def load_split(cfg: DictConfig, key: str, tokenizer: Any, limit: int | None = None) -> list[Prompt]:
    """Prompts of ``data.<key>`` (``train_files``/``val_files``), at most ``limit``, overlong ones
    dropped, truncated or refused as ``data.filter_overlong_prompts`` / ``data.truncation`` say."""
    max_len, d = int(cfg.data.max_prompt_length), cfg.data
    mode, drop = str(d.get("truncation") or "error"), bool(d.get("filter_overlong_prompts"))
    chat = (
        OmegaConf.to_container(d.apply_chat_template_kwargs, resolve=True)
        if d.get("apply_chat_template_kwargs")
        else {}
    )
    out: list[Prompt] = []
    dropped = cut = 0
    for f in files_of(d[key]):
        if limit is not None and len(out) >= limit:
            break
        room = None if drop or limit is None else limit - len(out)
        for i, p in enumerate(load_prompts(f, tokenizer, sys.maxsize, limit=room, chat_kwargs=chat)):
            if len(p.ids) > max_len:
                if drop:
                    dropped += 1
                    continue
                if mode == "error":
                    raise ValueError(
                        f"[data.max_prompt_length] ({max_len}) < {len(p.ids)} tokens for row {i} of {f} "
                        "(data.truncation=error); fix: raise data.max_prompt_length, shorten the prompts, "
                        "data.truncation=left|right|middle, or data.filter_overlong_prompts=true"
                    )
                p.ids, cut = truncate(p.ids, max_len, mode), cut + 1
            out.append(p)
            if limit is not None and len(out) >= limit:
                break
    if dropped or cut:
        print(
            f"[data] data.{key}: {dropped} prompts longer than data.max_prompt_length={max_len} dropped "
            f"(data.filter_overlong_prompts), {cut} truncated (data.truncation={mode})",
            flush=True,
        )
    if not out:
        raise ValueError(f"[data.{key}] no prompt of at most {max_len} tokens in {d[key]}")
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
