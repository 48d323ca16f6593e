"""Generated blocks of docs/reward_models.md, part 1: label costs, reward models, scaling curves.

Blocks (listed in ``docgen.blocks``), each reading only committed results:

- ``rm-labels``: what each label source cost (policy samples and tokens per label), how the
  sources agree (share equal, Cohen's kappa), from ``results/rm_labels/labels.json``;
- ``rm-models``: each reward model's held-out AUCs, from ``results/rm_labels/reward_models.json``;
- ``tts``: the N = 1, 4, 16, 64 table with 95% intervals, each selector's gap to pass@N, how much
  each quadrupling of N adds to majority vote, and the figure, from ``results/tts/table.json``;
- ``rm-cost``: each experiment's wall and CPU minutes and the machine's load when it was recorded.
Part 2 (over-optimisation, distillation): :mod:`docgen.reward_models_runs`. A missing result renders
the command that produces it.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from analysis.render import Table
from docgen.engine import DocFigure, Rendered, source_line
from docgen.results import missing, read

LABELS = {
    "pass": "pass@N (ceiling)",
    "maj": "majority vote",
    "mean": "mean accuracy (pass@1)",
    "bon_orm": "best-of-N, ORM",
    "wvote_orm": "weighted vote, ORM",
    "bon_prm_min_step": "best-of-N, PRM min-step",
    "wvote_prm_min_step": "weighted vote, PRM min-step",
    "bon_prm_last_step": "best-of-N, PRM last-step",
}


def f3(x: Any) -> str:
    return "n/a" if x is None else f"{float(x):.3f}"


def claim_line(data: dict[str, Any]) -> str:
    d = data.get("design") or {}
    return f"Claim, recorded before the run: {d.get('claim', '?')} Primary metric: {d.get('metric', '?')}."


def rm_labels() -> Rendered:
    """Cost per label of each source and their agreement on the label study's steps."""
    data = read("rm_labels")
    if data is None or "labels" not in data["tables"]:
        return missing("rm_labels")
    sets = data["tables"]["labels"]["sets"]
    study, train = sets["study"], sets["train"]
    rows = []
    for src, c in study["costs"].items():
        rows.append(
            [
                src,
                c["labels"],
                c["samples"],
                f3(c["samples_per_label"]),
                f3(c["tokens_per_label"]),
                f"{c['seconds']:.0f}",
            ]
        )
    cost = Table(
        ["label source", "labels", "policy samples", "samples / label", "tokens / label", "seconds"], rows
    )
    agree = Table(
        ["labels compared", "steps", "share equal", "Cohen's kappa", "positive share (first, second)"],
        [
            [
                k.replace("~", " vs "),
                a["n"],
                f3(a["agree"]),
                f3(a["kappa"]),
                f"{f3(a['a_pos'])}, {f3(a['b_pos'])}",
            ]
            for k, a in study["agreement"].items()
        ],
    )
    text = (
        f"{claim_line(data)}\n\nLabel study: {study['responses']} responses of the laptop policy "
        f"({f3(study['accuracy'])} correct) to held-apart prompts, {study['steps']} steps "
        f"({study['rule_unreadable']} the rule checker could not read), Monte-Carlo labels from "
        f"k = {study['mc_k']} continuations per step prefix. Training set of the reward models: "
        f"{train['responses']} responses ({f3(train['accuracy'])} correct), {train['steps']} steps.\n\n"
        f"{cost.markdown()}\n\n{agree.markdown()}"
    )
    src = [source_line("results/rm_labels", data.get("provenance"))]
    return Rendered(text, sources=src)


def rm_models() -> Rendered:
    """Held-out AUCs of the trained reward models."""
    data = read("rm_labels")
    if data is None or "reward_models" not in data["tables"]:
        return missing("rm_labels")
    rows = []
    for name, r in data["tables"]["reward_models"]["models"].items():
        h = r["heldout"]
        rows.append(
            [
                f"`{name}`",
                r["kind"],
                r["labels"],
                r["train_rows"],
                h["n"],
                f3(h["auc_last"]),
                f3(h["auc_min_step"]),
                f3(h.get("auc_steps")),
                f"{r['cpu_s'] / 60:.1f}",
            ]
        )
    t = Table(
        [
            "model",
            "kind",
            "labels",
            "train responses",
            "held-out responses",
            "AUC outcome (last token)",
            "AUC outcome (min step)",
            "AUC step labels",
            "CPU min",
        ],
        rows,
    )
    text = (
        "AUC: the chance a correct response (or a good step) scores above a wrong one; 0.5 is chance.\n\n"
        + t.markdown()
    )
    return Rendered(
        text,
        sources=[
            source_line(
                "results/rm_labels/reward_models.json", data["tables"]["reward_models"].get("provenance")
            )
        ],
    )


