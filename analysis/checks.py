"""The RLVR diagnostic checklist, part 1: registry, context, graders and the sample-level checks.

Checklist order (seed document, "RLVR 训练不涨分时按顺序查"): (1) verifier false negatives,
(2) difficulty distribution, (3) train/rollout log-prob alignment, (4) entropy, (5) length vs
accuracy, (6) the base model's pass@1 vs pass@k, plus a reward-hacking audit. Checks 1-3 live
here, 4-7 in ``analysis.checks_curves``. Each check is registered in ``CHECKS`` and returns a
``render.Section`` with a status (ok / warn / not_logged / info) and a one-line verdict; data a
run did not log gives ``not_logged``, never an exception.

Thresholds are heuristics, stated in each verdict; they flag what to look at, they prove nothing.
The independent graders (``GRADERS``) are deliberately not ``rewards``: math-verify when
installed, else a last-number comparison. Neither is ground truth; disagreements go to a human.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from omegaconf import DictConfig

from analysis.render import Document, Section, Table
from core.registry import Registry
from core.runs import ZERO_VAR_KEYS, Run, group_key, is_correct

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def answer_region(text: str) -> str:
    """The part of a response a grader should read: the last <answer> tag, else after </think>."""
    tags = _ANSWER.findall(text)
    if tags:
        return tags[-1]
    return text.split("</think>")[-1]


def _numeric_grader(response: str, gold: str) -> bool:
    nums = _NUMBER.findall(answer_region(response))
    gnums = _NUMBER.findall(str(gold))
    if not nums or not gnums:
        return False
    try:
        return abs(float(nums[-1].replace(",", "")) - float(gnums[-1].replace(",", ""))) < 1e-6
    except ValueError:
        return False


def _math_verify_grader(response: str, gold: str) -> bool:
    from math_verify import parse, verify  # loads SymPy (~1 s); only this grader needs it

    region = answer_region(response)
    gold_p = parse(f"${gold}$" if "\\" not in str(gold) else str(gold))
    return bool(verify(gold_p, parse(region)) or verify(gold_p, parse(f"${region}$")))


# name -> fn(response, gold) -> bool. An independent second opinion for the verifier audit.
GRADERS: Registry[Callable[[str, str], bool]] = Registry("grader")
GRADERS.add("numeric", _numeric_grader)
GRADERS.add("math_verify", _math_verify_grader)


def pick_grader(name: str) -> tuple[str, Callable[[str, str], bool]]:
    if name != "auto":
        return name, GRADERS.get(name)
    try:
        import math_verify  # noqa: F401

        return "math_verify", GRADERS.get("math_verify")
    except ImportError:
        return "numeric", GRADERS.get("numeric")


@dataclass
class Context:
    """What a check sees: the run, the output document and the command's settings."""

    run: Run
    doc: Document
    cfg: DictConfig
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    @cached_property
    def rollouts(self) -> list[dict[str, Any]]:
        return self.run.samples("rollouts")

    @cached_property
    def validation(self) -> list[dict[str, Any]]:
        return self.run.samples("validation")

    @property
    def samples(self) -> list[dict[str, Any]]:
        """Training rollouts if dumped, else validation samples."""
        return self.rollouts or self.validation


@dataclass(frozen=True)
class Check:
    order: int
    title: str
    fn: Callable[[Context], Section]


CHECKS: Registry[Check] = Registry("check")


def check(name: str, order: int, title: str) -> Callable[[Callable[[Context], Section]], Callable]:
    """Register a check function under ``name`` at position ``order`` of the checklist."""

    def deco(fn: Callable[[Context], Section]) -> Callable[[Context], Section]:
        CHECKS.add(name, Check(order, title, fn))
        return fn

    return deco


def not_logged(title: str, what: str, hint: str = "") -> Section:
    return Section(title, "not_logged", f"not logged: {what}" + (f" ({hint})" if hint else ""))


