"""Stage registry, references, manifest and resume logic, with tiny test-only stage kinds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from recipes.pipeline import STAGES, PipelineError, load, plan, run_pipeline
from recipes.pipeline.core import StageContext

CALLS: list[str] = []
FAIL: set[str] = set()


def _write(ctx: StageContext) -> dict:
    CALLS.append(ctx.plan.name)
    if ctx.plan.name in FAIL:
        raise RuntimeError("boom")
    prev = ctx.inputs.get("data", {}).get("data")
    text = (Path(prev).read_text() if prev else "") + f"{ctx.plan.name}@{ctx.spec.get('value')};"
    out = ctx.run_dir / "out.txt"
    out.write_text(text)
    return {"data": str(out)}


def _gather(ctx: StageContext) -> dict:
    CALLS.append(ctx.plan.name)
    got = ctx.inputs["models"]["all"]
    return {"seen": [Path(x["data"]).read_text() for x in (got if isinstance(got, list) else [got])]}


for kind, fn in (("test_write", _write), ("test_gather", _gather)):
    if kind not in STAGES:
        STAGES.add(kind, fn)


def pipe(**kw) -> OmegaConf:
    stages = [
        {"name": "a", "kind": "test_write", "value": 1},
        {"name": "b", "kind": "test_write", "data": "a", "value": 2, "seeds": [0, 1]},
        {"name": "c", "kind": "test_write", "data": "b", "value": 3, "seeds": [0, 1]},
        {"name": "d", "kind": "test_gather", "models": {"all": "c"}},
    ]
    return OmegaConf.create({"name": "t", "stages": stages, **kw})


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    FAIL.clear()


def test_seeds_expand_and_refs_follow_the_seed() -> None:
    names = [(p.name, p.refs) for p in plan(pipe(), STAGES.names())]
    assert [n for n, _ in names] == ["a", "b.s0", "b.s1", "c.s0", "c.s1", "d"]
    assert dict(names)["c.s1"] == {"data": {"stage": "b.s1"}}
    assert dict(names)["d"] == {"models": {"all": {"stages": ["c.s0", "c.s1"]}}}


@pytest.mark.parametrize(
    "bad,needle",
    [
        ({"name": "x", "kind": "nope"}, "unknown stage kind 'nope'"),
        ({"name": "x", "kind": "test_write", "data": "later"}, "'later' is not an earlier stage"),
        ({"name": "a", "kind": "test_write"}, "'a' is used twice"),
        ({"name": "x", "kind": "test_write", "data": "base:big"}, "no model 'big' under `models:`"),
    ],
)
def test_bad_pipelines_name_the_key(bad, needle) -> None:
    cfg = pipe()
    cfg.stages.append(bad)
    with pytest.raises(PipelineError, match=needle):
        plan(cfg, STAGES.names())


def test_overrides_must_name_existing_keys() -> None:
    with pytest.raises(PipelineError, match=r"\[vars.rl_stepz\] not a key of r1.yaml"):
        load("r1", ["vars.rl_stepz=3"])
    assert load("r1", ["vars.rl_steps=3"]).vars.rl_steps == 3


def test_outputs_chain_and_manifest_links_every_stage(tmp_path) -> None:
    man = run_pipeline(pipe(), tmp_path, "local")
    assert CALLS == ["a", "b.s0", "b.s1", "c.s0", "c.s1", "d"]
    d = man["stages"]["d"]["outputs"]["seen"]
    assert d == ["a@1;b.s0@2;c.s0@3;", "a@1;b.s1@2;c.s1@3;"]
    on_disk = json.loads((tmp_path / "pipeline.json").read_text())
    assert on_disk["order"] == man["order"]
    for name, rec in on_disk["stages"].items():
        assert rec["status"] == "done" and Path(rec["run_dir"]).is_dir() and rec["fingerprint"], name
        assert "seconds" in rec and rec["started"] and rec["finished"]
    assert on_disk["stages"]["c.s1"]["inputs"] == {"data": {"stage": "b.s1"}}


def test_finished_stages_are_not_rerun_and_a_failure_resumes_there(tmp_path) -> None:
    FAIL.add("c.s0")
    with pytest.raises(RuntimeError, match="(?s)stage .c.s0.*rerun the same command"):
        run_pipeline(pipe(), tmp_path, "local")
    rec = json.loads((tmp_path / "pipeline.json").read_text())["stages"]
    assert rec["c.s0"]["status"] == "failed" and "boom" in rec["c.s0"]["error"]
    assert rec["b.s1"]["status"] == "done" and rec["c.s1"]["status"] == "pending"
    FAIL.clear()
    CALLS.clear()
    run_pipeline(pipe(), tmp_path, "local")
    assert CALLS == ["c.s0", "c.s1", "d"]
    CALLS.clear()
    run_pipeline(pipe(), tmp_path, "local")
    assert CALLS == []


def test_a_changed_stage_reruns_with_everything_downstream(tmp_path) -> None:
    run_pipeline(pipe(), tmp_path, "local")
    CALLS.clear()
    cfg = pipe()
    cfg.stages[1].value = 20
    run_pipeline(cfg, tmp_path, "local")
    assert CALLS == ["b.s0", "b.s1", "c.s0", "c.s1", "d"]


def test_dry_run_prepares_without_marking_done(tmp_path) -> None:
    man = run_pipeline(pipe(), tmp_path, "verl", dry_run=True)
    assert {r["status"] for r in man["stages"].values()} == {"prepared"}


def test_a_done_stage_whose_output_vanished_runs_again(tmp_path) -> None:
    man = run_pipeline(pipe(), tmp_path, "local")
    Path(man["stages"]["c.s1"]["outputs"]["data"]).unlink()
    CALLS.clear()
    run_pipeline(pipe(), tmp_path, "local")
    assert CALLS == ["c.s1"]


def test_a_killed_stage_left_running_is_rerun(tmp_path) -> None:
    run_pipeline(pipe(), tmp_path, "local")
    f = tmp_path / "pipeline.json"
    man = json.loads(f.read_text())
    for name in ("c.s1", "d"):  # as a SIGKILL during c.s1 leaves it: running, later stages pending
        man["stages"][name]["status"] = "running" if name == "c.s1" else "pending"
    f.write_text(json.dumps(man))
    CALLS.clear()
    run_pipeline(pipe(), tmp_path, "local")
    assert CALLS == ["c.s1", "d"]
