"""The R1-Zero-in-miniature blocks (``results/r1_zero_arms-*/`` and kin), for ``make docs``.

- ``r1-zero-curves``: the figure (held-out accuracy, mean held-out response length, the share of
  worked responses and of responses with a self-check or a corrected slip, over RL steps: one
  line per seed, the mean and the seed range) and the per-seed table, start -> end, with the targets.
- ``base-recipes-curves``: the same for other recipes from the base model (``results/base_recipes/``).
- ``r1-zero-base``: the base model's build (CPU and wall seconds) and its probe: sampled pass
  rate by difficulty, by response length and by mode (worked vs direct).
- ``overtime-curves`` / ``overtime-base``: the same two blocks for seed 000's overtime-pay task
  (laptop variant, its own base model; ``results/overtime_pay/``, no length target).
Renders only what the results files hold; a missing experiment renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table
from docgen import status
from docgen.engine import DocFigure, Rendered, source_line
from docgen.results import missing, read

#: the R1-Zero miniature the docs show: the recipe's arm of ``r1_zero_arms`` (recorded from an empty
#: cache under the pinned CPU arithmetic; ``r1_zero_curves``, recorded before, trained on a split
#: that overlapped its held-out prompts)
EXP = "r1_zero_arms-format"
OVERTIME = "overtime_pay"
ACC, LEN = "rlvr/val_acc", "rlvr/val_response_length"
WORKED, CHECK, FIX = "rlvr/val_worked_share", "rlvr/val_check_share", "rlvr/val_fix_share"
PANELS = (
    (ACC, "held-out accuracy (T=1)"),
    (LEN, "mean response length (tokens)"),
    (WORKED, "share of worked responses"),
    (CHECK, "share with a self-check or a fix"),
)


def _draw(data: dict[str, Any]) -> Any:
    """One panel per :data:`PANELS` entry: a thin line per seed, the mean over seeds in black."""
    import matplotlib.pyplot as plt  # only drawing needs it (docgen.engine sets the backend)
    import numpy as np  # with matplotlib, only for drawing

    fig, axes = plt.subplots(1, len(PANELS), figsize=(13, 3.2))
    for ax, (key, label) in zip(axes, PANELS, strict=True):
        runs = [c[key] for c in data.values() if key in c]
        for c in runs:
            ax.plot(c["step"], c["value"], lw=0.8, alpha=0.5)
        if runs and all(c["step"] == runs[0]["step"] for c in runs):
            vals = np.array([c["value"] for c in runs])
            ax.plot(runs[0]["step"], vals.mean(0), color="black", lw=2, label=f"mean of {len(runs)} seeds")
            ax.fill_between(
                runs[0]["step"], vals.min(0), vals.max(0), color="grey", alpha=0.2, label="seed range"
            )
        ax.set(xlabel="RL step", title=label)
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def r1_zero_curves() -> Rendered:
    return curves_block(EXP, "r1_zero_curves")


def base_recipes_curves() -> Rendered:
    return curves_block("base_recipes", "base_recipes_curves")


def curves_block(name: str, figure: str) -> Rendered:
    """The figure and per-run table of one experiment written by ``experiments.r1_zero_curves``."""
    exp = read(name)
    if not exp or not exp.get("runs"):
        return missing(name)
    design = exp.get("design", {})
    tgt = design.get("targets", {})
    rows, curves = [], {}
    for run_id, rec in exp["runs"].items():
        c = rec["curves"]
        curves[run_id] = {k: c[k] for k in (ACC, LEN, WORKED) if k in c}
        if CHECK in c and FIX in c:  # a response with a self-check or a corrected slip
            curves[run_id][CHECK] = {
                "step": c[CHECK]["step"],
                "value": [a + b for a, b in zip(c[CHECK]["value"], c[FIX]["value"], strict=True)],
            }
        a0, a1 = c[ACC]["value"][0], c[ACC]["value"][-1]
        l0, l1 = c[LEN]["value"][0], c[LEN]["value"][-1]
        length_gain = tgt.get("length_gain", 0.3)
        met = a1 - a0 >= tgt.get("acc_gain", 0.15) and (length_gain is None or l1 / l0 - 1 >= length_gain)
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
        "both targets met" if tgt.get("length_gain", 0.3) is not None else "accuracy target met",
    ]
    fig = DocFigure(figure, curves, _draw, alt="held-out accuracy and response length over RL steps")
    length_gain = tgt.get("length_gain", 0.3)
    targets = f"accuracy +{100 * tgt.get('acc_gain', 0.15):.0f} points" + (
        f" and mean response length +{100 * length_gain:.0f}%"
        if length_gain is not None
        else " (no length target)"
    )
    text = (
        "{fig:"
        + figure
        + "}\n\n"
        + Table(head, rows).markdown()
        + f"\n\nTargets per seed: {targets} within the run. Claim (declared before the runs): {design.get('claim', '?')}."
        + _verdict(rows)
    )
    return Rendered(text, figures=[fig], sources=[source_line(f"results/{name}/", exp.get("provenance"))])


def _verdict(rows: list[list[str]]) -> str:
    """How many runs met the targets and, when not all, which missed: a null stays in the record."""
    missed = [r[0] for r in rows if r[-1] != "yes"]
    if not missed:
        return f" Met by all {len(rows)} runs."
    return (
        f" Met by {len(rows) - len(missed)} of {len(rows)} runs; not by {', '.join(missed)}"
        " (a null, reported as recorded: the claim does not hold for every seed)."
    )


def _probe_rows(groups: dict[str, Any], label: str) -> list[list[str]]:
    def f(x: Any) -> str:
        return "–" if x is None else f"{x:.2f}"

    return [
        [
            f"{label} {k}".strip(),
            str(v["n"]),
            f(v["pass"]),
            f(v["worked_share"]),
            f(v["pass_worked"]),
            f(v["pass_direct"]),
            f"{v['mean_len']:.1f}",
        ]
        for k, v in groups.items()
    ]


def pretrain_seeds_curves() -> Rendered:
    return curves_block("pretrain_seeds", "pretrain_seeds")


def pretrain_seeds_base() -> Rendered:
    return base_summary("pretrain_seeds")


def _base_models(name: str) -> dict[str, Any] | None:
    """The ``base_model`` table of an experiment of ``experiments.r1_zero_curves`` (None if not run)."""
    return ((read(name) or {}).get("tables") or {}).get("base_model")


def base_summary(name: str) -> Rendered:
    """One line per base model an experiment used: its build cost and its probe's pass and worked rates."""
    base = _base_models(name)
    if not base:
        return missing(name)
    rows = []
    for m in base["models"]:
        p = m["probe"]["overall"]
        rows.append(
            [
                str(m["build"]["pretrain"]["seed"]),
                f"{m['num_params'] / 1e6:.2f}M",
                f"{m['build_cpu_seconds']:.0f}",
                f"{m['build_wall_seconds']:.0f}",
                str(p["n"]),
                f"{p['pass']:.3f}",
                f"{p['worked_share']:.3f}",
            ]
        )
    head = [
        "pretraining seed",
        "parameters",
        "build CPU s",
        "build wall s",
        "probe samples",
        "pass",
        "worked share",
    ]
    return Rendered(
        Table(head, rows).markdown(),
        sources=[source_line(f"results/{name}/base_model.json", base.get("provenance"))],
    )


