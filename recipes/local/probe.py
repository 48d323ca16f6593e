"""Probe a base model: its sampled pass rate by difficulty and by response length.

:func:`probe` samples ``n`` responses per held-out prompt at T=1 (the held-out protocol of the
laptop scale), scores them with the run's reward function and reports the pass rate overall, by
difficulty (``extra_info.k``, else ``digits``), by response-length bucket (tokens, EOS included)
and by mode: a response is *worked* when it writes at least one ``=`` (a step), else *direct*;
``check`` and ``fix`` mark the corpus' self-check and corrected-slip phrasings
(:func:`analysis.diagnose.response_kinds.response_kind`). What a base model
must show for R1-Zero's story: a low but non-zero pass rate, higher when worked.
Not covered: greedy decoding, per-style pass rates of tasks without ``=`` steps.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig

from analysis.diagnose.response_kinds import response_kind
from core.data import Prompt, load_prompts
from core.sampling import LocalSampler, Settings, decode, score_text

#: response-length buckets (tokens): [lo, hi)
BUCKETS = ((0, 8), (8, 16), (16, 32), (32, 64), (64, 10**9))


def probe_prompts(cfg: DictConfig, tok: Any) -> list[Prompt]:
    """The first ``local.pretrain.probe_prompts`` held-out prompts (``data.val_files``)."""
    limit = int(cfg.local.pretrain.probe_prompts)
    return load_prompts(cfg.data.val_files, tok, int(cfg.data.max_prompt_length), limit=limit)


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = max(1, len(rows))
    worked = [r for r in rows if r["worked"]]
    direct = [r for r in rows if not r["worked"]]

    def rate(xs: list[dict[str, Any]]) -> float | None:
        return round(sum(r["acc"] for r in xs) / len(xs), 4) if xs else None

    return {
        "n": len(rows),
        "pass": rate(rows),
        "worked_share": round(len(worked) / n, 4),
        "pass_worked": rate(worked),
        "pass_direct": rate(direct),
        "mean_len": round(sum(r["len"] for r in rows) / n, 2),
        "check_share": round(sum(r["check"] for r in rows) / n, 4),
        "fix_share": round(sum(r["fix"] for r in rows) / n, 4),
    }


def probe(
    model: torch.nn.Module,
    tok: Any,
    prompts: list[Prompt],
    reward_fn: Callable[..., Any],
    n: int = 4,
    max_new: int = 128,
    seed: int = 0,
) -> dict[str, Any]:
    """Sampled pass rates of ``model`` on ``prompts`` (``n`` each, T=1): overall, by_k, by_len."""
    sampler = LocalSampler.of(model, tok, Settings(seed=seed), generator=torch.Generator().manual_seed(seed))
    comps = sampler.generate([p.ids for p in prompts], n, max_new)
    texts = decode(tok, comps)
    rows = []
    for i, (c, text) in enumerate(zip(comps, texts, strict=True)):
        p = prompts[i // n]
        k = int(p.extra_info.get("k", p.extra_info.get("digits", 0)) or 0)
        acc = score_text(reward_fn, p, text)[1]
        rows.append({"k": k, "len": len(c.ids) + int(c.eos), "acc": float(acc), **response_kind(text)})
    by_k: dict[int, list[dict[str, Any]]] = defaultdict(list)
    by_len: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_k[r["k"]].append(r)
        lo, hi = next(b for b in BUCKETS if b[0] <= r["len"] < b[1])
        by_len[f"{lo}-{hi if hi < 10**9 else ''}"].append(r)
    return {
        "overall": _summary(rows),
        "by_k": {str(k): _summary(v) for k, v in sorted(by_k.items())},
        "by_len": {b: _summary(v) for b, v in by_len.items()},
        "examples": texts[: min(8, len(texts))],
    }
