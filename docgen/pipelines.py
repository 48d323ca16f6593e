"""The pipelines' blocks (``pipeline-<name>``, one per ``conf/pipeline/<name>.yaml``), from ``results/``.

Each renders ``results/pipeline-<name>/``: held-out accuracy of every evaluated model with its
interval, the compared differences, and the stages' wall and CPU minutes. A pipeline never recorded
renders the command that writes it.
"""

from __future__ import annotations

from analysis.render import Table
from core.compose import CONF_DIR
from docgen.engine import Rendered, source_line
from docgen.results import missing, read


def names() -> list[str]:
    """Every pipeline with a file in ``conf/pipeline/``, sorted."""
    return [p.stem for p in sorted((CONF_DIR / "pipeline").glob("*.yaml"))]


def _ci(lo: float | None, hi: float | None) -> str:
    return "n/a" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


def pipeline_block(name: str) -> Rendered:
    experiment = f"pipeline-{name}"
    data = read(experiment)
    if data is None:
        return missing(experiment)
    parts = []
    for ev in data["tables"].values():
        rows = [
            [f"`{label}`", f"{v['mean']:.3f}", _ci(v["lo"], v["hi"]), v["seeds"], v["ci"]]
            for label, v in ev["labels"].items()
        ]
        parts.append(Table(["model", "held-out accuracy", "95% CI", "seeds", "interval"], rows).markdown())
        diffs = [
            [f"`{d['b']}` − `{d['a']}`", f"{d['diff_b_minus_a']:+.3f}", _ci(d["lo"], d["hi"])]
            for d in ev.get("differences", [])
        ]
        if diffs:
            parts.append(Table(["difference", "Δ", "95% CI (Welch)"], diffs).markdown())
    stages = data["design"]["stages"]
    rows = [
        [f"`{n}`", s["kind"], f"{(s['seconds'] or 0) / 60:.1f}", f"{(s['cpu_seconds'] or 0) / 60:.1f}"]
        for n, s in stages.items()
    ]
    parts.append(Table(["stage", "kind", "wall min", "CPU min"], rows).markdown())
    return Rendered(
        "\n\n".join(parts), sources=[source_line(f"results/{experiment}", data.get("provenance"))]
    )