def overtime_curves() -> Rendered:
    return curves_block(OVERTIME, "overtime_pay_curves")


def r1_zero_base() -> Rendered:
    return base_block(EXP)


def overtime_base() -> Rendered:
    return base_block(OVERTIME)


def base_block(name: str) -> Rendered:
    """The build and probe of each base model an experiment of ``experiments.r1_zero_curves`` used."""
    base = _base_models(name)
    if not base:
        return missing(name)
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
        "\n\n".join(parts), sources=[source_line(f"results/{name}/base_model.json", base.get("provenance"))]
    )


#: the R1-Zero miniature's arms: (results experiment, label), each run over the same seeds from one
#: empty cache (``make results NAME=r1_zero_arms``)
ARMS = (
    ("r1_zero_arms-outcome", "outcome only (format weight 0)"),
    ("r1_zero_arms-format", "outcome + format 0.1 (the recipe)"),
    ("r1_zero_arms-shuffled", "outcome + format 0.1, rewards shuffled"),
)


def _ends_of(rec: dict[str, Any], key: str) -> tuple[float, float]:
    v = rec["curves"][key]["value"]
    return float(v[0]), float(v[-1])


def _span(xs: list[float], fmt: str) -> str:
    """Mean and [min, max] of ``xs`` in format ``fmt``."""
    return f"{fmt.format(sum(xs) / len(xs))} [{fmt.format(min(xs))}, {fmt.format(max(xs))}]"


