"""``analysis.ablations``: verdicts, the control comparison and strict re-scoring, on synthetic sweeps."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

from analysis.ablations import render, strict_accuracy
from analysis.synthetic import write_sweep


def _finish(root: Path) -> Path:
    """Make every synthetic job look finished, logging held-out accuracy under the @1 key the doc reads."""
    for job in root.iterdir():
        if not job.is_dir():
            continue
        m = job / "metrics.jsonl"
        m.write_text(m.read_text().replace("acc/mean@4", "acc/mean@1"))
        (job / "summary.json").write_text(json.dumps({"minutes": 0.5}))
    return root


def test_verdict_and_control_table(tmp_path: Path) -> None:
    # arm i gains 0.2 + 0.15 i: filter=dynamic is better than filter=none in every seed
    main = _finish(
        write_sweep(tmp_path / "dynamic_sampling-1", "filter", ["none", "dynamic"], seeds=4, steps=40)
    )
    # the control arm gains 0.2, as filter=none does, so filter=dynamic beats it too
    ctl = _finish(write_sweep(tmp_path / "dynamic_sampling_matched-1", "filter", ["none"], seeds=4, steps=40))
    doc = render({"dynamic_sampling": main, "dynamic_sampling_matched": ctl}, {}, fig_dir=tmp_path / "figs")
    # the figure (arms + control, one curve each) is written and embedded above the compute line
    assert (tmp_path / "figs" / "dynamic_sampling.png").stat().st_size > 10_000
    assert "![Dynamic-sampling filter off vs on](figs/dynamic_sampling.png)" in doc
    assert not (tmp_path / "figs" / "kl_coef.png").exists()  # no runs, no figure
    overview = next(line for line in doc.splitlines() if line.startswith("| Dynamic-sampling"))
    assert "filter=dynamic: reproduced (per step); vs the compute-matched control: reproduced" in overview
    assert "**Control**" in doc and "`filter=dynamic` − control" in doc
    row = next(line for line in doc.splitlines() if line.startswith("| held-out accuracy, final | "))
    delta = float(row.split("|")[3])
    assert delta > 0.05
    # sweeps never run are listed as such, claims and all
    assert "| KL coefficient 0 vs 0.01 vs 0.05 | not run |" in doc


def test_control_not_run_is_said(tmp_path: Path) -> None:
    main = _finish(
        write_sweep(tmp_path / "dynamic_sampling-1", "filter", ["none", "dynamic"], seeds=3, steps=20)
    )
    doc = render({"dynamic_sampling": main}, {})
    assert "no filter, 18 prompts/step (same rollouts). Not run: no comparison." in doc


def test_strict_accuracy_rescores_the_last_dump(tmp_path: Path) -> None:
    val = tmp_path / "validation"
    val.mkdir()
    rows = [
        {"output": "<think>4+4+0=08</think><answer>8</answer>", "gts": "8"},  # strict: credited
        {"output": "<think>4+4+0=08</think>8", "gts": "8"},  # bare answer: flexible only
        {"output": "<think>4+4+0=08</think><answer>9</answer>", "gts": "8"},  # wrong
    ]
    (val / "60.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (val / "20.jsonl").write_text(json.dumps(rows[0]) + "\n")  # earlier dump: all correct, not read
    (val / "100.jsonl").write_text("")  # sorted by step, not by name: 100 is the last
    assert math.isnan(strict_accuracy(SimpleNamespace(path=tmp_path)))  # the empty step-100 dump is read
    (val / "100.jsonl").unlink()
    assert abs(strict_accuracy(SimpleNamespace(path=tmp_path)) - 1 / 3) < 1e-9
