"""Check 6: the base model's pass@1 vs pass@k -- the ceiling RL gains are measured against.

Reads the base model's evaluation (``base_eval=``, else the run's ``eval_base*/`` or an
``eval*/result.json`` of its untrained starting model; a trained checkpoint's evaluation is no
baseline) and reports pass@1 and pass@k with their intervals and how far the run ends above base
pass@1; warns when the evaluated model is not the one the run started from. Without one, an
estimate from the first validation dump's groups (``make eval`` gives the real numbers).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from analysis.diagnose.curves import ACC_KEYS
from analysis.diagnose.difficulty import group_pass_rates
from analysis.diagnose.registry import CHECKS, Context, check, not_logged
from analysis.metrics import bootstrap_ci, pass_at_k
from analysis.render import Section, Table, fmt
from core.runs import group_key, is_correct


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
