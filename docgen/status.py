"""The ``results-status`` block: every registered experiment, the commit it was recorded at and the
CPU arithmetic it ran under (pinned by ``core.numerics``, or recorded before); and the
``results-inputs`` block: the base models and test splits the runs name, by hash; and the
``results-agreement`` block: the same run recorded by several experiments, compared; and the
``results-reproduce`` block: ``make results NAME=reproduce``'s fresh seed 0 beside the committed seeds.

The registry is ``make results``'s (``experiments.registry``); this module only renders its table.
"""

from __future__ import annotations

from core import results
from docgen.engine import Rendered, source_line
from experiments.registry import agreement, inputs, status
from experiments.reproduce import comparison_table


def results_status() -> Rendered:
    """Which results files were recorded at which commit and under which CPU arithmetic."""
    return Rendered(status().markdown())


def results_inputs() -> Rendered:
    """The base models and test splits every experiment's runs name, by hash."""
    return Rendered(inputs().markdown())


def results_agreement() -> Rendered:
    """Runs recorded by several experiments at several commits, and whether their curves agree."""
    return Rendered(agreement().markdown())


def results_reproduce() -> Rendered:
    """The last ``make results NAME=reproduce``: per headline run and metric, the committed value of
    the re-run seed, the committed seeds' range, the fresh value from an empty cache, and whether the
    fresh base model's weights hash equals the committed one."""
    path = results.results_dir() / "reproduce" / "latest.json"
    if not path.is_file():
        return Rendered("*Not run yet: `make results NAME=reproduce`.*")
    data = results.read_json(path)
    inside = sum(r["inside"] for r in data["rows"])
    same = [
        f"`{name}`: {'the same' if w['fresh'] == w['committed'] else 'different'} "
        f"(`{(w['fresh'] or ['?'])[0][:12]}`)"
        for name, w in data.get("base_model_weights", {}).items()
        if w.get("fresh")
    ]
    machine = data["provenance"].get("machine", {})
    text = (
        comparison_table(data["rows"], data["seed"]).markdown()
        + f"\n\n{inside} of {len(data['rows'])} fresh values lie inside the committed seeds' range. "
        + "Base model pretrained again from the empty cache, weights sha256 vs the committed record: "
        + ("; ".join(same) or "none recorded")
        + f". Machine: {machine.get('cores', '?')} cores, {machine.get('processor', '?')}, "
        + f"`{machine.get('platform', '?')}`."
    )
    return Rendered(text, sources=[source_line("results/reproduce/latest.json", data["provenance"])])
