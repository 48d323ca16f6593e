"""What the pre-flight checks share: the composed config, its data files read once, the reward
function and the run's tokenizer loaded once, the sample of rows and every reward call's time.

:class:`Context` loads each piece on first use and remembers why a piece is missing (a file that
is not there, a tokenizer that is not on disk), so a later check can say what it skipped. Rows
are sampled per file and stratified by ``data_source`` (:meth:`Context.sample_rows`), with a
seeded generator, so two pre-flights of one config check the same rows. Not covered: remote
files (``hdfs://``, ``s3://``): veRL copies them at launch; here they count as missing.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf

from core.data import files_of
from recipes.preflight.models import local_dir
from recipes.preflight.report import Report

#: data config key -> the split name used in findings.
SPLITS = {"data.train_files": "train", "data.val_files": "val"}


def sel(cfg: DictConfig, key: str, default: Any = None) -> Any:
    """``OmegaConf.select`` with a default (resolved)."""
    return OmegaConf.select(cfg, key, default=default)


@dataclass
class Context:
    """State shared by the checks of one pre-flight (see the module docstring)."""

    cfg: DictConfig
    engine: str
    settings: DictConfig
    report: Report
    tables: dict[str, pa.Table] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    reward_times: list[float] = field(default_factory=list)
    gold_forms: dict[str, str] = field(default_factory=dict)
    _reward: Any = None
    _tokenizer: Any = None
    _tokenizer_reason: str | None = None

    # ------------------------------------------------------------------ data
    def files(self) -> list[tuple[str, str]]:
        """(config key, path) of every data file, train first."""
        return [(k, f) for k in SPLITS for f in files_of(sel(self.cfg, k) or [])]

    def table(self, path: str) -> pa.Table | None:
        """The parquet file as an Arrow table (read once), or None when it cannot be read."""
        if path in self.tables:
            return self.tables[path]
        if path in self.missing:
            return None
        p = Path(path).expanduser()
        if not p.is_file():
            self.missing[path] = "does not exist"
            return None
        try:
            self.tables[path] = pq.read_table(p)
        except Exception as e:  # noqa: BLE001 - any unreadable file is reported, not raised
            self.missing[path] = f"is not a readable parquet file ({type(e).__name__}: {e})"
            return None
        return self.tables[path]

    def sample_rows(self, path: str, k: int, per_source: int = 8) -> list[int]:
        """About ``k`` row indexes of ``path``: up to ``per_source`` of each data source (more than ``k``
        when there are many sources), the rest uniformly at random (seeded by ``settings.seed``); sorted."""
        t = self.table(path)
        if t is None or t.num_rows == 0:
            return []
        rng = np.random.default_rng(int(self.settings.seed))
        key = str(sel(self.cfg, "data.reward_fn_key", "data_source"))
        chosen: set[int] = set()
        if key in t.column_names:
            sources = t.column(key).combine_chunks()
            for src in pc.unique(sources).to_pylist():
                idx = pc.indices_nonzero(pc.equal(sources, src)).to_numpy()
                chosen.update(rng.choice(idx, size=min(per_source, len(idx), k), replace=False).tolist())
        rest = np.setdiff1d(np.arange(t.num_rows), np.fromiter(chosen, dtype=np.int64))
        extra = max(0, min(k - len(chosen), len(rest)))
        chosen.update(rng.choice(rest, size=extra, replace=False).tolist())
        return sorted(chosen)

    # ------------------------------------------------------------------ reward function
    def reward_fn(self) -> tuple[Callable[..., Any] | None, str]:
        """(the reward function veRL would call, a description), or (None, why it cannot be loaded)."""
        if self._reward is None:
            self._reward = self._load_reward()
        return self._reward

    def _load_reward(self) -> tuple[Callable[..., Any] | None, str]:
        from verl.trainer.ppo.reward import (
            get_custom_reward_fn,
        )  # veRL: seconds to import; only checks need it

        spec = sel(self.cfg, "reward.custom_reward_function") or {}
        where = f"{spec.get('path')}:{spec.get('name')}"
        try:
            fn = get_custom_reward_fn(self.cfg)
        except Exception as e:  # noqa: BLE001 - import errors of user code are findings
            return None, f"cannot load {where}: {type(e).__name__}: {e}"
        if fn is None:
            from verl.utils.reward_score import default_compute_score  # same

            return default_compute_score, "veRL's default_compute_score (no custom reward function)"
        return fn, where

    def is_project_reward(self) -> bool:
        """True when the reward is this project's ``rewards.compute_score`` (its registry is known)."""
        import rewards  # the verifiers package (SymPy worker etc.), loaded only for the checks

        fn, _ = self.reward_fn()
        raw = fn.args[0] if hasattr(fn, "args") and fn.args else fn
        return raw is rewards.compute_score

    def call_reward(self, data_source: str, text: str, gold: Any, extra: dict[str, Any] | None) -> Any:
        """One reward call with veRL's keyword signature, timed into ``reward_times``."""
        fn, _ = self.reward_fn()
        t0 = time.perf_counter()
        try:
            out = fn(data_source=data_source, solution_str=text, ground_truth=gold, extra_info=extra)
            if inspect.isawaitable(out):
                out = asyncio.run(out)
        finally:
            self.reward_times.append(time.perf_counter() - t0)
        return out

    # ------------------------------------------------------------------ tokenizer
    def tokenizer(self) -> Any | None:
        """The run's tokenizer (veRL's ``hf_tokenizer`` on ``tokenizer_path`` or the model path, with
        ``custom_chat_template``), or None; :meth:`tokenizer_skip` then says why."""
        if self._tokenizer is None and self._tokenizer_reason is None:
            self._tokenizer, self._tokenizer_reason = self._load_tokenizer()
        return self._tokenizer

    def tokenizer_skip(self) -> str | None:
        self.tokenizer()
        return self._tokenizer_reason

    def tokenizer_path(self) -> str:
        m = self.cfg.actor_rollout_ref.model
        return str(m.get("tokenizer_path") or m.path)

    def _load_tokenizer(self) -> tuple[Any, str | None]:
        from core.model import load_tokenizer  # transformers + veRL: seconds; only the length check needs it

        path = self.tokenizer_path()
        local = local_dir(path, "tokenizer_config.json")
        if local is None:
            where = (
                "has no tokenizer files"
                if Path(path).expanduser().exists()
                else "is not on disk or in the local HF cache"
            )
            return None, f"{path} {where}"
        try:
            tok = load_tokenizer(local, sel(self.cfg, "actor_rollout_ref.model.custom_chat_template"))
        except Exception as e:  # noqa: BLE001 - a broken tokenizer directory: say so
            return None, f"{local} does not load as a tokenizer ({type(e).__name__}: {e})"
        return tok, None

    def chat_kwargs(self) -> dict[str, Any]:
        kw = sel(self.cfg, "data.apply_chat_template_kwargs") or {}
        return OmegaConf.to_container(kw, resolve=True) if OmegaConf.is_config(kw) else dict(kw)
