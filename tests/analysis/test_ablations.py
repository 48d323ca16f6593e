"""``analysis.ablations`` + ``docgen.ablations``: sweeps recorded into results/, verdicts, control, strict re-scoring."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.ablations import load_sweep, record_sweep, strict_accuracy
from analysis.synthetic import write_sweep
from docgen import ablations as ablations_doc
from docgen import blocks
from docgen.__main__ import selected
from recipes.sweep import SWEEP_BLOCKS, refresh_docs


@pytest.fixture(autouse=True)
def results_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    ablations_doc._load.cache_clear()
    yield tmp_path / "results"
    ablations_doc._load.cache_clear()


def _finish(root: Path) -> Path:
    """Make every synthetic job look finished, logging held-out accuracy under the @1 key the doc reads."""
    for job in root.iterdir():
        if not job.is_dir():
            continue
        m = job / "metrics.jsonl"
        m.write_text(m.read_text().replace("acc/mean@4", "acc/mean@1"))
        (job / "summary.json").write_text(json.dumps({"minutes": 0.5, "cpu_minutes": 0.4}))
    return root


def test_record_then_verdict_and_control_table(tmp_path: Path, results_dir: Path) -> None:
    # arm i gains 0.2 + 0.15 i: filter=dynamic is better than filter=none in every seed
    main = _finish(
        write_sweep(tmp_path / "dynamic_sampling-1", "filter", ["none", "dynamic"], seeds=4, steps=40)
    )
    # the control arm gains 0.2, as filter=none does, so filter=dynamic beats it too
    ctl = _finish(write_sweep(tmp_path / "dynamic_sampling_matched-1", "filter", ["none"], seeds=4, steps=40))
    record_sweep(main, command="make sweep SWEEP=dynamic_sampling")
    record_sweep(ctl)
    runs = sorted(p.name for p in (results_dir / "sweep-dynamic_sampling" / "runs").iterdir())
    assert runs == [f"filter={a}-s{s}.json" for a in ("dynamic", "none") for s in range(4)]
    exp = json.loads((results_dir / "sweep-dynamic_sampling" / "experiment.json").read_text())
    assert exp["provenance"]["command"] == "make sweep SWEEP=dynamic_sampling"
    assert exp["design"]["spec"]["baseline"] == "filter=none" and exp["design"]["arms"]["filter=dynamic"] == [
        0,
        1,
        2,
        3,
    ]
    rendered, row = ablations_doc.sweep_block("dynamic_sampling")
    assert row[1].startswith(
        "filter=dynamic: reproduced (per step); vs the compute-matched control: reproduced"
    )
    assert "**Control**" in rendered.markdown and "`filter=dynamic` − control" in rendered.markdown
    assert "{fig:ablation-dynamic_sampling}" in rendered.markdown and rendered.figures[0].svg().startswith(
        b"<?xml"
    )
    line = next(
        x
        for x in rendered.markdown.splitlines()
        if x.startswith("| held-out accuracy, final | `filter=dynamic`")
    )
    assert float(line.split("|")[6]) > 0.05
    assert any("results/sweep-dynamic_sampling_matched" in s for s in rendered.sources)
    # sweeps never recorded are listed as such
    assert "| KL coefficient 0 vs 0.01 vs 0.05 | not run |" in ablations_doc.overview().markdown


def test_recording_again_mirrors_the_directory(tmp_path: Path, results_dir: Path) -> None:
    d = _finish(write_sweep(tmp_path / "kl_coef-1", "kl", ["none", "k3_0.01"], seeds=3, steps=20))
    record_sweep(d)
    assert len(load_sweep("kl_coef").runs) == 6
    d2 = _finish(write_sweep(tmp_path / "kl_coef-2", "kl", ["none", "k3_0.01"], seeds=2, steps=20))
    record_sweep(d2)
    assert sorted({r.seed for r in load_sweep("kl_coef").runs}) == [0, 1]  # no stale seed-2 runs left


def test_control_not_run_is_said(tmp_path: Path) -> None:
    main = _finish(
        write_sweep(tmp_path / "dynamic_sampling-1", "filter", ["none", "dynamic"], seeds=3, steps=20)
    )
    record_sweep(main)
    assert (
        "no filter, 48 prompts/step (the filter arm's first round). Not run: no comparison."
        in ablations_doc.sweep_block("dynamic_sampling")[0].markdown
    )


def test_unfinished_sweep_is_refused(tmp_path: Path) -> None:
    d = write_sweep(tmp_path / "kl_coef-1", "kl", ["none"], seeds=1, steps=5)
    with pytest.raises(FileNotFoundError, match="no finished runs"):
        record_sweep(d)


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


def test_pilot_is_rendered_before_the_sweep_runs(tmp_path: Path, results_dir: Path) -> None:
    """The pilot recorded under its own experiment shows (seeds, paired difference, seeds for 80%
    power) while the sweep itself is still "not run"; its source is listed with the block's."""
    pilot = _finish(
        write_sweep(tmp_path / "dynamic_sampling-1", "filter", ["none", "dynamic"], seeds=2, steps=20)
    )
    record_sweep(pilot, experiment="sweep-dynamic_sampling-pilot")
    rendered, row = ablations_doc.sweep_block("dynamic_sampling")
    md = rendered.markdown
    assert "**Pilot** (seeds 100, 101, not reused; `make results NAME=sweep-dynamic_sampling-pilot`)" in md
    line = next(x for x in md.splitlines() if x.startswith("| `filter=dynamic` | 2 |"))
    assert float(line.split("|")[3]) > 0.05  # the synthetic filter arm gains more in both seeds
    assert "**Not run.**" in md and row[1] == "not run"
    assert any("results/sweep-dynamic_sampling-pilot" in s for s in rendered.sources)


