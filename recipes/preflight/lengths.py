"""Prompt lengths with the run's own tokenizer and chat template, against ``data.max_prompt_length``.

Every row is counted, and only the rows that can be over the limit are tokenized:

1. the chat template is rendered for all rows in one batched call (``tokenize=False``, generation
   prompt on, ``data.apply_chat_template_kwargs``) and each text's UTF-8 byte length taken;
2. ``settings.exact_rows`` sampled rows go through ``apply_chat_template(tokenize=True)`` one by one
   (what veRL does). On them the bound *tokens <= bytes* is confirmed -- it holds for byte-level BPE
   (GPT-2, Llama 3, Qwen, DeepSeek: every token covers at least one byte) and for byte-fallback
   SentencePiece -- and so is the batched encoding (render, then encode without special tokens);
3. rows with more bytes than the limit are tokenized in one batched call; the others cannot be over.
If the sample contradicts the bound or the batched encoding, every row is tokenized (said in the
report). Length statistics (p50, p99) come from the sample; the over-limit count is exact.

What veRL 0.9.1 does with a longer prompt: with ``data.filter_overlong_prompts`` the row is dropped
when the dataset loads, otherwise the agent loop left-truncates it to ``rollout.prompt_length``
tokens, silently cutting its start (the local engine refuses it). Also checks that prompt +
response fit the model's context (``max_position_embeddings``, which vLLM enforces). Skipped, and
said so, when the tokenizer is not on disk. Not covered: tool schemas in the template.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.data import chat_ids
from recipes.preflight.context import Context, sel


def _messages(t: Any, key: str) -> list[list[dict[str, str]]]:
    return [[{"role": m["role"], "content": m["content"]} for m in p] for p in t.column(key).to_pylist()]


def render(tok: Any, convs: list[list[dict[str, str]]], kw: dict[str, Any], batch: int = 8192) -> list[str]:
    """The chat-template texts of ``convs`` with the generation prompt (batched)."""
    out: list[str] = []
    for i in range(0, len(convs), batch):
        out += tok.apply_chat_template(convs[i : i + batch], tokenize=False, add_generation_prompt=True, **kw)
    return out


def encode_lengths(tok: Any, texts: list[str]) -> np.ndarray:
    """Token counts of already rendered texts: one batched call of the Rust tokenizer, no special
    tokens added and no id lists built (``len`` of each encoding); ``tok(...)`` for a slow tokenizer."""
    if not texts:
        return np.zeros(0, dtype=np.int64)
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None:
        fast = getattr(backend, "encode_batch_fast", backend.encode_batch)
        counts = (len(e) for e in fast(texts, add_special_tokens=False))
    else:
        counts = (len(e) for e in tok(texts, add_special_tokens=False)["input_ids"])
    return np.fromiter(counts, dtype=np.int64, count=len(texts))


def measure(tok: Any, convs: list[list[dict[str, str]]], kw: dict[str, Any], batch: int = 8192) -> np.ndarray:
    """Token counts of every conversation (rendered and encoded in batches; no bound used)."""
    texts = render(tok, convs, kw, batch)
    return np.concatenate(
        [encode_lengths(tok, texts[i : i + batch]) for i in range(0, len(texts), batch)] or [[]]
    )


def bounded_lengths(
    tok: Any, convs: list, kw: dict[str, Any], limit: int, sample: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(lengths with -1 where not tokenized, exact lengths of ``sample``, how it was measured)."""
    texts = render(tok, convs, kw)
    nbytes = pc.binary_length(pa.array(texts, type=pa.string())).to_numpy(zero_copy_only=False)
    exact = np.asarray([len(chat_ids(tok, convs[i], kw)) for i in sample], dtype=np.int64)
    batched_ok = bool(np.array_equal(encode_lengths(tok, [texts[i] for i in sample]), exact))
    bound_ok = bool((exact <= nbytes[sample]).all())
    todo = np.flatnonzero(nbytes > limit) if bound_ok else np.arange(len(texts))
    lens = np.full(len(texts), -1, dtype=np.int64)
    if batched_ok:
        lens[todo] = encode_lengths(tok, [texts[i] for i in todo])
    else:
        lens[todo] = [len(chat_ids(tok, convs[i], kw)) for i in todo]
    info = {"tokenized": int(len(todo)), "bound_holds": bound_ok, "batched_equals_exact": batched_ok}
    return lens, exact, info


