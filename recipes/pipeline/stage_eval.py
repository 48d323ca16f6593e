"""The ``eval`` stage: held-out accuracy of several stages' models, with CIs, as Markdown + PNG.

``models: {label: <stage>}`` names what to compare; a seeded stage contributes one model per seed.
Each model answers the first ``problems`` held-out prompts ``n`` times at T=1 (the local engine's
sampler; the verifier's ``acc``). Per model: mean accuracy with a percentile-bootstrap 95% CI over
problems (``analysis.metrics.bootstrap_ci``). Per label with >= 2 seeds: the mean over seeds with a
Student-t 95% CI (``analysis.metrics.t_ci``), and for each pair in ``compare`` the difference of
means with a Welch-t CI (``analysis.metrics.welch_diff_ci``). Writes ``eval.json``, ``report.md``/``report.html`` (the
project's renderer, ``analysis.render``), ``report.png`` (per-label bars with CIs and one dot per seed) and adds the stage timings of
``pipeline.json``. On veRL it writes one ``analysis.evaluate`` command per model instead.
Not covered: pass@k for k > 1 (use ``make eval``), significance corrections for many pairs.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch

from analysis.metrics import bootstrap_ci, t_ci, welch_diff_ci
from analysis.render import Document, Section, Table
from core import model as models_
from core.data import load_prompts
from core.sampling import LocalSampler, Settings, pass_rates
from recipes.pipeline.core import STAGES, StageContext, log
from rewards import compute_score


def _models(ctx: StageContext) -> dict[str, list[tuple[str, str]]]:
    """label -> [(instance name, model path)]."""
    out: dict[str, list[tuple[str, str]]] = {}
    for label, ref in ctx.input("models").items():
        items = ref if isinstance(ref, list) else [ref]
        names = ctx.plan.refs["models"][label]
        inst = names.get("stages") or [names.get("stage") or f"base:{names.get('base')}"]
        out[label] = [(n, it["model"]) for n, it in zip(inst, items, strict=True)]
    return out


def summarize(per_model: dict[str, list[dict[str, Any]]], compare: list[list[str]]) -> dict[str, Any]:
    """Label-level means and CIs from per-model accuracies (``{"acc", ...}`` per seed)."""
    labels: dict[str, Any] = {}
    for label, rows in per_model.items():
        accs = [r["acc"] for r in rows]
        lo, hi = t_ci(accs) if len(accs) >= 2 else (rows[0]["lo"], rows[0]["hi"])
        labels[label] = {
            "mean": float(np.mean(accs)),
            "lo": lo,
            "hi": hi,
            "seeds": len(accs),
            "per_seed": accs,
            "ci": "t over seeds" if len(accs) >= 2 else "bootstrap over problems",
        }
    diffs = []
    for a, b in compare:
        if a in per_model and b in per_model:
            d, lo, hi = welch_diff_ci([r["acc"] for r in per_model[a]], [r["acc"] for r in per_model[b]])
            diffs.append({"a": a, "b": b, "diff_b_minus_a": d, "lo": lo, "hi": hi})
    return {"labels": labels, "differences": diffs}


def _fmt_ci(m: float, lo: float, hi: float) -> str:
    if np.isnan(lo) or np.isnan(hi):
        return f"{m:.3f} [n/a: needs >= 2 seeds on each side]"
    return f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def write_report(
    run_dir: Path, title: str, res: dict[str, Any], notes: list[str], timings: dict[str, Any]
) -> dict[str, Path]:
    """``report.md`` / ``report.html`` (the project's renderer) with ``report.png``: bars with CIs."""
    lab = res["labels"]
    doc = Document(title, run_dir)
    doc.intro.append(
        f"Held-out accuracy (T=1 sampled, {res['problems']} problems x n={res['n']}; "
        "95% CI: Student-t over seeds when a row has >= 2 seeds, else bootstrap over problems)."
    )
    tables = [
        Table(
            ["model", "accuracy (95% CI)", "seeds", "per seed"],
            [
                [
                    name,
                    _fmt_ci(v["mean"], v["lo"], v["hi"]),
                    v["seeds"],
                    ", ".join(f"{x:.3f}" for x in v["per_seed"]),
                ]
                for name, v in lab.items()
            ],
        )
    ]
    if res["differences"]:
        rows = [
            [f"{d['b']} - {d['a']}", _fmt_ci(d["diff_b_minus_a"], d["lo"], d["hi"])]
            for d in res["differences"]
        ]
        tables.append(Table(["comparison", "difference (95% Welch CI)"], rows))
    if timings:
        tables.append(
            Table(
                ["stage", "status", "wall s", "CPU s", "training steps"],
                [
                    [
                        k,
                        v.get("status"),
                        v.get("seconds", ""),
                        v.get("cpu_seconds") or "",
                        v.get("steps") or "",
                    ]
                    for k, v in timings.items()
                ],
            )
        )
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(lab), 3.6))
    xs = np.arange(len(lab))
    err = np.array([[v["mean"] - v["lo"], v["hi"] - v["mean"]] for v in lab.values()]).T
    ax.bar(
        xs,
        [v["mean"] for v in lab.values()],
        yerr=np.nan_to_num(err),
        capsize=4,
        color="#9ecae1",
        edgecolor="k",
    )
    for x, v in zip(xs, lab.values(), strict=True):
        ax.plot([x] * len(v["per_seed"]), v["per_seed"], "k.", ms=6)
    ax.set_xticks(xs, list(lab), rotation=20, ha="right")
    ax.set(ylabel="held-out accuracy", ylim=(0, 1), title=title)
    doc.sections.append(
        Section("Accuracy", tables=tables, text=notes, figures=[doc.save_figure(fig, "report")])
    )
    return doc.write("report")