def _draw_arms(data: dict[str, Any]) -> Any:
    """Held-out accuracy and response length over RL steps: per arm the mean over seeds and the seed range."""
    import matplotlib.pyplot as plt  # only drawing needs it (docgen.engine sets the backend)
    import numpy as np  # with matplotlib, only for drawing

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    for ax, (key, label) in zip(axes, PANELS[:2], strict=True):
        for arm, runs in data.items():
            steps = runs[0][key]["step"]
            vals = np.array([r[key]["value"] for r in runs if r[key]["step"] == steps])
            (line,) = ax.plot(steps, vals.mean(0), lw=2, label=f"{arm} ({len(vals)} seeds)")
            ax.fill_between(steps, vals.min(0), vals.max(0), color=line.get_color(), alpha=0.15)
        ax.set(xlabel="RL step", title=label)
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _arms() -> dict[str, Any] | None:
    """The arms' per-seed rows, per-arm summary rows, length-share sentence, figure and sources;
    None until every arm is recorded."""
    exps = {label: read(name) for name, label in ARMS}
    if any(not (exp and exp.get("runs")) for exp in exps.values()):  # compared together or not at all
        return None
    tgt = next(iter(exps.values()))["design"].get("targets", {})
    acc_t, len_t = tgt.get("acc_gain", 0.15), tgt.get("length_gain", 0.3)
    per_seed, summary, fig_data, len_gain = [], [], {}, {}
    for label, exp in exps.items():
        acc_g, len_g = [], []
        for rec in sorted(exp["runs"].values(), key=lambda r: r["seed"]):
            a0, a1 = _ends_of(rec, ACC)
            l0, l1 = _ends_of(rec, LEN)
            acc_g.append(a1 - a0)
            len_g.append(l1 / l0 - 1)
            per_seed.append(
                [
                    label,
                    str(rec["seed"]),
                    f"{a0:.3f} → {a1:.3f} ({100 * (a1 - a0):+.1f} pts)",
                    f"{l0:.1f} → {l1:.1f} ({100 * (l1 / l0 - 1):+.0f}%)",
                    f"{rec['cpu_s'] / 60:.1f}",
                ]
            )
        n = len(acc_g)
        summary.append(
            [
                label,
                str(n),
                _span([100 * g for g in acc_g], "{:+.1f}"),
                _span([100 * g for g in len_g], "{:+.0f}%"),
                f"{sum(g >= acc_t for g in acc_g)}/{n}",
                f"{sum(g >= len_t for g in len_g)}/{n}",
            ]
        )
        len_gain[label] = sum(len_g) / n
        fig_data[label] = [{k: rec["curves"][k] for k in (ACC, LEN)} for rec in exp["runs"].values()]
    (outcome, full, shuffled) = (len_gain[label] for _, label in ARMS)
    share = (
        f"The outcome reward alone reaches {100 * outcome / full:.0f}% of the recipe's mean length growth "
        f"({100 * outcome:+.0f}% vs {100 * full:+.0f}%); the format reward's share is the rest "
        f"({100 * (full - outcome):+.0f} points). With shuffled rewards the length changes by {100 * shuffled:+.0f}%: "
        f"beyond that control, the outcome reward adds {100 * (outcome - shuffled):+.0f} points of length growth "
        f"and the recipe {100 * (full - shuffled):+.0f}."
        if full > 0
        else "The recipe's mean response length did not grow."
    )
    head_s = [
        "arm",
        "seeds",
        "accuracy gain, points: mean [min, max]",
        "length gain: mean [min, max]",
        f"seeds ≥ +{100 * acc_t:.0f} pts",
        f"seeds ≥ +{100 * len_t:.0f}% length",
    ]
    return {
        "summary": Table(head_s, summary),
        "per_seed": Table(
            ["arm", "seed", "held-out accuracy", "mean response length (tokens)", "CPU min"], per_seed
        ),
        "share": share,
        "figure": DocFigure(
            "r1_zero_arms", fig_data, _draw_arms, alt="held-out accuracy and length per arm over RL steps"
        ),
        "sources": [source_line(f"results/{name}/", exps[label].get("provenance")) for name, label in ARMS],
    }


