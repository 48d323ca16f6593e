"""The ``results-status`` block: every registered experiment, the commit it was recorded at and the
CPU arithmetic it ran under (pinned by ``core.numerics``, or recorded before); and the
``results-inputs`` block: the base models and test splits the runs name, by hash; and the
``results-agreement`` block: the same run recorded by several experiments, compared; and the
``results-reproduce`` block: ``make results NAME=reproduce``'s fresh seeds beside the committed ones;
and the ``numerics-trace`` block: the base model's first pretraining steps on emulated processors.

The registry is ``make results``'s (``experiments.registry``); this module only renders its table.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from analysis.render import Table
from core import results
from docgen.engine import Rendered, source_line
from experiments.registry import agreement, cpu_label, inputs, status
from experiments.reproduce import comparison_table, fmt_metric


def results_status() -> Rendered:
    """Which results files were recorded at which commit and under which CPU arithmetic."""
    return Rendered(status().markdown())


def results_inputs() -> Rendered:
    """The base models and test splits every experiment's runs name, by hash."""
    return Rendered(inputs().markdown())


def results_agreement() -> Rendered:
    """Runs recorded by several experiments at several commits, and whether their curves agree."""
    return Rendered(agreement().markdown())


def _span(xs: list[float], metric: str) -> str:
    return f"{fmt_metric(metric, sum(xs) / len(xs))} [{fmt_metric(metric, min(xs))}, {fmt_metric(metric, max(xs))}]"


def _machine(m: dict) -> str:
    return f"{m.get('cores', '?')} cores, {cpu_label(m.get('cpu') or {}, flags=True)}, `{m.get('platform', '?')}`"


class Targets(NamedTuple):
    """How many fresh seeds of one experiment met its declared targets."""

    experiment: str
    acc_t: float
    len_t: float | None
    acc: int  # seeds meeting the accuracy target
    length: int  # seeds meeting the length target (0 when none is declared)
    both: int  # seeds meeting every declared target
    n: int  # fresh seeds


def fresh_targets(rows: list[dict]) -> list[Targets]:
    """Per experiment of a reproduce record, how many fresh seeds meet its declared targets;
    experiments that declared no accuracy target are left out."""
    out = []
    for exp in dict.fromkeys(r["experiment"] for r in rows):
        design = results.read_json(results.results_dir() / exp / "experiment.json").get("design") or {}
        tgt = design.get("targets") or {}
        acc_t, len_t = tgt.get("acc_gain"), tgt.get("length_gain")
        if acc_t is None:
            continue
        by_seed: dict[int, dict[str, float]] = {r["seed"]: {} for r in rows if r["experiment"] == exp}
        for r in rows:
            if r["experiment"] == exp and r["fresh"] is not None:
                by_seed[r["seed"]][r["metric"]] = r["fresh"]
        acc = [m.get("acc gain", -1) >= acc_t for m in by_seed.values()]
        length = [len_t is not None and m.get("length gain", -1) >= len_t for m in by_seed.values()]
        both = [a and (len_t is None or b) for a, b in zip(acc, length, strict=True)]
        out.append(Targets(exp, acc_t, len_t, sum(acc), sum(length), sum(both), len(by_seed)))
    return out


#: the record of ``make results NAME=reproduce`` made before the optimizer fix (``core.numerics.adamw``):
#: its committed column is the records of that time, its fresh one another machine's
UNFUSED = "unfused_adamw"


def reproduce_record(name: str = "latest") -> dict | None:
    """``results/reproduce/<name>.json`` (``latest``: the last ``make results NAME=reproduce``), or None."""
    path = results.results_dir() / "reproduce" / f"{name}.json"
    return results.read_json(path) if path.is_file() else None


def results_reproduce() -> Rendered:
    """The last ``make results NAME=reproduce`` (:func:`reproduce_block`)."""
    return reproduce_block("latest")


def results_reproduce_unfused() -> Rendered:
    """The ``make results NAME=reproduce`` record made before the optimizer fix (:data:`UNFUSED`)."""
    return reproduce_block(UNFUSED)


def reproduce_block(name: str) -> Rendered:
    """A reproduce record: per headline arm and metric, the committed seeds' values beside the
    fresh ones from an empty cache (mean [min, max], paired difference, how many fresh values lie
    in the committed range), how many fresh seeds meet the experiment's targets, and whether the
    fresh base model and test split are the ones the committed records name."""
    data = reproduce_record(name)
    if data is None:
        return Rendered("*Not run yet: `make results NAME=reproduce`.*")
    rows = data["rows"]
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["run"], r["metric"]), []).append(r)
    table = []
    for (exp, _run, metric), rs in groups.items():
        both = [r for r in rs if r["fresh"] is not None and r["committed"] is not None]
        diff = [r["fresh"] - r["committed"] for r in both]
        table.append(
            [
                exp,
                metric,
                _span([r["committed"] for r in both], metric) if both else "–",
                _span([r["fresh"] for r in both], metric) if both else "–",
                fmt_metric(metric, sum(diff) / len(diff), sign=True) if diff else "–",
                f"{sum(r['inside'] for r in rs)}/{len(rs)}",
            ]
        )
    head = [
        "experiment",
        "metric",
        "committed: mean [min, max]",
        "fresh: mean [min, max]",
        "mean fresh − committed",
        "fresh inside committed range",
    ]
    targets = [f"`{t.experiment}` {t.both}/{t.n}" for t in fresh_targets(rows)]
    inputs = [
        f"{k}: fresh `{', '.join(x[:12] for x in v['fresh'])}`, committed records "
        + (f"`{', '.join(x[:12] for x in v['committed'])}`" if v["committed"] else "name none")
        + (" (the same)" if set(v["fresh"]) <= set(v["committed"]) else " (**different**)")
        for k, v in data.get("inputs", {}).items()
    ]
    inside = sum(r["inside"] for r in rows)
    text = (
        Table(head, table).markdown()
        + f"\n\nSeeds re-run: {', '.join(str(x) for x in data['seeds'])}. {inside} of {len(rows)} fresh values "
        + "lie inside the committed seeds' range. Fresh seeds meeting their experiment's targets: "
        + ("; ".join(targets) or "no targets declared")
        + ". Inputs, by sha256: "
        + ("; ".join(inputs) or "none recorded")
        + f". Machine of this record: {_machine(data['provenance'].get('machine', {}))}."
        + "\n\n<details><summary>Per seed</summary>\n\n"
        + comparison_table(rows).markdown()
        + "\n\n</details>"
    )
    return Rendered(text, sources=[source_line(f"results/reproduce/{name}.json", data["provenance"])])