def _steps(out: dict[str, Any]) -> str | None:
    """'<n> SFT' or '<n> RL' from a training stage's outputs (None for data stages)."""
    if "sft" in out:
        return f"{out['sft']['steps']} SFT ({out['sft']['stopped_by']})"
    if "summary" in out:
        return f"{out['summary']['steps']} RL"
    return None


def _verl_commands(ctx: StageContext, models: dict[str, list[tuple[str, str]]], test: str) -> list[str]:
    n, problems = int(ctx.opt("n", 1)), int(ctx.need("problems"))
    return [
        shlex.join(
            [
                sys.executable,
                "-m",
                "analysis.evaluate",
                f"model={path}",
                f"data={test}",
                f"n={n}",
                "k=[1]",
                f"limit={problems}",
                f"out={ctx.run_dir / inst}",
            ]
        )
        for items in models.values()
        for inst, path in items
    ]


def evaluate_models(
    ctx: StageContext, models: dict[str, list[tuple[str, str]]], test: str
) -> tuple[dict[str, Any], int]:
    """label -> per-model accuracy with a bootstrap CI over problems; and the number of problems."""
    torch.set_num_threads(int(ctx.opt("threads", 1)))
    n, problems, max_new = int(ctx.opt("n", 1)), int(ctx.need("problems")), int(ctx.need("max_new_tokens"))
    per_model: dict[str, list[dict[str, Any]]] = {}
    for label, items in models.items():
        for inst, path in items:
            model, tok = models_.load(path)
            prompts = load_prompts(test, tok, int(ctx.opt("max_prompt_length", 64)), limit=problems)
            sampler = LocalSampler.of(model, tok, Settings(seed=10_007 + ctx.plan.seed))
            rates = pass_rates(sampler, prompts, compute_score, max_new, n=n)
            lo, hi = bootstrap_ci(rates)
            acc = float(np.mean(rates))
            per_model.setdefault(label, []).append(
                {"instance": inst, "model": path, "acc": acc, "lo": lo, "hi": hi}
            )
            log(f"[eval] {label} ({inst}): {acc:.3f} [{lo:.3f}, {hi:.3f}]")
    return per_model, len(prompts)


def _timings(ctx: StageContext) -> dict[str, Any]:
    man = json.loads((ctx.pipeline_dir / "pipeline.json").read_text())
    return {
        k: {
            "status": v.get("status"),
            "seconds": v.get("seconds"),
            "cpu_seconds": v.get("cpu_seconds"),
            "steps": _steps(v.get("outputs") or {}),
        }
        for k, v in man["stages"].items()
        if k in man["order"] and k != ctx.plan.name
    }


@STAGES.register("eval")
def eval_stage(ctx: StageContext) -> dict[str, Any]:
    """Evaluate every listed model on the held-out prompts; write the comparison report."""
    models = _models(ctx)
    test = ctx.input("eval_data")["test"]
    if ctx.engine == "verl":
        return {"commands": _verl_commands(ctx, models, test)}
    if ctx.dry_run:
        return {"report": str(ctx.run_dir / "report.md")}
    per_model, problems = evaluate_models(ctx, models, test)
    res = {
        **summarize(per_model, [list(x) for x in (ctx.opt("compare") or [])]),
        "per_model": per_model,
        "problems": problems,
        "n": int(ctx.opt("n", 1)),
    }
    res["stage_seconds"] = timings = _timings(ctx)
    (ctx.run_dir / "eval.json").write_text(json.dumps(res, indent=2) + "\n")
    title = str(ctx.opt("title", f"pipeline {ctx.cfg.name}"))
    write_report(ctx.run_dir, title, res, [str(x) for x in (ctx.opt("notes") or [])], timings)
    return {
        "report": str(ctx.run_dir / "report.md"),
        "png": str(ctx.run_dir / "report.png"),
        "accuracy": {
            k: {kk: v[kk] for kk in ("mean", "lo", "hi", "seeds")} for k, v in res["labels"].items()
        },
    }
