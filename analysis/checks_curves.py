"""The RLVR diagnostic checklist, part 2: entropy, length vs accuracy, base pass@k, reward hacking.

Heuristics (windows are the first / last 10% of logged steps):
- entropy collapse: last < 20% of first; no movement: |last - first| < 5% of first.
- "length rising, accuracy flat": mean length up > 20% while accuracy moves < 0.02 (absolute).
- suspicious reward rise: the smoothed reward climbs > 0.5 within 5% of the run (rewards ~[0, 1]).
- reward-hacking audit: the top-scored response of each prompt group (latest first), and flags: several answers (>1 ``<answer>`` tag or ``\\boxed``),
  empty reasoning (< 3 characters before the answer).
They point at what to read; they are not proofs. See ``analysis.checks`` for the registry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from analysis.checks import CHECKS, Context, check, group_pass_rates, key_of, not_logged
from analysis.metrics import bootstrap_ci, pass_at_k
from analysis.render import Section, Table, fmt
from core.runs import Series, group_key, is_correct, response_length

ACC_KEYS = ("^val-core/.*/acc/mean@", "^val-core/.*/reward/mean@", "critic/score/mean")
_ANS = re.compile(r"<answer>|\\boxed\s*\{|\\fbox\s*\{")


def _first_last(s: Series, frac: float = 0.1) -> tuple[float, float]:
    return float(s.window(frac, last=False).mean()), float(s.window(frac, last=True).mean())


@check("entropy", 4, "4. Entropy")
def entropy(ctx: Context) -> Section:
    title = CHECKS.get("entropy").title
    s = ctx.run.series("actor/entropy", "actor/entropy_loss")
    if s is None or len(s) < 2:
        return not_logged(title, "actor/entropy (needs >= 2 steps)")
    first, last = _first_last(s)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(s.steps, s.values)
    ax.set(xlabel="step", ylabel="entropy", title="policy entropy")
    sec = Section(title, figures=[ctx.doc.save_figure(fig, "entropy")])
    rel = (last - first) / abs(first) if first else float("nan")
    if first > 0 and last < 0.2 * first:
        sec.status, what = (
            "warn",
            "collapsed — exploration stopped (raise clip_ratio_high, lower lr, check KL)",
        )
    elif abs(rel) < 0.05:
        sec.status, what = "warn", "did not move — the policy may not be learning"
    else:
        sec.status, what = "ok", "moving without collapse"
    sec.verdict = f"entropy {fmt(first)} → {fmt(last)} ({rel:+.0%}): {what}"
    return sec


def length_by_correctness(rows: list[dict[str, Any]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"correct"/"incorrect": (steps, mean response length)} from sample dumps."""
    acc: dict[tuple[str, int], list[float]] = {}
    for r in rows:
        c = is_correct(r)
        if c is not None:
            acc.setdefault(("correct" if c else "incorrect", int(r.get("step", 0))), []).append(
                response_length(r)
            )
    out = {}
    for label in ("correct", "incorrect"):
        steps = sorted(s for lab, s in acc if lab == label)
        if steps:
            out[label] = (np.array(steps), np.array([np.mean(acc[(label, s)]) for s in steps]))
    return out