def numerics_trace() -> Rendered:
    """``make results NAME=numerics_trace``: the base model's first pretraining steps on this machine
    and on emulated processors, per optimizer: the step at which the weights part, and how often each
    processor's ``torch.sqrt`` misrounds; then (when recorded) windows of later build steps and the
    first RL steps, compared the same way."""
    path = results.results_dir() / "numerics_trace" / "latest.json"
    if not path.is_file():
        return Rendered("*Not run yet: `make results NAME=numerics_trace`.*")
    d = results.read_json(path)
    native = cpu_label(d.get("native") or {}, flags=True)
    rows = [
        [
            (f"this machine ({native})" if r["processor"] == "native" else f"{r['processor']} (emulated)")
            + (f", {r['threads']} threads" if r.get("threads", 1) != 1 else ""),
            f"`{r['optimizer']}`",
            "yes" if r["corpus_same"] and r["init_same"] else "**no**",
            "never" if r["first_step_differing"] is None else f"**{r['first_step_differing']}**",
            f"{100 * r['sqrt_misrounded']:.1f}%",
        ]
        for r in d["rows"]
    ]
    head = [
        "processor",
        "optimizer",
        "same corpus and initial weights",
        f"weights differ from this machine's from step (of {d['steps']})",
        "float32 `torch.sqrt` not correctly rounded",
    ]
    text = Table(head, rows).markdown() + f"\n\nEmulator: {d['emulator']}."
    sources = [source_line("results/numerics_trace/latest.json", d["provenance"])]
    for name, part in (("windows.json", _numerics_windows), ("rl.json", _numerics_rl)):
        if path.with_name(name).is_file():
            more = results.read_json(path.with_name(name))
            text += part(more)
            sources.append(source_line(f"results/numerics_trace/{name}", more["provenance"]))
    return Rendered(text, sources=sources)


def _numerics_windows(w: dict[str, Any]) -> str:
    """The windows table of :func:`numerics_trace` (``windows.json``)."""
    rows = [
        [
            f"{r['window_at'] + 1}–{r['window_at'] + r['steps']}",
            "this machine, from the saved state"
            if r["processor"] == "native"
            else f"{r['processor']} (emulated)",
            "never" if r["first_step_differing"] is None else f"**{r['first_step_differing']}**",
        ]
        for r in w["rows"]
    ]
    head = ["build steps", "processor", "weights differ from the uninterrupted build's from step"]
    text = (
        f"\n\nThen later steps of the same {w['build_steps']}-step build, each window run from the build's "
        f"saved state (weights, optimizer moments, lr schedule, batch sampler), here and emulated, "
        f"against the build run uninterrupted here; a window that ends at step {w['build_steps']} ends at "
        f"the base model's final weights:\n\n{Table(head, rows).markdown()}"
    )
    if w.get("final_weights_sha256"):
        text += (
            f"\n\nThe uninterrupted build's final weights, saved as the build saves them: sha256 "
            f"`{w['final_weights_sha256'][:12]}` (the base model's `weights_sha256`)."
        )
    return text


def _numerics_rl(rl: dict[str, Any]) -> str:
    """The RL table of :func:`numerics_trace` (``rl.json``)."""
    rows = [
        [
            f"{r.get('from_step', 0) + 1}–{r.get('from_step', 0) + rl['steps']}",
            ("this machine" if r["processor"] == "native" else f"{r['processor']} (emulated)")
            + (
                f", resumed from the checkpoint at step {r['from_step']}"
                if r.get("resumed")
                else (" (the reference run)" if r["processor"] == "native" else "")
            ),
            f"{r['files'] - len(r['files_differing'])} of {r['files']}",
            f"{r['metrics'] - len(r['metrics_differing'])} of {r['metrics']}",
            ", ".join(f"`{k}`" for k in r["metrics_differing"]) or "none",
        ]
        for r in rl["rows"]
    ]
    head = [
        "RL steps",
        "processor",
        "files identical to the reference run's (checkpoint, rollouts, validation)",
        "logged values identical (step/metric, clocks aside)",
        "logged values that differ (step/metric; the record holds both, rounded)",
    ]
    return (
        f"\n\nThen RL steps of `r1_zero` (seed 0) from the same base model, here and emulated, each "
        "compared with the reference run, made here without a stop, by its files (the last checkpoint, "
        "the rollouts and validation samples of those steps) and its logged values; a window resumed "
        "from the reference run's checkpoint starts from the state the run had there:"
        f"\n\n{Table(head, rows).markdown()}"
    )
