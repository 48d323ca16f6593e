"""Prompt lengths with the run's own tokenizer and chat template, against ``data.max_prompt_length``.

Every prompt of every file is measured: the chat template is rendered for all rows in one batched
call (``tokenize=False``, generation prompt on, ``data.apply_chat_template_kwargs``) and the texts
are tokenized in one batched call of the fast tokenizer (``add_special_tokens=False``) -- what
``apply_chat_template(tokenize=True)`` does row by row, checked here on ``settings.exact_rows``
sampled rows (a mismatch makes every row go the exact way). What veRL 0.9.1 does with a longer
prompt: with ``data.filter_overlong_prompts`` the row is dropped when the dataset loads, otherwise
the agent loop left-truncates it to ``rollout.prompt_length`` tokens, silently cutting its start
(the local engine refuses it). Also checks that prompt + response fit the model's context
(``max_position_embeddings``, which vLLM enforces). Skipped, and said so, when the tokenizer is
not on disk. Not covered: tool schemas in the template, multi-modal placeholders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from core.data import chat_ids
from recipes.preflight.context import Context, sel


def _messages(t: Any, key: str) -> list[list[dict[str, str]]]:
    return [[{"role": m["role"], "content": m["content"]} for m in p] for p in t.column(key).to_pylist()]


def measure(tok: Any, convs: list[list[dict[str, str]]], kw: dict[str, Any], batch: int = 8192) -> np.ndarray:
    """Token counts of ``convs`` under ``tok``'s chat template with the generation prompt (batched)."""
    out = []
    for i in range(0, len(convs), batch):
        texts = tok.apply_chat_template(
            convs[i : i + batch], tokenize=False, add_generation_prompt=True, **kw
        )
        enc = tok(texts, add_special_tokens=False)["input_ids"]
        out.append(np.fromiter((len(e) for e in enc), dtype=np.int64, count=len(enc)))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def check_lengths(ctx: Context) -> dict[str, float]:
    """Prompt lengths of all rows vs ``data.max_prompt_length`` / ``rollout.prompt_length``."""
    tok = ctx.tokenizer()
    if tok is None:
        ctx.report.add(
            "lengths",
            "info",
            f"actor_rollout_ref.model.path={ctx.tokenizer_path()}",
            f"prompt lengths not checked: {ctx.tokenizer_skip()}",
            "put the model (or its tokenizer: actor_rollout_ref.model.tokenizer_path) on disk to check them",
        )
        return {}
    if not getattr(tok, "chat_template", None):
        ctx.report.add(
            "lengths",
            "fail",
            f"tokenizer at {ctx.tokenizer_path()}",
            "has no chat template; veRL's agent loop applies one to every prompt",
            "use a tokenizer with a chat template or set actor_rollout_ref.model.custom_chat_template",
        )
        return {}
    limit = int(sel(ctx.cfg, "actor_rollout_ref.rollout.prompt_length") or ctx.cfg.data.max_prompt_length)
    pkey = str(sel(ctx.cfg, "data.prompt_key", "prompt"))
    kw = ctx.chat_kwargs()
    rows = 0
    for key, path in ctx.files():
        t = ctx.table(path)
        if t is None or pkey not in t.column_names:
            continue
        try:
            convs = _messages(t, pkey)
            lens = measure(tok, convs, kw)
            lens = _verify_exact(ctx, tok, convs, lens, kw)
        except Exception as e:  # noqa: BLE001 - a template that cannot render a row is the finding
            ctx.report.add(
                "lengths",
                "fail",
                f"{key}={path}",
                f"the chat template fails: {type(e).__name__}: {e}",
                "fix the prompts or the template",
            )
            continue
        rows += len(lens)
        _report_file(ctx, key, path, lens, limit, convs)
    _check_context(ctx, limit)
    return {"rows": float(rows), "exact_rows": float(ctx.settings.exact_rows)}


def _verify_exact(ctx: Context, tok: Any, convs: list, lens: np.ndarray, kw: dict[str, Any]) -> np.ndarray:
    rng = np.random.default_rng(int(ctx.settings.seed))
    idx = rng.choice(len(convs), size=min(int(ctx.settings.exact_rows), len(convs)), replace=False)
    if all(len(chat_ids(tok, convs[i], kw)) == lens[i] for i in idx):
        return lens
    ctx.report.add(
        "lengths", "info", "chat template", "batched and row-by-row tokenization differ: measured row by row"
    )
    return np.asarray([len(chat_ids(tok, c, kw)) for c in convs])


def _report_file(ctx: Context, key: str, path: str, lens: np.ndarray, limit: int, convs: list) -> None:
    over = np.flatnonzero(lens > limit)
    p50, p99 = np.percentile(lens, [50, 99]) if len(lens) else (0, 0)
    stats = (
        f"{len(lens)} prompts: p50 {p50:.0f}, p99 {p99:.0f}, max {lens.max(initial=0)} tokens (limit {limit})"
    )
    if not len(over):
        ctx.report.add("lengths", "info", f"{key}={path}", stats)
        return
    ex = [f"row {i}: {lens[i]} tokens: {convs[i][-1]['content'][:80]!r}" for i in over[:3]]
    fix = f"raise data.max_prompt_length to >= {int(lens.max())} (and the model's context), or shorten/drop these rows"
    if ctx.engine == "local":
        level, what = "fail", "the local engine refuses them"
    elif bool(sel(ctx.cfg, "data.filter_overlong_prompts", False)):
        level = "fail" if len(over) == len(lens) else "warn"
        what = f"veRL drops them when the dataset loads (data.filter_overlong_prompts=true): {len(lens) - len(over)} rows remain"
    else:
        level, what = (
            "fail",
            "veRL's agent loop silently left-truncates them to the last tokens, cutting their start",
        )
    ctx.report.add("lengths", level, f"{key}={path}", f"{len(over)} of {stats}: {what}", fix, ex)


def _check_context(ctx: Context, limit: int) -> None:
    cfg_file = Path(str(ctx.cfg.actor_rollout_ref.model.path)).expanduser() / "config.json"
    if not cfg_file.is_file():
        return
    c = json.loads(cfg_file.read_text())
    ctx_len = (c.get("text_config") or c).get("max_position_embeddings")
    need = limit + int(ctx.cfg.data.max_response_length)
    if ctx_len and need > int(ctx_len):
        ctx.report.add(
            "lengths",
            "fail" if ctx.engine == "verl" else "warn",
            "data.max_prompt_length + data.max_response_length",
            f"{need} tokens exceed the model's max_position_embeddings ({ctx_len}); vLLM refuses a longer max_model_len",
            "shorten max_response_length/max_prompt_length, or use a model with a longer context",
        )