@check("length_vs_accuracy", 5, "5. Response length vs accuracy")
def length_vs_accuracy(ctx: Context) -> Section:
    title = CHECKS.get("length_vs_accuracy").title
    length = ctx.run.series("response_length/mean")
    accuracy = ctx.run.series(*ACC_KEYS)
    split = length_by_correctness(ctx.rollouts)
    if length is None and not split:
        return not_logged(title, "response_length/mean and sample dumps")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    if length is not None:
        axes[0].plot(length.steps, length.values, label="all (logged)", color="k")
    for label, (st, val) in split.items():
        axes[0].plot(st, val, label=label, alpha=0.8)
    axes[0].set(xlabel="step", ylabel="response length", title="length")
    axes[0].legend(fontsize=8)
    if accuracy is not None:
        axes[1].plot(accuracy.steps, accuracy.values, color="tab:green")
        axes[1].set(xlabel="step", ylabel="accuracy", title=key_of(ctx, accuracy))
    else:
        axes[1].axis("off")
    sec = Section(title, figures=[ctx.doc.save_figure(fig, "length_vs_accuracy")])
    if length is None or accuracy is None or len(length) < 2 or len(accuracy) < 2:
        sec.status = "info"
        sec.verdict = "length split shown; not logged: " + (
            "response_length/mean" if length is None else "an accuracy/score curve"
        )
        return sec
    l0, l1 = _first_last(length)
    a0, a1 = _first_last(accuracy)
    grow = (l1 - l0) / l0 if l0 else float("nan")
    if grow > 0.2 and abs(a1 - a0) < 0.02:
        sec.status = "warn"
        tail = "length rising, accuracy flat — check loss aggregation and the length penalty"
    else:
        sec.status, tail = "ok", "no 'length rising, accuracy flat' pattern"
    sec.verdict = f"length {fmt(l0)} → {fmt(l1)} ({grow:+.0%}), accuracy {fmt(a0)} → {fmt(a1)}: {tail}"
    if split:
        sec.tables.append(
            Table(
                ["samples", "mean length (last 10% of dumps)"],
                [[k, float(v[1][-max(1, len(v[1]) // 10) :].mean())] for k, v in split.items()],
            )
        )
    return sec


def _load_eval(ctx: Context) -> tuple[dict[str, Any] | None, str]:
    """``base_eval=`` if given, else the run's ``eval*/result.json`` of its *initial* model
    (``settings.model`` == the config's model path; ``eval_base*`` dirs first); an evaluation of
    a trained checkpoint is not a base-model baseline and is skipped."""
    if ctx.cfg.base_eval:
        paths = [Path(str(ctx.cfg.base_eval))]
    else:
        paths = sorted(ctx.run.path.glob("eval_base*/result.json")) + sorted(
            ctx.run.path.glob("eval*/result.json")
        )
    base = ctx.run.cfg("actor_rollout_ref.model.path")
    for p in dict.fromkeys(paths):
        try:
            res = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        st = res.get("settings", {})
        model = str(Path(str(st.get("model", ""))).expanduser())
        untrained = base and model == str(Path(str(base)).expanduser()) and not st.get("checkpoint_state")
        if ctx.cfg.base_eval or p.parent.name.startswith("eval_base") or untrained:
            return res, str(p)
    return None, ""


@check("base_pass_at_k", 6, "6. Base model: pass@1 vs pass@k")
def base_pass_at_k(ctx: Context) -> Section:
    title = CHECKS.get("base_pass_at_k").title
    result, where = _load_eval(ctx)
    if result is not None and "overall" in result:
        ov = result["overall"]
        ks = sorted(int(k) for k in ov.get("pass", {}))
        if ks:
            p1, pk = ov["pass"][str(ks[0])], ov["pass"][str(ks[-1])]
            sec = Section(
                title,
                "info",
                f"pass@{ks[0]} {fmt(p1['mean'])} [{fmt(p1['lo'])}, {fmt(p1['hi'])}], "
                f"pass@{ks[-1]} {fmt(pk['mean'])} [{fmt(pk['lo'])}, {fmt(pk['hi'])}] "
                f"(model {result.get('settings', {}).get('model', '?')}; {where}); RL gains count above this",
            )
            base = ctx.run.cfg("actor_rollout_ref.model.path")
            evaluated = str(result.get("settings", {}).get("model", ""))
            if base and Path(evaluated).expanduser() != Path(str(base)).expanduser():
                sec.status = "warn"
                sec.verdict += f" — but this run started from {base}, not the evaluated model"
            acc = ctx.run.series(*ACC_KEYS)
            if acc is not None and ks[0] == 1:
                last = float(acc.window(0.1).mean())
                sec.verdict += f"; this run ends at {fmt(last)} ({last - p1['mean']:+.3f} over base pass@1)"
            sec.tables.append(
                Table(
                    ["k", "pass@k", "maj@k", "mean@k"],
                    [
                        [
                            k,
                            ov["pass"][str(k)]["mean"],
                            ov.get("maj", {}).get(str(k), {}).get("mean"),
                            ov.get("mean", {}).get(str(k), {}).get("mean"),
                        ]
                        for k in ks
                    ],
                )
            )
            return sec
    steps = ctx.run.sample_steps("validation")
    if steps:
        rates = group_pass_rates(ctx.run.samples("validation", steps[0]))
        if steps[0] in rates:
            counts: dict[str, list[bool]] = {}
            for r in ctx.run.samples("validation", steps[0]):
                if is_correct(r) is not None:
                    counts.setdefault(group_key(r), []).append(bool(is_correct(r)))
            n = min(len(v) for v in counts.values())
            c = np.array([sum(v[:n]) for v in counts.values()])
            p1, pn = pass_at_k(n, c, 1), pass_at_k(n, c, n)
            lo1, hi1 = bootstrap_ci(p1)
            return Section(
                title,
                "info",
                f"from validation step {steps[0]} ({len(c)} prompts × {n}): "
                f"pass@1 {fmt(float(np.mean(p1)))} [{fmt(lo1)}, {fmt(hi1)}], pass@{n} "
                f"{fmt(float(np.mean(pn)))} (for the base model's own numbers run make eval on it)",
            )
    return not_logged(
        title,
        "a base-model evaluation",
        "make eval MODEL=<base model> DATA=<val parquet> N=64 OUT=<run>/eval_base",
    )


def hack_flags(text: str) -> list[str]:
    """Reward-hacking flags of one response (see module docstring)."""
    flags = []
    if len(_ANS.findall(text)) > 1:
        flags.append("several answers")
    m = _ANS.search(text)
    before = text[: m.start()] if m else text
    reasoning = re.sub(r"</?think>", "", before).strip()
    if "<think>" in text:
        inner = re.search(r"<think>(.*?)</think>", text, re.S)
        reasoning = inner.group(1).strip() if inner else reasoning
    if len(reasoning) < 3:
        flags.append("empty reasoning")
    return flags


def fastest_rise(s: Series, frac: float = 0.05) -> float:
    """Largest increase of the (rolling-mean) curve within ``frac`` of the run."""
    v = s.values[np.isfinite(s.values)]
    if v.size < 4:
        return 0.0
    w = max(2, int(round(v.size * frac)))
    sm = np.convolve(v, np.ones(w) / w, mode="valid") if v.size > 2 * w else v
    lag = min(w, sm.size - 1)
    return float(np.max(sm[lag:] - sm[:-lag])) if lag > 0 else 0.0


@check("reward_hacking", 7, "7. Reward-hacking audit")
def reward_hacking(ctx: Context) -> Section:
    title = CHECKS.get("reward_hacking").title
    rows = ctx.samples
    reward = ctx.run.series("critic/score/mean", "critic/rewards/mean")
    if not rows and reward is None:
        return not_logged(title, "sample dumps and critic/score/mean")
    sec = Section(title, "ok")
    parts = []
    if rows:
        scored = [r for r in rows if isinstance(r.get("score"), (int, float))]
        ranked = sorted(scored, key=lambda r: (-float(r["score"]), -int(r.get("step", 0))))
        top: list[dict[str, Any]] = []
        seen: set[tuple[Any, str]] = set()
        for r in ranked:  # one per prompt group, so the table is not one prompt repeated
            if (r.get("step"), group_key(r)) not in seen and len(top) < int(ctx.cfg.top_samples):
                seen.add((r.get("step"), group_key(r)))
                top.append(r)
        good = [r for r in scored if is_correct(r)]
        flagged = {
            f: sum(f in hack_flags(str(r.get("output", ""))) for r in good)
            for f in ("several answers", "empty reasoning")
        }
        parts.append(", ".join(f"{f}: {c}/{len(good)} rewarded responses" for f, c in flagged.items()))
        if good and any(c / len(good) > 0.05 for c in flagged.values()):
            sec.status = "warn"
        sec.tables.append(
            Table(
                ["step", "score", "flags", "response (first 160 chars)"],
                [
                    [
                        r.get("step"),
                        r.get("score"),
                        ", ".join(hack_flags(str(r.get("output", "")))) or "-",
                        str(r.get("output", ""))[:160],
                    ]
                    for r in top
                ],
            )
        )
    if reward is not None:
        rise = fastest_rise(reward)
        parts.append(f"fastest reward rise {fmt(rise)} within 5% of the run")
        if rise > 0.5:
            sec.status = "warn"
            parts[-1] += " — suspiciously fast; read the top-scored responses"
    sec.verdict = "; ".join(parts) + (
        "" if sec.status == "warn" else " (thresholds: >5% flagged, rise > 0.5)"
    )
    return sec
