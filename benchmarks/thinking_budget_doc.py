"""Docs section of seed 002's thinking-budget curve (``results/thinking_budget/``), for ``make docs``.

- ``thinking-budget``: the figure (held-out accuracy against the hard thinking budget, one panel
  per model -- the base model and the first seed's RL-trained one -- one line per difficulty level
  with its 95% interval, all levels in black), the accuracy table per model x level x budget, the
  share of responses each budget cut, and one generated sentence per curve saying where it rises,
  plateaus and whether it falls (``analysis.thinking_budget.describe``); with several RL seeds
  recorded, a second figure and table over seeds (``analysis.thinking_budget.across_seeds``).
:func:`draw` and :func:`curve_table` are also ``make budget``'s PNG and tables. Renders only what the results files hold; a
missing experiment renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.docgen import SECTIONS, DocFigure, Rendered, source_line
from analysis.render import Table
from analysis.thinking_budget import across_seeds, describe
from core import results

EXP = "thinking_budget"
LABELS = {
    "base": "base model (before RL)",
    "rl": "after RL",
    "rl_seeds": "after RL: mean over RL seeds (95% t band)",
}


def by_budget(group: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """A curve's ``(budget, cell)`` pairs in budget order (results files sort keys as strings)."""
    return sorted(((int(b), v) for b, v in group["budgets"].items()), key=lambda bv: bv[0])


def draw(models: dict[str, Any]) -> Any:
    """One panel per model: accuracy against the budget, a line (and 95% band) per difficulty level."""
    import matplotlib.pyplot as plt  # only drawing needs it (analysis.docgen sets the backend)

    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 3.6), sharey=True, squeeze=False)
    for ax, (label, m) in zip(axes[0], models.items(), strict=True):
        for name, g in m["groups"].items():
            xs, cells = zip(*by_budget(g), strict=True)
            style = {"color": "black", "lw": 2.2} if name == "all" else {"lw": 1.2}
            line = ax.plot(xs, [v["acc"] for v in cells], "o-", ms=3, label=name, **style)[0]
            lo, hi = [v["lo"] for v in cells], [v["hi"] for v in cells]
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.12)
        ax.set(
            xlabel="thinking budget N (reasoning tokens)", title=LABELS.get(label, label), ylim=(-0.02, 1.02)
        )
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("held-out accuracy (T=1)")
    axes[0][-1].legend(fontsize=7, title="difficulty", title_fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def curve_table(m: dict[str, Any]) -> str:
    """Markdown: one model's accuracy [95% CI] per level x budget and the share each budget cut."""
    groups = m["groups"]
    budgets = [b for b, _ in by_budget(groups["all"])]
    rows = [
        [g, *[f"{v['acc']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]" for _, v in by_budget(groups[g])]]
        for g in groups
    ]
    rows.append(["share cut (all)", *[f"{v['cut_share']:.2f}" for _, v in by_budget(groups["all"])]])
    return Table(["level", *[f"N={b}" for b in budgets]], rows).markdown()


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


@SECTIONS.register("thinking-budget")
def thinking_budget() -> Rendered:
    """The figure, the per-model tables and the generated shape sentences; across seeds when recorded."""
    try:
        exp = results.read_experiment(EXP)
    except FileNotFoundError:
        exp = {}
    curves = per_seed(exp.get("tables", {}))
    if not curves:
        return Rendered(f"*Not run yet: `make results NAME={EXP}` writes `results/{EXP}/`.*")
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