def _not_run() -> Rendered:
    absent = [name for name, _ in ARMS if not (read(name) or {}).get("runs")]
    return Rendered(f"*Not run yet: `make results NAME=<arm>` for {', '.join(absent)}.*")


def r1_zero_arms() -> Rendered:
    """The R1-Zero miniature with its confounds beside it: outcome only, outcome + format, shuffled rewards.

    Per arm: each seed's start -> end held-out accuracy and mean response length, the mean and range
    of the gains over seeds, how many seeds meet each target, and how much of the recipe's length
    growth the outcome reward alone and the shuffled control reach."""
    arms = _arms()
    if arms is None:
        return _not_run()
    text = (
        "{fig:r1_zero_arms}\n\n"
        + arms["summary"].markdown()
        + f"\n\n{arms['share']}\n\n<details><summary>Per seed</summary>\n\n"
        + arms["per_seed"].markdown()
        + "\n\n</details>"
    )
    return Rendered(text, figures=[arms["figure"]], sources=arms["sources"])


def _two_machines(rec: dict[str, Any], committed_machine: str) -> Table:
    """Per arm and machine (the records the reproduce record compared with, on ``committed_machine``,
    and its fresh runs): accuracy and length gains over the re-run seeds, mean [min, max], and how
    many seeds meet each target."""
    from experiments.registry import short_machine  # the status table's wording of a machine

    labels = dict(ARMS)
    targets = {t.experiment: t for t in status.fresh_targets(rec["rows"])}
    fresh_machine = short_machine(rec["provenance"])
    rows = []
    for name, _label in ARMS:
        mine = [r for r in rec["rows"] if r["experiment"] == name]
        if not mine or name not in targets:
            continue
        t = targets[name]
        for which, machine in (("committed", committed_machine), ("fresh", fresh_machine)):
            acc = [r[which] for r in mine if r["metric"] == "acc gain" and r[which] is not None]
            length = [r[which] for r in mine if r["metric"] == "length gain" and r[which] is not None]
            rows.append(
                [
                    labels[name],
                    machine,
                    str(len(acc)),
                    _span([100 * g for g in acc], "{:+.1f}"),
                    _span([100 * g for g in length], "{:+.0f}%"),
                    f"{sum(g >= t.acc_t for g in acc)}/{len(acc)}",
                    f"{sum(g >= t.len_t for g in length)}/{len(length)}" if t.len_t is not None else "–",
                ]
            )
    t0 = next(iter(targets.values()))
    return Table(
        [
            "arm",
            "machine",
            "seeds",
            "accuracy gain, points: mean [min, max]",
            "length gain: mean [min, max]",
            f"seeds ≥ +{100 * t0.acc_t:.0f} pts",
            f"seeds ≥ +{100 * (t0.len_t or 0):.0f}% length",
        ],
        rows,
    )


