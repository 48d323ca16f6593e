"""The R1-Zero miniature on both engines, for ``make docs`` (docs/r1_zero.md).

- ``r1-zero-engines``: per arm (outcome only, the recipe, shuffled rewards) and engine (the local
  engine's records ``results/r1_zero_arms-<arm>/``, veRL's own trainer's ``results/r1_zero_verl-<arm>/``):
  held-out accuracy and mean response length start -> end, the gains' mean and seed range, the seeds
  meeting each target, the median wall minutes of a run; whether veRL's mean gains lie inside the local
  engine's seed range (the claim the veRL experiments declared before their runs); a figure of both
  engines' curves; each seed in a folded table; and, once recorded, the local engine's outcome-only arm
  over more seeds (``results/r1_zero_outcome_seeds/``, seeds 5-14): its seed-to-seed spread of the gains,
  against which veRL's outcome-arm gains are read again.
- ``r1-zero-engine-bench``: ``results/bench_cpu_engines/latest.json``, one full laptop run of the recipe
  on each engine side by side (wall and CPU time), and the check of the held-out length veRL's records
  are derived with against the local engine's count.
Renders only what the results files hold; a missing experiment renders the command that writes it.
"""

from __future__ import annotations

import statistics
from typing import Any

from analysis.render import Table
from docgen.engine import DocFigure, Rendered, source_line
from docgen.r1_zero import ACC, ARMS, LEN, PANELS, _ends_of, _span
from docgen.results import missing, read

#: the engines of the comparison: label and the results experiment of an arm's local record
ENGINES = {"local": "local engine", "verl": "veRL's trainer"}
BENCH = "bench_cpu_engines"
#: the local engine's outcome-only arm over seeds beyond 0-4, and the arm it extends
MORE_SEEDS, MORE_SEEDS_ARM = "r1_zero_outcome_seeds", "r1_zero_arms-outcome"


def verl_name(local: str) -> str:
    """The veRL experiment of a local arm (``r1_zero_arms-format`` -> ``r1_zero_verl-format``)."""
    return local.replace("r1_zero_arms-", "r1_zero_verl-")


def _gains(exp: dict[str, Any]) -> dict[str, list[float]]:
    """Per seed (in seed order): start and end accuracy and length, their gains, wall minutes."""
    out: dict[str, list[float]] = {k: [] for k in ("a0", "a1", "l0", "l1", "acc", "len", "wall", "seed")}
    for rec in sorted(exp["runs"].values(), key=lambda r: r["seed"]):
        (a0, a1), (l0, l1) = _ends_of(rec, ACC), _ends_of(rec, LEN)
        for k, v in zip(
            out, (a0, a1, l0, l1, a1 - a0, l1 / l0 - 1, rec["wall_s"] / 60, rec["seed"]), strict=True
        ):
            out[k].append(v)
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _inside(x: float, xs: list[float]) -> str:
    return "inside" if min(xs) <= x <= max(xs) else "outside"


def _claim(label: str, local: dict[str, list[float]], verl: dict[str, list[float]]) -> str:
    """Whether veRL's mean gains lie inside the local engine's seed range, in one sentence."""
    acc, length = _mean(verl["acc"]), _mean(verl["len"])
    return (
        f"{label}: veRL's mean accuracy gain {100 * acc:+.1f} points lies {_inside(acc, local['acc'])} the local "
        f"engine's seed range [{100 * min(local['acc']):+.1f}, {100 * max(local['acc']):+.1f}] "
        f"({sum(min(local['acc']) <= g <= max(local['acc']) for g in verl['acc'])} of {len(verl['acc'])} seeds inside); "
        f"its mean length gain {100 * length:+.0f}% lies {_inside(length, local['len'])} "
        f"[{100 * min(local['len']):+.0f}%, {100 * max(local['len']):+.0f}%]."
    )


