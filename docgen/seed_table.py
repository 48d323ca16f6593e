"""The seed table's block (``seed-table``): held-out accuracy start -> end per recipe and seed.

Reads ``results/seed_table/`` (written by ``make results NAME=seed_table``) and renders the claim
recorded before the runs, which of the declared design's seeds were run, the scale profile, the
table (start -> end per seed, how many seeds met +15 points, median wall and CPU minutes) and
for how many recipes the claim holds. A missing experiment renders the command that writes it.
"""

from __future__ import annotations

import statistics
from typing import Any

from analysis.render import Table
from core.cli import load
from docgen.engine import Rendered, source_line
from docgen.results import missing, read


def _coverage(design: dict[str, Any]) -> str:
    """A line saying which of the declared design's seeds this record holds, when not all."""
    declared = load("command", "seed_table")
    absent = sorted(set(int(x) for x in declared.seeds) - set(int(x) for x in design.get("seeds", [])))
    if not absent:
        return ""
    return (
        f"Seeds run at this code version: {', '.join(map(str, design['seeds']))}; the declared design's seeds "
        f"{', '.join(map(str, absent))} were not re-run here (machine time; `make results NAME=seed_table` runs "
        "all of them).\n\n"
    )


def seed_table() -> Rendered:
    """Held-out accuracy start → end per recipe and seed, the target count and the minutes."""
    data = read("seed_table")
    if data is None:
        return missing("seed_table")
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