def r1_zero_headline() -> Rendered:
    """README's headline: the arms' figure and summary; the last ``make results NAME=reproduce``
    (a fresh clone from an empty cache) in one sentence; the length-share sentence of the committed
    records. The record made before the optimizer fix: :func:`r1_zero_two_machines`."""
    from experiments.registry import short_machine  # the status table's wording of a machine

    arms = _arms()
    if arms is None:
        return _not_run()
    sources = list(arms["sources"])
    parts = ["{fig:r1_zero_arms}", arms["summary"].markdown()]
    rec = status.reproduce_record()
    if rec is not None:
        rows = rec["rows"]
        models = [v for k, v in rec.get("inputs", {}).items() if k.startswith("base model")]
        same = all(set(v["fresh"]) <= set(v["committed"]) for v in models)
        parts.append(
            f"Seed{'s' if len(rec['seeds']) > 1 else ''} {', '.join(str(x) for x in rec['seeds'])} of each arm "
            f"re-run from an empty cache (`make results NAME=reproduce`, {short_machine(rec['provenance'])}): "
            f"{sum(r['fresh'] == r['committed'] for r in rows)} of {len(rows)} values identical to the committed "
            f"run's and {sum(r['inside'] for r in rows)} inside the committed seeds' range, from "
            f"{'the same' if same else '**another**'} base model "
            "([seed by seed](docs/provenance.md#which-results-reproduce))."
        )
        sources.append(source_line("results/reproduce/latest.json", rec["provenance"]))
    share = arms["share"][0].lower() + arms["share"][1:]
    parts.append(f"On the machine of the committed records, {share}")
    return Rendered("\n\n".join(parts), figures=[arms["figure"]], sources=sources)


def r1_zero_two_machines() -> Rendered:
    """docs/provenance.md: the R1-Zero arms' gains on the two machines of the ``make results
    NAME=reproduce`` record made before the optimizer fix (:data:`docgen.status.UNFUSED`)."""
    old = status.reproduce_record(status.UNFUSED)
    if old is None:
        return Rendered("*Not run yet: `make results NAME=reproduce` (before the optimizer fix).*")
    text = (
        "The R1-Zero arms' gains moved with the base model: per arm, its seeds from an empty cache on each "
        "machine before the optimizer fix (`core.numerics.adamw`; "
        "[why](first_run.md#the-cpu-arithmetic-pinned--and-what-that-does-not-cover)):\n\n"
        + _two_machines(old, "first (records of the time)").markdown()
    )
    return Rendered(
        text, sources=[source_line(f"results/reproduce/{status.UNFUSED}.json", old["provenance"])]
    )


def first_run() -> Rendered:
    """What a first laptop run costs: the base model's pretraining, as the arms experiment measured it."""
    name = ARMS[1][0]
    base = _base_models(name)
    if not base:
        return missing("r1_zero_arms")
    m = base["models"][0]
    text = (
        f"The first run of a recipe that starts from the base model pretrains it: a {m['num_params'] / 1e6:.2f}M-"
        f"parameter Qwen2, {m['build']['pretrain']['steps']} steps on {m['build']['pretrain']['corpus']['n']} "
        f"designed documents, {m['build_cpu_seconds'] / 60:.1f} CPU minutes "
        f"({m['build_wall_seconds'] / 60:.1f} wall minutes on the shared 2-core machine that measured it). "
        "Later runs load it from the cache."
    )
    return Rendered(text, sources=[source_line(f"results/{name}/base_model.json", base.get("provenance"))])
