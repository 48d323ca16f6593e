"""Reward contract: the configured reward function, called as veRL's reward managers call it, on
sampled rows with four responses each -- the gold answer, a wrong one, an empty one and an
over-long one -- returns what veRL can use, and fast enough.

What veRL 0.9.1's managers accept from ``compute_score(data_source, solution_str, ground_truth,
extra_info)``: one number (bool/int/float, numpy or 0-dim tensor) or a dict with a numeric
``score`` whose key set is the same for every response (the other keys are stacked across the
batch into ``reward_extra_info``). Anything else -- a list (a batch-style function), a string,
None, NaN or inf, an exception -- fails here instead of at step 1 on the GPUs. Scores outside
``settings.reward_range`` warn; a gold that does not score above the wrong and the empty response
fails (the reward would teach nothing). Time: the p99 of every reward call of the pre-flight,
times the calls of one step (``data.train_batch_size`` x ``rollout.n``) over ``reward.num_workers``
(veRL's parallel reward workers; 1 on the local engine), against the step's generation time from
:mod:`analysis.estimate` (veRL only). Not covered: async reward functions' concurrency, reward models.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from recipes.preflight.context import Context, sel
from recipes.preflight.data import row_dict
from recipes.preflight.golds import FORMS, gold_answer, perturb

FILLER = "Let me think about this step by step and check each part again. "


def overlong_text(ctx: Context, max_tokens: int) -> str:
    """A reasoning text of about ``max_tokens`` tokens (the run's tokenizer when on disk, else 4 chars/token)."""
    tok = ctx.tokenizer()
    per = len(tok(FILLER, add_special_tokens=False)["input_ids"]) if tok is not None else len(FILLER) / 4
    reps = int(math.ceil(max_tokens / max(per, 1)))
    return "<think>" + FILLER * reps


def contract_error(res: Any) -> str | None:
    """Why ``res`` is not one reward veRL can use, or None.

    >>> contract_error(1.0), contract_error({"score": 0.5, "acc": True}), contract_error([1.0, 0.0])
    (None, None, 'returned a list of 2 values for one response')
    >>> contract_error(float("nan")), contract_error("1.0"), contract_error({"acc": 1})
    ('returned nan', "returned a str ('1.0')", "returned a dict without 'score' (keys ['acc'])")
    """
    if isinstance(res, dict):
        if "score" not in res:
            return f"returned a dict without 'score' (keys {sorted(res)})"
        return contract_error(res["score"])
    if isinstance(res, (list, tuple)) or (hasattr(res, "ndim") and getattr(res, "ndim", 0) > 0):
        return f"returned a {type(res).__name__} of {len(res)} values for one response"
    if isinstance(res, (str, bytes)) or res is None:
        return f"returned a {type(res).__name__} ({res!r:.40})"
    try:
        v = float(res)
    except (TypeError, ValueError):
        return f"returned a {type(res).__name__}, not a number"
    return None if math.isfinite(v) else f"returned {v}"


def _score(res: Any) -> float:
    return float(res["score"] if isinstance(res, dict) else res)


def _responses(ctx: Context, path: str, i: int, row: dict[str, Any], long: str) -> dict[str, str]:
    answer = gold_answer(
        (row.get("reward_model") or {}).get("ground_truth"), dict(row.get("extra_info") or {})
    )
    tpl = FORMS[ctx.gold_forms.get(f"{path}:{i}", "answer_tag")]
    out = {"empty": "", "overlong": long}
    if answer is not None:
        out.update({"gold": tpl.format(a=answer), "wrong": tpl.format(a=perturb(answer))})
    return out


def check_reward(ctx: Context) -> dict[str, float]:
    """Call the reward function on ``settings.reward_rows`` rows x 4 responses; check and time it."""
    fn, desc = ctx.reward_fn()
    if fn is None:
        return {}
    skey = str(sel(ctx.cfg, "data.reward_fn_key", "data_source"))
    long = overlong_text(ctx, int(ctx.cfg.data.max_response_length))
    scores: dict[str, list[float]] = {}
    errors: dict[str, list[str]] = {}
    keysets: dict[frozenset, str] = {}
    calls = 0
    for _, path in ctx.files()[:1]:  # the training file: what the reward sees during training
        t = ctx.table(path)
        if t is None:
            continue
        for i in ctx.sample_rows(path, int(ctx.settings.reward_rows), per_source=2):
            row = row_dict(t, i)
            src, gold = row.get(skey), (row.get("reward_model") or {}).get("ground_truth")
            for kind, text in _responses(ctx, path, i, row, long).items():
                calls += 1
                try:
                    res = ctx.call_reward(src, text, gold, row.get("extra_info"))
                except Exception as e:  # noqa: BLE001 - a raising reward crashes the veRL step
                    errors.setdefault(f"raised on the {kind} response", []).append(
                        f"row {i} ({src}): {type(e).__name__}: {e}"
                    )
                    continue
                err = contract_error(res)
                if err:
                    errors.setdefault(err.split(" (")[0], []).append(
                        f"row {i} ({src}), {kind} response: {err}"
                    )
                    continue
                if isinstance(res, dict):
                    keysets.setdefault(frozenset(res), f"row {i} {kind}")
                scores.setdefault(kind, []).append(_score(res))
    where = f"reward.custom_reward_function ({desc})"
    for what, ex in errors.items():
        ctx.report.add(
            "reward",
            "fail",
            where,
            f"{what} ({len(ex)} of {calls} calls)",
            "return one float, or a dict with a finite 'score', per response; never raise on model text",
            ex,
        )
    if len(keysets) > 1:
        ctx.report.add(
            "reward",
            "fail",
            where,
            f"returns dicts with {len(keysets)} different key sets: veRL stacks every key across the batch",
            "return the same keys for every response",
            [f"{sorted(k)} ({w})" for k, w in keysets.items()],
        )
    _check_scores(ctx, where, scores)
    _check_time(ctx, where)
    return {"calls": float(calls)}


def _check_scores(ctx: Context, where: str, scores: dict[str, list[float]]) -> None:
    lo, hi = (float(x) for x in ctx.settings.reward_range)
    flat = [s for v in scores.values() for s in v]
    if flat and (min(flat) < lo or max(flat) > hi):
        ctx.report.add(
            "reward",
            "warn",
            where,
            f"scores span [{min(flat):.3g}, {max(flat):.3g}], outside reward_range [{lo}, {hi}]",
            "check the scale of the reward (or pass reward_range=[lo,hi] if it is intended)",
        )
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    ctx.report.facts["reward_mean_by_response"] = mean
    if "gold" in mean:
        for other in ("wrong", "empty"):
            if other in mean and not mean["gold"] > mean[other]:
                ctx.report.add(
                    "reward",
                    "fail",
                    where,
                    f"the gold response scores {mean['gold']:.3g} on average, not above the {other} one ({mean[other]:.3g})",
                    "the reward must prefer the right answer: check the verifier, the golds and the answer format",
                )
    if scores:
        ctx.report.add(
            "reward",
            "info",
            where,
            "mean score by response: " + ", ".join(f"{k} {v:.3g}" for k, v in mean.items()),
        )


def step_reward_calls(ctx: Context) -> int:
    """Reward calls of one training step: prompts per step x responses per prompt."""
    return int(ctx.cfg.data.train_batch_size) * int(ctx.cfg.actor_rollout_ref.rollout.n)


def _check_time(ctx: Context, where: str) -> None:
    times = np.asarray(ctx.reward_times)
    if not len(times):
        return
    p50, p99 = float(np.percentile(times, 50)), float(np.percentile(times, 99))
    workers = int(sel(ctx.cfg, "reward.num_workers", 1) or 1) if ctx.engine == "verl" else 1
    step = step_reward_calls(ctx) * p99 / workers
    ctx.report.facts["reward_time"] = {
        "calls_timed": len(times),
        "p50_s": p50,
        "p99_s": p99,
        "max_s": float(times.max()),
        "calls_per_step": step_reward_calls(ctx),
        "workers": workers,
        "step_s_at_p99": step,
    }
    msg = (
        f"p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms over {len(times)} calls; one step's "
        f"{step_reward_calls(ctx)} calls over {workers} worker(s) take ~{step:.2f} s at p99"
    )
    gen = ctx.report.facts.get("generation_s_per_step")
    share = float(ctx.settings.reward_share_warn)
    if gen:
        msg += f" vs ~{gen:.1f} s of generation ({step / gen:.0%})"
        if step > share * gen:
            ctx.report.add(
                "reward",
                "warn",
                where,
                msg + f", above {share:.0%}",
                "speed up the reward function or raise reward.num_workers",
            )
            return
    ctx.report.add("reward", "info", where, msg)
