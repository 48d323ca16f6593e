"""The block of seed 002's thinking-budget curve (``results/thinking_budget/``), for ``make docs``.

- ``thinking-budget``: the figure (held-out accuracy against the hard thinking budget, one panel
  per model -- the base model and the first seed's RL-trained one -- one line per difficulty level
  with its 95% interval, all levels in black), the accuracy table per model x level x budget, the
  share of responses each budget cut, and one generated sentence per curve saying where it rises,
  plateaus and whether it falls (``analysis.thinking_budget.describe``); with several RL seeds
  recorded, a second figure and table over seeds (``analysis.thinking_budget.across_seeds``).
The figure and the tables are ``analysis.thinking_budget``'s :func:`draw` and :func:`curve_table`
(also ``make budget``'s PNG and tables). Renders only what the results files hold; a missing
experiment renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table
from analysis.thinking_budget import LABELS, across_seeds, curve_table, describe, draw
from docgen.engine import DocFigure, Rendered, source_line
from docgen.results import missing, read

EXP = "thinking_budget"


def per_seed(tables: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """``{seed: budget result}`` from an experiment's tables (``budget-s<seed>``; a recording from
    before seeds were recorded holds one ``budget`` table, taken as seed 0)."""
    out = {int(n.split("-s", 1)[1]): t for n, t in tables.items() if n.startswith("budget-s")}
    return out or ({0: tables["budget"]} if "budget" in tables else {})


def seeds_block(curves: dict[int, dict[str, Any]]) -> tuple[str, DocFigure]:
    """The RL-trained curves of every seed as one: figure, table per level and the claim's check."""
    agg = across_seeds({s: c["models"]["rl"]["groups"] for s, c in curves.items()})
    fig = DocFigure(
        "thinking_budget_seeds",
        {"rl_seeds": agg},
        draw,
        alt="held-out accuracy against a hard thinking budget, mean over RL seeds",
    )
    rows = []
    for name, g in agg["groups"].items():
        last = max(g["budgets"], key=int)
        c = g["budgets"][last]
        rows.append(
            [
                name,
                ", ".join(f"N={b}" for b in g["plateau_from"]),
                f"{g['rises']}/{len(agg['seeds'])}",
                f"{g['falls']}/{len(agg['seeds'])}",
                f"{c['acc']:.2f} [{c['lo']:.2f}, {c['hi']:.2f}]",
            ]
        )
    n = len(agg["seeds"])
    head = ["level", "plateau from (per seed)", "rises", "falls", f"accuracy at N={last} [95% t over seeds]"]
    text = (
        f"**After RL, over {n} RL seeds** ({', '.join(map(str, agg['seeds']))}: one run each from the same "
        "base model, each evaluated as above; the tables above are the first seed's):\n\n{fig:thinking_budget_seeds}"
        f"\n\n{Table(head, rows).markdown()}\n\nThe plateau budget never shrinks as the level rises in "
        f"{agg['ordered_seeds']} of {n} seeds."
    )
    return text, fig


def thinking_budget() -> Rendered:
    """The figure, the per-model tables and the generated shape sentences; across seeds when recorded."""
    exp = read(EXP) or {}
    curves = per_seed(exp.get("tables", {}))
    if not curves:
        return missing(EXP)
    first = min(curves)
    res = curves[first]
    s, models = res["settings"], res["models"]
    fig = DocFigure("thinking_budget", models, draw, alt="held-out accuracy against a hard thinking budget")
    n_prompts = models["rl"]["groups"]["all"]["prompts"]
    parts = [
        "{fig:thinking_budget}",
        f"{n_prompts} held-out prompts x {s['n']} samples at T={s['temperature']}; the reasoning cut at N "
        f"tokens and `{s['force_text']}` appended, then at most {s['max_answer']} answer tokens; "
        "95% percentile-bootstrap intervals over prompts; level k = number of terms.",
    ]
    for label, m in models.items():
        lines = "\n".join(f"- {g}: {describe(v)}" for g, v in m["groups"].items())
        title = LABELS.get(label, label) + (f", seed {first}" if label == "rl" else "")
        parts.append(f"**{title}** ({m['cpu_seconds'] / 60:.1f} CPU min):\n\n{curve_table(m)}\n\n{lines}")
    figures = [fig]
    if len(curves) > 1:
        text, seeds_fig = seeds_block(curves)
        parts.append(text)
        figures.append(seeds_fig)
    design = exp.get("design", {})
    if design.get("claim"):
        parts.append(f"Claim (declared before the runs): {design['claim']}.")
    runs = [
        f"{r['run_id']} {r['summary']['start_acc']:.3f} → {r['summary']['end_acc']:.3f}"
        for r in exp.get("runs", {}).values()
    ]
    if runs:
        parts.append(f"The RL runs, held-out accuracy over their own evaluation: {'; '.join(runs)}.")
    sources = [source_line(f"results/{EXP}/", curves[first].get("provenance"))]
    return Rendered("\n\n".join(parts), figures=figures, sources=sources)
