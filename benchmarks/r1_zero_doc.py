"""Docs sections of the R1-Zero-in-miniature experiment (``results/r1_zero_curves/``), for ``make docs``.

- ``r1-zero-curves``: the figure (held-out accuracy and mean held-out response length over RL
  steps, one line per seed) and the per-seed table, start -> end, with the targets.
- ``r1-zero-base``: the base model's build (CPU and wall seconds) and its probe: sampled pass
  rate by difficulty, by response length and by mode (worked vs direct).
Renders only what the results files hold; a missing experiment renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.docgen import SECTIONS, DocFigure, Rendered, source_line
from analysis.render import Table
from core import results

EXP = "r1_zero_curves"
ACC, LEN = "rlvr/val_acc", "rlvr/val_response_length"


def _read() -> dict[str, Any] | None:
    try:
        return results.read_experiment(EXP)
    except FileNotFoundError:
        return None


def _missing() -> Rendered:
    return Rendered(f"*Not run yet: `make results NAME={EXP}` writes `results/{EXP}/`.*")


def _draw(data: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for run_id, c in sorted(data.items()):
        for ax, key in zip(axes, (ACC, LEN), strict=True):
            ax.plot(c[key]["step"], c[key]["value"], marker="o", ms=3, label=run_id)
    axes[0].set(xlabel="RL step", ylabel="held-out accuracy (T=1)", title="accuracy")
    axes[1].set(xlabel="RL step", ylabel="mean response length (tokens)", title="response length")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


@SECTIONS.register("r1-zero-curves")
def r1_zero_curves() -> Rendered:
    exp = _read()
    if not exp or not exp.get("runs"):
        return _missing()
    design = exp.get("design", {})
    tgt = design.get("targets", {})
    rows, curves = [], {}
    for run_id, rec in exp["runs"].items():
        c = rec["curves"]
        curves[run_id] = {k: c[k] for k in (ACC, LEN)}
        a0, a1 = c[ACC]["value"][0], c[ACC]["value"][-1]
        l0, l1 = c[LEN]["value"][0], c[LEN]["value"][-1]
        met = a1 - a0 >= tgt.get("acc_gain", 0.15) and l1 / l0 - 1 >= tgt.get("length_gain", 0.3)
        rows.append(
            [
                run_id,
                f"{a0:.3f} → {a1:.3f} ({100 * (a1 - a0):+.1f} pts)",
                f"{l0:.1f} → {l1:.1f} ({100 * (l1 / l0 - 1):+.0f}%)",
                f"{rec['wall_s'] / 60:.1f}",
                f"{rec['cpu_s'] / 60:.1f}",
                "yes" if met else "no",
            ]
        )
    head = [
        "run",
        "held-out accuracy",
        "mean response length (tokens)",
        "wall min",
        "CPU min",
        "both targets met",
    ]
    fig = DocFigure(
        "r1_zero_curves", curves, _draw, alt="held-out accuracy and response length over RL steps"
    )
    text = (
        "{fig:r1_zero_curves}\n\n"
        + Table(head, rows).markdown()
        + f"\n\nTargets per seed: accuracy +{100 * tgt.get('acc_gain', 0.15):.0f} points and mean response length "
        f"+{100 * tgt.get('length_gain', 0.3):.0f}% within the run. Claim (declared before the runs): "
        f"{design.get('claim', '?')}."
    )
    return Rendered(text, figures=[fig], sources=[source_line(f"results/{EXP}/", exp.get("provenance"))])


def _probe_rows(groups: dict[str, Any], label: str) -> list[list[str]]:
    def f(x: Any) -> str:
        return "–" if x is None else f"{x:.2f}"

    return [
        [
            f"{label} {k}",
            str(v["n"]),
            f(v["pass"]),
            f(v["worked_share"]),
            f(v["pass_worked"]),
            f(v["pass_direct"]),
            f"{v['mean_len']:.1f}",
        ]
        for k, v in groups.items()
    ]


@SECTIONS.register("r1-zero-base")
def r1_zero_base() -> Rendered:
    exp = _read()
    base = (exp or {}).get("tables", {}).get("base_model")
    if not base:
        return _missing()
    parts = []
    for m in base["models"]:
        p = m["probe"]
        head = ["group", "samples", "pass", "worked share", "pass if worked", "pass if direct", "mean length"]
        rows = (
            _probe_rows({"all": p["overall"]}, "")
            + _probe_rows(p["by_k"], "k =")
            + _probe_rows(
                dict(sorted(p["by_len"].items(), key=lambda kv: int(kv[0].split("-")[0]))), "length"
            )
        )
        seed = m["build"]["pretrain"]["seed"]
        parts.append(
            f"Base model (pretraining seed {seed}, {m['num_params'] / 1e6:.2f}M parameters): built in "
            f"{m['build_cpu_seconds']:.0f} s CPU ({m['build_wall_seconds']:.0f} s wall on the shared machine); "
            f"probe: {p['overall']['n']} samples at T=1 on held-out prompts.\n\n"
            + Table(head, rows).markdown()
        )
    return Rendered(
        "\n\n".join(parts), sources=[source_line(f"results/{EXP}/base_model.json", base.get("provenance"))]
    )
