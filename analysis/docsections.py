"""The generated blocks of README.md and docs/ that are not ablations (those: ``ablations_doc``).

Each function reads committed results (``core.results``) and returns a ``docgen.Rendered``; it is
registered in ``analysis.docgen.SECTIONS`` under the name its ``<!-- gen:<name> -->`` block uses.
A section whose results are missing says which command writes them. Importing this module registers
every section (``python -m analysis.docgen`` does).
"""

from __future__ import annotations

import statistics
from typing import Any

from analysis import (  # noqa: F401  (registers docs/reward_models.md's sections)
    ablations_doc,  # noqa: F401  (registers the ablation sections)
    rm_doc,
    rm_doc_runs,
)
from analysis.docgen import SECTIONS, Rendered, source_line
from analysis.render import Table
from core import results
from core.cli import load


def _missing(experiment: str, command: str) -> Rendered:
    return Rendered(f"*Not run yet: `{command}` writes `results/{experiment}/`.*")


def _read(experiment: str) -> dict[str, Any] | None:
    try:
        return results.read_experiment(experiment)
    except FileNotFoundError:
        return None


def _curve_end(rec: dict[str, Any], key: str, first: bool = False) -> float | None:
    c = rec.get("curves", {}).get(key)
    if not c or not c["value"]:
        return None
    return c["value"][0 if first else -1]


def _coverage(design: dict[str, Any]) -> str:
    """A line saying which of the declared design's seeds this record holds, when not all."""
    declared = load("command", "seed_table")
    missing = sorted(set(int(x) for x in declared.seeds) - set(int(x) for x in design.get("seeds", [])))
    if not missing:
        return ""
    return (
        f"Seeds run at this code version: {', '.join(map(str, design['seeds']))}; the declared design's seeds "
        f"{', '.join(map(str, missing))} were not re-run here (machine time; `make results NAME=seed_table` runs "
        "all of them).\n\n"
    )


@SECTIONS.register("seed-table")
def seed_table() -> Rendered:
    """Held-out accuracy start → end per recipe and seed, the target count and the minutes."""
    data = _read("seed_table")
    if data is None:
        return _missing("seed_table", "make results NAME=seed_table")
    design = data["design"]
    by_label: dict[str, dict[int, dict]] = {}
    for rec in data["runs"].values():
        by_label.setdefault(rec["label"], {})[int(rec["seed"])] = rec
    seeds = sorted({s for runs in by_label.values() for s in runs})
    header = [
        "recipe",
        *[f"seed {s}" for s in seeds],
        "≥ +15 points",
        "wall min (median)",
        "CPU min (median)",
    ]
    rows, short = [], []
    for label, runs in by_label.items():
        cells, met = [f"`{label}`"], 0
        for s in seeds:
            r = runs.get(s)
            if r is None:
                cells.append("")
                continue
            a0, a1 = r["summary"]["start_acc"], r["summary"]["end_acc"]
            met += a1 >= a0 + 0.15
            cells.append(f"{a0:.3f}→{a1:.3f}")
        wall = statistics.median(r["wall_s"] / 60 for r in runs.values())
        cpu = statistics.median(r["cpu_s"] / 60 for r in runs.values())
        rows.append([*cells, f"{met}/{len(runs)}", f"{wall:.1f}", f"{cpu:.1f}"])
        if label in design.get("recipes", []) and met < len(runs):
            short.append(f"`{label}` ({met}/{len(runs)} seeds)")
    text = f"Claim, recorded before the runs: {design.get('claim', '')}.\n\n" + _coverage(design)
    by_scale: dict[str, list[str]] = {}
    for recipe, scale in design.get("scales", {}).items():
        by_scale.setdefault(scale, []).append(f"`{recipe}`")
    if by_scale:
        text += (
            "Scale profile: " + "; ".join(f"`{k}` for {', '.join(v)}" for k, v in by_scale.items()) + ".\n\n"
        )
    text += Table(header, rows).markdown()
    n = len(design.get("recipes", []))
    text += f"\n\nThe claim holds for {n - len(short)} of {n} recipes" + (
        f"; not for {', '.join(short)}." if short else "."
    )
    return Rendered(text, sources=[source_line("results/seed_table", data.get("provenance"))])