def draw_tts(t: dict[str, Any]) -> Figure:
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ks = [int(k) for k in t["ks"]]
    for m, by_k in t["metrics"].items():
        if m == "mean":
            continue
        ax.plot(
            ks,
            [by_k[str(k)]["mean"] for k in ks],
            "o-",
            label=LABELS.get(m, m),
            lw=2.2 if m in ("pass", "maj") else 1.2,
        )
        ax.fill_between(ks, [by_k[str(k)]["lo"] for k in ks], [by_k[str(k)]["hi"] for k in ks], alpha=0.12)
    ax.set(
        xscale="log",
        xlabel="N (samples per prompt)",
        ylabel="held-out accuracy",
        title="parallel sampling + selector",
    )
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def tts() -> Rendered:
    """The scaling table (mean [95% CI]), gaps to pass@N, majority-vote gains and the figure."""
    data = read("tts")
    if data is None or "table" not in data["tables"]:
        return missing("tts")
    t = data["tables"]["table"]
    ks = [str(k) for k in t["ks"]]
    rows = [
        [LABELS.get(m, m), *[f"{by_k[k]['mean']:.3f} [{by_k[k]['lo']:.3f}, {by_k[k]['hi']:.3f}]" for k in ks]]
        for m, by_k in t["metrics"].items()
    ]
    table = Table(["selector", *[f"N = {k}" for k in ks]], rows)
    gaps = Table(
        ["pass@N minus", *[f"N = {k}" for k in ks]],
        [[LABELS.get(m, m), *[f"{g[k]:.3f}" for k in ks]] for m, g in t["gap_to_pass"].items()],
    )
    maj = t["metrics"]["maj"]
    steps = [f"N {a}→{b}: {maj[b]['mean'] - maj[a]['mean']:+.3f}" for a, b in zip(ks, ks[1:], strict=False)]
    s = t["settings"]
    text = (
        f"{claim_line(data)}\n\n{t['prompts']} held-out prompts × {t['samples_per_prompt']} samples "
        f"(T = {s['temperature']}) from one checkpoint; selectors at N < {t['samples_per_prompt']} averaged over "
        f"{s['subsets']} random N-subsets; 95% percentile-bootstrap intervals over prompts.\n\n{table.markdown()}\n\n"
        f"{{fig:tts}}\n\nWhat each quadrupling of N adds to majority vote: {'; '.join(steps)}.\n\n{gaps.markdown()}"
    )
    fig = DocFigure(
        "rm_tts",
        {"ks": t["ks"], "metrics": t["metrics"]},
        draw_tts,
        alt="accuracy against N for each selector",
    )
    text = text.replace("{fig:tts}", "{fig:rm_tts}")
    return Rendered(text, [fig], [source_line("results/tts/table.json", t.get("provenance"))])


def rm_cost() -> Rendered:
    """What each experiment of this page cost: wall minutes, CPU minutes, machine load when recorded."""
    rows, src = [], []
    for name in ("rm_labels", "tts", "overopt", "opd"):
        data = read(name)
        if data is None:
            rows.append([f"`{name}`", "not recorded", "", "", ""])
            continue
        d, prov = data.get("design") or {}, data.get("provenance") or {}
        run_cpu = sum(float(r.get("cpu_s") or 0.0) for r in data["runs"].values())
        load = (prov.get("machine") or {}).get("load_avg_1_5_15") or ["?"]
        rows.append(
            [
                f"`{name}`",
                len(data["runs"]),
                f"{float(d.get('wall_s', 0.0)) / 60:.1f}",
                f"{(float(d.get('cpu_s_main', 0.0)) + run_cpu) / 60:.1f}",
                load[0],
            ]
        )
        src.append(source_line(f"results/{name}", prov))
    t = Table(["experiment", "runs", "wall min", "CPU min", "load (1 min) when recorded"], rows)
    note = (
        "CPU min: the experiment's own process plus every recorded run's process (the laptop runs "
        "are single-threaded); other child processes (labelling and reward-model training in `rm_labels`, "
        "the sampler in `tts`, the teacher's RL run in `opd` when it is built) count in the wall clock only. "
        "Wall minutes on a shared 2-core machine at the load shown: CPU numbers, not GPU numbers."
    )
    return Rendered(f"{t.markdown()}\n\n{note}", sources=src)