@check("verifier_audit", 1, "1. Verifier audit (false negatives)")
def verifier_audit(ctx: Context) -> Section:
    title = CHECKS.get("verifier_audit").title
    rows = [r for r in ctx.samples if is_correct(r) is False and r.get("gts") is not None]
    if not ctx.samples:
        return not_logged(
            title,
            "no rollouts/ or validation/ sample dumps",
            "veRL: set trainer.rollout_data_dir; local engine writes them",
        )
    if not rows:
        return Section(title, "info", "no zero-scored responses with a ground truth to audit")
    take = min(int(ctx.cfg.audit_samples), len(rows))
    picked = [rows[i] for i in sorted(ctx.rng.choice(len(rows), size=take, replace=False))]
    gname, grade = pick_grader(str(ctx.cfg.grader))
    disagree = []
    audit_path = ctx.doc.out / "verifier_audit.jsonl"
    with audit_path.open("w", encoding="utf-8") as fh:
        for r in picked:
            try:
                second = grade(str(r.get("output", "")), str(r.get("gts")))
            except Exception as exc:  # a grader crash is a finding, not a report crash
                second = False
                r = {**r, "grader_error": repr(exc)}
            row = {
                "step": r.get("step"),
                "input": r.get("input"),
                "output": r.get("output"),
                "gts": r.get("gts"),
                "pred": r.get("pred"),
                "score": r.get("score"),
                f"{gname}_correct": second,
                "human_label": None,
            }
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            if second:
                disagree.append(row)
    share = len(disagree) / take
    status = "ok" if not disagree else "warn"
    sec = Section(
        title,
        status,
        f"{len(disagree)}/{take} zero-scored responses judged correct by {gname} ({share:.0%}); "
        f"{'possible verifier false negatives — ' if disagree else ''}"
        f"label them by hand in {audit_path.name}",
    )
    if disagree:
        sec.tables.append(
            Table(
                ["step", "gold", "pred (verifier)", "response tail"],
                [[d["step"], d["gts"], d["pred"], str(d["output"])[-120:]] for d in disagree[:20]],
            )
        )
    return sec


def group_pass_rates(rows: list[dict[str, Any]]) -> dict[int, np.ndarray]:
    """{step: pass rate of each prompt group with >= 2 graded samples}."""
    groups: dict[tuple[int, str], list[bool]] = {}
    for r in rows:
        c = is_correct(r)
        if c is not None:
            groups.setdefault((int(r.get("step", 0)), group_key(r)), []).append(c)
    out: dict[int, list[float]] = {}
    for (step, _), vals in groups.items():
        if len(vals) >= 2:
            out.setdefault(step, []).append(float(np.mean(vals)))
    return {s: np.asarray(v) for s, v in sorted(out.items())}


def score_flat_share(rows: list[dict[str, Any]]) -> float:
    """Share of groups whose scores are all equal (std 0) -- with partial credit this differs
    from all-right/all-wrong, and it is what gives a group-normalised advantage of zero."""
    groups: dict[tuple[int, str], list[float]] = {}
    for r in rows:
        if isinstance(r.get("score"), (int, float)):
            groups.setdefault((int(r.get("step", 0)), group_key(r)), []).append(float(r["score"]))
    flat = [np.ptp(v) == 0 for v in groups.values() if len(v) >= 2]
    return float(np.mean(flat)) if flat else float("nan")


@check("difficulty", 2, "2. Difficulty: group pass rates")
def difficulty(ctx: Context) -> Section:
    title = CHECKS.get("difficulty").title
    rates = group_pass_rates(ctx.rollouts)
    zv = ctx.run.series(*ZERO_VAR_KEYS)
    if not rates and zv is None:
        return not_logged(
            title, "no rollout groups (uid or repeated prompts) and no rlvr/zero_var_group_frac"
        )
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    sec = Section(title)
    if rates:
        allr = np.concatenate(list(rates.values()))
        axes[0].hist(allr, bins=np.linspace(0, 1, 11), color="tab:blue", edgecolor="k")
        axes[0].set(xlabel="group pass rate", ylabel="groups", title=f"{allr.size} groups, all steps")
        steps = np.array(list(rates))
        wrong = np.array([np.mean(v == 0) for v in rates.values()])
        right = np.array([np.mean(v == 1) for v in rates.values()])
        axes[1].plot(steps, wrong, label="all wrong")
        axes[1].plot(steps, right, label="all right")
        zero_share, w_share, r_share = (
            np.mean((allr == 0) | (allr == 1)),
            np.mean(allr == 0),
            np.mean(allr == 1),
        )
        flat = score_flat_share(ctx.rollouts)
        verdict = (
            f"zero-variance groups {zero_share:.0%} (all wrong {w_share:.0%}, all right {r_share:.0%}) "
            f"over {allr.size} groups; equal scores (no advantage signal) in {flat:.0%}"
        )
    else:
        zero_share = float(np.nanmean(zv.values))
        verdict = f"zero-variance group share {zero_share:.0%} (rlvr/zero_var_group_frac; no group dumps)"
    if zv is not None:
        axes[1].plot(zv.steps, zv.values, "k--", label="zero-var (logged)")
        if rates:  # dumps may hold only the groups a dynamic filter kept; the log sees all
            verdict += f"; logged zero-variance share {float(np.nanmean(zv.values)):.0%}"
            zero_share = max(zero_share, float(np.nanmean(zv.values)))
    axes[1].set(xlabel="step", ylabel="share of groups", ylim=(-0.02, 1.02), title="zero-variance groups")
    axes[1].legend(fontsize=8)
    if not rates:
        axes[0].axis("off")
    sec.figures.append(ctx.doc.save_figure(fig, "difficulty"))
    sec.status = "warn" if zero_share > 0.5 else "ok"
    sec.verdict = verdict + (
        "; >50% give no gradient — filter or re-band the data" if zero_share > 0.5 else ""
    )
    return sec