def _more_seeds(pairs: list[tuple]) -> tuple[str, list[str]]:
    """The local engine's outcome-only arm over more seeds: its gains alone and pooled with seeds 0-4,
    veRL's outcome-arm gains against the pooled range, and the experiment's own claim, met or not; with
    its source line (nothing until both it and the outcome arm's pair are recorded)."""
    more = read(MORE_SEEDS)
    arm = [p for p in pairs if p[0] == MORE_SEEDS_ARM]
    if not (more and more.get("runs") and arm):
        return "", []
    extra, local, verl = _gains(more), _gains(arm[0][2]), _gains(arm[0][3])
    pooled = {k: local[k] + extra[k] for k in ("acc", "len")}
    seeds = [int(s) for s in extra["seed"]]
    met = min(extra["len"]) <= 1.0

    def inside(k: str) -> int:
        return sum(min(pooled[k]) <= g <= max(pooled[k]) for g in verl[k])

    text = (
        f"\n\nThe local engine's outcome-only arm over {len(seeds)} more seeds ({seeds[0]}-{seeds[-1]}, "
        f"`results/{MORE_SEEDS}/`; claim declared before the runs: {more['design'].get('claim', '?')}): accuracy "
        f"gain {_span([100 * x for x in extra['acc']], '{:+.1f}')} points, length gain "
        f"{_span([100 * x for x in extra['len']], '{:+.0f}%')} (claim {'met' if met else 'not met'}: lowest "
        f"{100 * min(extra['len']):+.0f}%). Over all {len(pooled['len'])} local seeds the length gain spans "
        f"[{100 * min(pooled['len']):+.0f}%, {100 * max(pooled['len']):+.0f}%]: veRL's mean "
        f"{100 * _mean(verl['len']):+.0f}% lies {_inside(_mean(verl['len']), pooled['len'])} it, "
        f"{inside('len')} of its {len(verl['len'])} seeds inside; the accuracy gain spans "
        f"[{100 * min(pooled['acc']):+.1f}, {100 * max(pooled['acc']):+.1f}] points, "
        f"{inside('acc')} of veRL's {len(verl['acc'])} seeds inside."
    )
    return text, [source_line(f"results/{MORE_SEEDS}/", more.get("provenance"))]


def _row(label: str, engine: str, g: dict[str, list[float]], acc_t: float, len_t: float) -> list[str]:
    n = len(g["acc"])
    return [
        label,
        ENGINES[engine],
        str(n),
        f"{_mean(g['a0']):.3f} → {_mean(g['a1']):.3f}",
        _span([100 * x for x in g["acc"]], "{:+.1f}"),
        f"{_mean(g['l0']):.1f} → {_mean(g['l1']):.1f}",
        _span([100 * x for x in g["len"]], "{:+.0f}%"),
        f"{sum(x >= acc_t for x in g['acc'])}/{n}",
        f"{sum(x >= len_t for x in g['len'])}/{n}",
        f"{statistics.median(g['wall']):.1f}",
    ]


def _machines(pairs: list[tuple]) -> str:
    """Which processors each engine's records ran on (their wall minutes are that machine's, under its load)."""
    from experiments.registry import short_machine  # the status table's wording of a machine

    def of(exps: list[dict[str, Any]]) -> str:
        return ", ".join(sorted({short_machine(e.get("provenance") or {}) for e in exps}))

    return (
        f"Recorded on: local engine {of([p[2] for p in pairs])}; veRL's trainer {of([p[3] for p in pairs])} "
        "(wall minutes are each machine's under its load at the time; the benchmark below times both engines "
        "side by side)."
    )


def _draw(data: dict[str, Any]) -> Any:
    """Accuracy and length over RL steps: per arm a colour, the local engine solid, veRL's dashed; the
    mean over seeds and the seed range."""
    import matplotlib.pyplot as plt  # only drawing needs it (docgen.engine sets the backend)
    import numpy as np  # with matplotlib, only for drawing

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for ax, (key, title) in zip(axes, PANELS[:2], strict=True):
        for i, (arm, engines) in enumerate(data.items()):
            for engine, runs in engines.items():
                steps = runs[0][key]["step"]
                vals = np.array([r[key]["value"] for r in runs if r[key]["step"] == steps])
                style = "-" if engine == "local" else "--"
                ax.plot(steps, vals.mean(0), style, color=f"C{i}", lw=2, label=f"{arm}, {ENGINES[engine]}")
                ax.fill_between(steps, vals.min(0), vals.max(0), color=f"C{i}", alpha=0.08)
        ax.set(xlabel="RL step", title=title)
        ax.tick_params(labelsize=8)
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def r1_zero_engines() -> Rendered:
    """Both engines' arms side by side (see the module docstring)."""
    pairs = [(name, label, read(name), read(verl_name(name))) for name, label in ARMS]
    pairs = [p for p in pairs if p[2] and p[2].get("runs") and p[3] and p[3].get("runs")]
    done = {p[0] for p in pairs}
    pending = [f"`make results NAME={verl_name(name)}`" for name, _ in ARMS if name not in done]
    if not pairs:
        return Rendered(
            "*Not run yet: `make results NAME=r1_zero_verl-format` (and `-outcome`, `-shuffled`) writes "
            "`results/r1_zero_verl-<arm>/`.*"
        )
    tgt = pairs[0][3]["design"].get("targets", {})
    acc_t, len_t = tgt.get("acc_gain", 0.15), tgt.get("length_gain", 0.3)
    rows, per_seed, claims, fig, sources = [], [], [], {}, []
    for name, label, local_exp, verl_exp in pairs:
        g = {"local": _gains(local_exp), "verl": _gains(verl_exp)}
        for engine, exp in (("local", local_exp), ("verl", verl_exp)):
            rows.append(_row(label, engine, g[engine], acc_t, len_t))
            fig.setdefault(label, {})[engine] = [
                {k: r["curves"][k] for k in (ACC, LEN)} for r in exp["runs"].values()
            ]
            e = g[engine]
            per_seed += [
                [
                    label,
                    ENGINES[engine],
                    str(int(e["seed"][i])),
                    f"{e['a0'][i]:.3f} → {e['a1'][i]:.3f} ({100 * e['acc'][i]:+.1f} pts)",
                    f"{e['l0'][i]:.1f} → {e['l1'][i]:.1f} ({100 * e['len'][i]:+.0f}%)",
                    f"{e['wall'][i]:.1f}",
                ]
                for i in range(len(e["acc"]))
            ]
            sources.append(
                source_line(
                    f"results/{verl_name(name) if engine == 'verl' else name}/", exp.get("provenance")
                )
            )
        claims.append(_claim(label, g["local"], g["verl"]))
    head = [
        "arm",
        "engine",
        "seeds",
        "held-out accuracy, start → end (mean)",
        "accuracy gain, points: mean [min, max]",
        "length, start → end (mean tokens)",
        "length gain: mean [min, max]",
        f"seeds ≥ +{100 * acc_t:.0f} pts",
        f"seeds ≥ +{100 * len_t:.0f}% length",
        "wall min per run, median (as recorded)",
    ]
    more_text, more_sources = _more_seeds(pairs)
    sources += more_sources
    seed_head = ["arm", "engine", "seed", "held-out accuracy", "mean response length (tokens)", "wall min"]
    text = (
        "{fig:r1_zero_engines}\n\n"
        + Table(head, rows).markdown()
        + "\n\n"
        + _machines(pairs)
        + "\n\nClaim (declared before the veRL runs): "
        + str(pairs[0][3]["design"].get("claim", "?")).replace(pairs[0][0], "r1_zero_arms-<arm>")
        + ".\n\n"
        + "\n".join(f"- {c}" for c in claims)
        + more_text
        + (f"\n\n*Not run yet on veRL's trainer: {', '.join(pending)}.*" if pending else "")
        + "\n\n<details><summary>Per seed</summary>\n\n"
        + Table(seed_head, per_seed).markdown()
        + "\n\n</details>"
    )
    figure = DocFigure(
        "r1_zero_engines", fig, _draw, alt="held-out accuracy and length per arm on both engines"
    )
    return Rendered(text, figures=[figure], sources=sources)


