"""Docs section of seed 002's thinking-budget curve (``results/thinking_budget/``), for ``make docs``.

- ``thinking-budget``: the figure (held-out accuracy against the hard thinking budget, one panel
  per model -- the base model and the RL-trained one -- one line per difficulty level with its
  95% interval, all levels in black), the accuracy table per model x level x budget, the share of
  responses each budget cut, and one generated sentence per curve saying where it rises,
  plateaus and whether it falls (``analysis.thinking_budget.describe``).
:func:`draw` and :func:`curve_table` are also ``make budget``'s PNG and tables. Renders only what the results files hold; a
missing experiment renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.docgen import SECTIONS, DocFigure, Rendered, source_line
from analysis.render import Table
from analysis.thinking_budget import describe
from core import results

EXP = "thinking_budget"
LABELS = {"base": "base model (before RL)", "rl": "after RL"}


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


@SECTIONS.register("thinking-budget")
def thinking_budget() -> Rendered:
    """The figure, the per-model tables and the generated shape sentences."""
    try:
        exp = results.read_experiment(EXP)
    except FileNotFoundError:
        exp = {}
    res = exp.get("tables", {}).get("budget")
    if not res:
        return Rendered(f"*Not run yet: `make results NAME={EXP}` writes `results/{EXP}/`.*")
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
        parts.append(
            f"**{LABELS.get(label, label)}** ({m['cpu_seconds'] / 60:.1f} CPU min):\n\n{curve_table(m)}\n\n{lines}"
        )
    design = exp.get("design", {})
    if design.get("claim"):
        parts.append(f"Claim (declared before the run): {design['claim']}.")
    run = next(iter(exp.get("runs", {}).values()), None)
    if run:
        a0, a1 = run["summary"]["start_acc"], run["summary"]["end_acc"]
        parts.append(
            f"The RL run ({run['run_id']}): held-out accuracy {a0:.3f} → {a1:.3f} over its own evaluation."
        )
    return Rendered(
        "\n\n".join(parts), figures=[fig], sources=[source_line(f"results/{EXP}/", res.get("provenance"))]
    )