def check_lengths(ctx: Context) -> dict[str, float]:
    """Prompt lengths of all rows vs ``rollout.prompt_length`` (= ``data.max_prompt_length``)."""
    tok = ctx.tokenizer()
    if tok is None:
        ctx.report.add(
            "lengths", "info", f"actor_rollout_ref.model.path={ctx.tokenizer_path()}",
            f"prompt lengths not checked: {ctx.tokenizer_skip()}",
            "put the model (or its tokenizer: actor_rollout_ref.model.tokenizer_path) on disk to check them",
        )  # fmt: skip
        return {}
    if not getattr(tok, "chat_template", None):
        ctx.report.add(
            "lengths", "fail", f"tokenizer at {ctx.tokenizer_path()}",
            "has no chat template; veRL's agent loop applies one to every prompt",
            "use a tokenizer with a chat template or set actor_rollout_ref.model.custom_chat_template",
        )  # fmt: skip
        return {}
    limit = int(sel(ctx.cfg, "actor_rollout_ref.rollout.prompt_length") or ctx.cfg.data.max_prompt_length)
    pkey = str(sel(ctx.cfg, "data.prompt_key", "prompt"))
    rows, tokenized, sampled = 0, 0, 0
    rng = np.random.default_rng(int(ctx.settings.seed))
    for key, path in ctx.files():
        t = ctx.table(path)
        if t is None or pkey not in t.column_names:
            continue
        try:
            convs = _messages(t, pkey)
            sample = np.sort(
                rng.choice(len(convs), size=min(int(ctx.settings.exact_rows), len(convs)), replace=False)
            )
            lens, exact, info = bounded_lengths(tok, convs, ctx.chat_kwargs(), limit, sample)
        except Exception as e:  # noqa: BLE001 - a template that cannot render a row is the finding
            ctx.report.add(
                "lengths", "fail", f"{key}={path}", f"the chat template fails: {type(e).__name__}: {e}",
                "fix the prompts or the template",
            )  # fmt: skip
            continue
        rows, tokenized, sampled = rows + len(convs), tokenized + info["tokenized"], sampled + len(sample)
        ctx.report.facts.setdefault("lengths", {})[path] = info
        _report_file(ctx, key, path, lens, exact, limit, convs, info)
    _check_context(ctx, limit)
    return {"rows": float(rows), "tokenized": float(tokenized), "sampled": float(sampled)}


def _report_file(
    ctx: Context,
    key: str,
    path: str,
    lens: np.ndarray,
    exact: np.ndarray,
    limit: int,
    convs: list,
    info: dict,
) -> None:
    over = np.flatnonzero(lens > limit)
    info["over_limit"] = int(len(over))
    p50, p99 = np.percentile(exact, [50, 99]) if len(exact) else (0, 0)
    longest = max(int(lens.max(initial=0)), int(exact.max(initial=0)))
    how = (
        f"{info['tokenized']} with more bytes than the limit tokenized, the rest within it by tokens <= bytes"
        if info["bound_holds"]
        else "all tokenized (tokens <= bytes does not hold for this tokenizer)"
    )
    stats = (
        f"{len(lens)} prompts ({how}; p50 {p50:.0f}, p99 {p99:.0f} tokens on {len(exact)} sampled rows; "
        f"longest {longest}; limit {limit})"
    )
    if not len(over):
        ctx.report.add("lengths", "info", f"{key}={path}", stats)
        return
    ex = [f"row {i}: {lens[i]} tokens: {convs[i][-1]['content'][:80]!r}" for i in over[:3]]
    fix = (
        f"raise data.max_prompt_length to >= {longest} (and the model's context), or shorten/drop these rows"
    )
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
    ctx.report.add(
        "lengths", level, f"{key}={path}", f"{len(over)} of {stats} are over the limit: {what}", fix, ex
    )


def _check_context(ctx: Context, limit: int) -> None:
    cfg_file = Path(str(ctx.cfg.actor_rollout_ref.model.path)).expanduser() / "config.json"
    if not cfg_file.is_file():
        return
    c = json.loads(cfg_file.read_text())
    ctx_len = (c.get("text_config") or c).get("max_position_embeddings")
    need = limit + int(ctx.cfg.data.max_response_length)
    if ctx_len and need > int(ctx_len):
        ctx.report.add(
            "lengths", "fail" if ctx.engine == "verl" else "warn", "data.max_prompt_length + data.max_response_length",
            f"{need} tokens exceed the model's max_position_embeddings ({ctx_len}); vLLM refuses a longer max_model_len",
            "shorten max_response_length/max_prompt_length, or use a model with a longer context",
        )  # fmt: skip