def r1_zero_engine_bench() -> Rendered:
    """One full laptop run of the recipe on each engine, side by side (see the module docstring)."""
    exp = read(BENCH)
    rec = (exp or {}).get("tables", {}).get("latest")
    if not rec:
        return missing(BENCH)
    rows = []
    for engine, runs in rec["runs"].items():
        for r in runs:
            rows.append(
                [
                    ENGINES[engine],
                    f"{r['wall_s'] / 60:.1f}",
                    f"{r['cpu_s'] / 60:.1f}",
                    f"{r['steps_s'] / 60:.1f}",
                    "–" if r.get("testing_s") is None else f"{r['testing_s'] / 60:.1f}",
                    f"{(r['wall_s'] - r['steps_s'] - (r.get('testing_s') or 0.0)) / 60:.1f}",
                    str(r["processes"]),
                    f"{r['start_acc']:.3f} → {r['end_acc']:.3f}",
                ]
            )
    head = [
        "engine",
        "wall min",
        "CPU min (sampled)",
        "in training steps, min",
        "in evaluations, min",
        "the rest, min",
        "processes",
        "held-out accuracy",
    ]
    ratio = rec["ratios"]["verl/local wall_s"]
    verdict = (
        "within 1.5×: making it the CPU default is worth weighing"
        if ratio <= 1.5
        else "beyond 1.5×: the local engine stays the CPU default"
    )
    s = rec["settings"]
    check = rec["length_check"]["max_abs_diff"]
    text = (
        Table(head, rows).markdown()
        + f"\n\n`{s['recipe']}` at `{s['scale']}`, seed {s['seed']}, {s['rounds']} round(s). veRL's trainer took "
        f"{ratio:.1f}× the local engine's wall time and {rec['ratios']['verl/local cpu_s']:.1f}× its CPU time for "
        f"the same run ({verdict}). CPU time is sampled every {s['interval_s']:g} s over each run's processes "
        "(a lower bound for veRL's, spread over Ray's processes). The rest is start-up, checkpoints and, on veRL's "
        "trainer, the reference-reset merges (the local engine does not time its evaluations apart: they are in "
        "its rest). The held-out length veRL's records are derived "
        "with (the validation dumps' text re-tokenized) against the local run's own count, over its "
        f"{len(rec['length_check']['rows']) // 2} evaluations: largest difference {check[LEN]:.4f} tokens in the "
        f"mean length and {check[ACC]:.4f} in accuracy."
    )
    return Rendered(text, sources=[source_line(f"results/{BENCH}/latest.json", rec.get("provenance"))])