def test_a_recorded_sweep_refreshes_its_doc_blocks(tmp_path: Path, results_dir: Path) -> None:
    """``make sweep`` ends by regenerating docs/ablations.md's and README's sweep blocks from results/."""
    repo = Path(__file__).resolve().parents[2]
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    for name in ("README.md", "docs/ablations.md"):
        (root / name).write_text((repo / name).read_text())
    record_sweep(_finish(write_sweep(tmp_path / "kl_coef-1", "kl", ["none", "k3_0.01"], seeds=3, steps=20)))
    changed = refresh_docs(root)
    assert "docs/ablations.md: block 'ablation-kl_coef'" in changed
    assert "README.md: block 'ablations-overview'" in changed
    block = (root / "docs/ablations.md").read_text().split("<!-- gen:ablation-kl_coef -->")[1]
    assert "6 of 9 runs finished" in block.split("<!-- /gen:ablation-kl_coef -->")[0]
    # a second pass has nothing left to change: the same blocks checked in-process (the command's own
    # process ran above; a second one would only pay veRL's and Hydra's imports again)
    assert blocks.generate(check=True, root=root, only=selected(list(SWEEP_BLOCKS))) == []


def test_a_pilot_re_recorded_after_its_sweep_says_so(
    tmp_path: Path, results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pilot written after the confirmatory runs did not choose their seed count: the block says
    the count came from its earlier record; a pilot written before says nothing of the kind -- unless
    the sweep ran more seeds than the record asks for (a budget cap lowers a count, never raises it)."""
    record_sweep(_finish(write_sweep(tmp_path / "kl_coef-1", "kl", ["none", "k3_0.01"], seeds=3, steps=20)))
    pilot = _finish(write_sweep(tmp_path / "kl_coef-p", "kl", ["none", "k3_0.01"], seeds=2, steps=20))
    record_sweep(pilot, experiment="sweep-kl_coef-pilot")

    def stamp(experiment: str, written: str) -> None:
        path = results_dir / experiment / "experiment.json"
        data = json.loads(path.read_text())
        data["provenance"]["written"] = written
        path.write_text(json.dumps(data))
        ablations_doc._load.cache_clear()

    said = "This pilot record was written after the confirmatory runs"
    stamp("sweep-kl_coef", "2026-01-02T00:00:00+0000")
    stamp("sweep-kl_coef-pilot", "2026-01-01T00:00:00+0000")
    md = ablations_doc.sweep_block("kl_coef")[0].markdown
    assert said not in md and "seeds by the rule, not the" not in md
    monkeypatch.setattr(ablations_doc, "sweep_params_of", lambda name: {"rlvr.seed": list(range(40))})
    md = ablations_doc.sweep_block("kl_coef")[0].markdown
    assert said not in md and "seeds by the rule, not the 40 the sweep ran" in md
    monkeypatch.undo()
    stamp("sweep-kl_coef-pilot", "2026-01-03T00:00:00+0000")
    assert said in ablations_doc.sweep_block("kl_coef")[0].markdown


def test_a_pilot_from_another_base_model_says_so(tmp_path: Path, results_dir: Path) -> None:
    """Pilot and sweep runs that name different base-model weights: the pilot block names both."""
    record_sweep(_finish(write_sweep(tmp_path / "kl_coef-1", "kl", ["none", "k3_0.01"], seeds=3, steps=20)))
    pilot = _finish(write_sweep(tmp_path / "kl_coef-p", "kl", ["none", "k3_0.01"], seeds=2, steps=20))
    record_sweep(pilot, experiment="sweep-kl_coef-pilot")

    def weights(experiment: str, sha: str) -> None:
        for path in (results_dir / experiment / "runs").glob("*.json"):
            rec = json.loads(path.read_text())
            rec.setdefault("run", {})["model"] = {"weights_sha256": sha}
            path.write_text(json.dumps(rec))
        ablations_doc._load.cache_clear()

    for experiment, written in (("sweep-kl_coef", "2026-01-02"), ("sweep-kl_coef-pilot", "2026-01-01")):
        path = results_dir / experiment / "experiment.json"  # the pilot first: no other note beside it
        data = json.loads(path.read_text())
        data["provenance"]["written"] = f"{written}T00:00:00+0000"
        path.write_text(json.dumps(data))
    said = "The pilot's runs started from another base model than the sweep's"
    weights("sweep-kl_coef", "a" * 64)
    weights("sweep-kl_coef-pilot", "a" * 64)
    assert said not in ablations_doc.sweep_block("kl_coef")[0].markdown
    weights("sweep-kl_coef-pilot", "b" * 64)
    md = ablations_doc.sweep_block("kl_coef")[0].markdown
    assert f"{said} (weights `bbbbbbbbbbbb` vs `aaaaaaaaaaaa`" in md
    # in the notes paragraph: never glued to the pilot table's last row or to the decision paragraph
    (line,) = [x for x in md.splitlines() if said in x]
    assert not line.startswith(("|", "**")), line[:80]