# Logged train/rollout mismatch metrics, first found wins (veRL 0.9.1 names).
MISMATCH_KEYS = ("training/rollout_probs_diff_mean", "rollout_corr/log_ppl_abs_diff", "rollout_corr/kl")


def key_of(ctx: Context, s: object) -> str:
    """The metric name under which series ``s`` was logged."""
    return next((k for k, v in ctx.run.metrics.items() if v is s), "?")


@check("logprob_alignment", 3, "3. Train vs rollout log-probabilities")
def logprob_alignment(ctx: Context) -> Section:
    title = CHECKS.get("logprob_alignment").title
    pairs = np.array(
        [
            [float(r["rollout_log_prob"]), float(r["old_log_prob"])]
            for r in ctx.samples
            if r.get("rollout_log_prob") is not None and r.get("old_log_prob") is not None
        ],
        dtype=np.float64,
    ).reshape(-1, 2)
    diff = ctx.run.series(MISMATCH_KEYS[0], *MISMATCH_KEYS[1:])
    logged_r = ctx.run.series("training/rollout_actor_probs_pearson_corr")
    if pairs.shape[0] < 2 and diff is None and logged_r is None:
        return not_logged(
            title, "rollout_log_prob/old_log_prob per sample, " + ", ".join(MISMATCH_KEYS) + " or a pearson r"
        )
    sec = Section(title, "ok")
    parts = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    if pairs.shape[0] >= 2:
        corr = (
            float(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1])
            if np.ptp(pairs, axis=0).min() > 0
            else float("nan")
        )
        mad = float(np.mean(np.abs(pairs[:, 0] - pairs[:, 1])))
        axes[0].scatter(pairs[:, 0], pairs[:, 1], s=4, alpha=0.5)
        lo, hi = float(pairs.min()), float(pairs.max())
        axes[0].plot([lo, hi], [lo, hi], "r-", lw=1)
        axes[0].set(
            xlabel="rollout (inference) mean log-prob",
            ylabel="training mean log-prob",
            title=f"r={corr:.3f}, mean |diff|={mad:.3g}",
        )
        parts.append(
            f"per-sample mean log-prob r={corr:.3f}, mean |diff| {mad:.3g} over {pairs.shape[0]} samples"
        )
        if not corr > 0.9 or mad > 0.05:
            sec.status = "warn"
    else:
        axes[0].axis("off")
    if diff is not None or logged_r is not None:
        for s, label in ((diff, "diff"), (logged_r, "pearson r")):
            if s is not None:
                axes[1].plot(s.steps, s.values, label=label)
        axes[1].set(xlabel="step", ylabel="rollout vs training", title="logged mismatch")
        axes[1].legend(fontsize=8)
        if diff is not None:
            parts.append(f"logged mismatch ({key_of(ctx, diff)}): last {float(diff.window(0.1).mean()):.3g}")
            if float(np.nanmax(diff.values)) > 0.05:
                sec.status = "warn"
        if logged_r is not None:
            parts.append(f"logged pearson r: min {float(np.nanmin(logged_r.values)):.3f}")
            if float(np.nanmin(logged_r.values)) < 0.9:
                sec.status = "warn"
    else:
        axes[1].axis("off")
    sec.figures.append(ctx.doc.save_figure(fig, "logprob_alignment"))
    tail = (
        "; off the diagonal — suspect numerics (LM head precision first)"
        if sec.status == "warn"
        else "; on the diagonal (thresholds: r > 0.9, |diff| <= 0.05)"
    )
    sec.verdict = "; ".join(parts) + tail
    return sec
