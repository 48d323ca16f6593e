"""Which run a pre-flight of ``engine=verl`` judges on a machine without a GPU (recipes.preflight.target).

A laptop profile (``trainer.n_gpus_per_node=0``, picked when no scale is given) is the CPU run
``make run ENGINE=verl`` makes here: make run's CPU changes applied. A profile asking for GPUs is the
run on GPU nodes, judged unchanged; ``target=`` overrides the rule. ``recipes.run``'s own pre-flight
of a CPU launch judges the CPU run, and the report says which config each check judged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import call
from core.compose import context
from recipes import launch_cpu
from recipes.preflight import preflight, settings
from recipes.preflight.__main__ import command, decide
from recipes.preflight.target import REHEARSED_ON, describe, judged
from recipes.run import prepare_config


@pytest.fixture
def no_gpu(monkeypatch):
    """A machine without a GPU (this one has none; fixed so the test means the same on any machine)."""
    monkeypatch.setattr("recipes.run.on_cpu", lambda: True)


@pytest.fixture(scope="module")
def hydra_ctx():
    with context():
        yield


@pytest.mark.parametrize(
    ("overrides", "asked", "scale", "kind"),
    [
        (["recipe=grpo"], "auto", "laptop_base", "cpu"),  # no scale: the laptop profile make run runs here
        (["recipe=dapo", "scale=gpu_node"], "auto", "gpu_node", "gpu"),
        (["recipe=dapo", "scale=gpu_node"], "cpu", "gpu_node", "cpu"),
        (["recipe=dapo"], "gpu", None, "gpu"),  # target=gpu, no scale: the published config
    ],
)
def test_which_run_is_judged(hydra_ctx, no_gpu, overrides, asked, scale, kind) -> None:
    cfg, engine, _, _ = prepare_config([*overrides, "engine=verl"], changes=False, pick_laptop=asked != "gpu")
    assert cfg.rlvr.scale == scale
    got, why = decide(cfg, engine, asked)
    assert got == kind, why
    assert describe(cfg, engine).startswith("the GPU run") and "GPUs x" in describe(cfg, engine)
    if kind == "cpu":
        launch_cpu.apply(cfg)
        assert describe(cfg, engine).startswith("the CPU run of veRL's trainer on this machine")
    assert judged("verl_trainer", cfg, engine) == REHEARSED_ON["verl_trainer"]


def test_a_target_is_named_or_refused(hydra_ctx, no_gpu) -> None:
    cfg, engine, _, _ = prepare_config(["recipe=grpo", "engine=local"], changes=False)
    assert decide(cfg, engine)[0] == "local"
    for asked in ("gpu", "bogus"):
        with pytest.raises(ValueError, match=r"^\[target\] .*fix: "):
            decide(cfg, engine, asked)


def test_a_cpu_launch_preflights_the_cpu_run(hydra_ctx, no_gpu) -> None:
    """As recipes.run pre-flights ``make run RECIPE=grpo ENGINE=verl`` here: after make run's CPU changes,
    the report judges the CPU run, whose memory check plans no GPU memory (and fails nothing)."""
    cfg, engine, _, _ = prepare_config(["recipe=grpo", "engine=verl"])
    assert launch_cpu.apply(cfg)
    rep = preflight(cfg, engine, settings(["checks=[memory]", "gpu_memory_gb=80"]))
    assert rep.judged == {"memory": describe(cfg, engine)} and "CPU run" in rep.judged["memory"]
    assert not [f for f in rep.findings if f.level == "fail"]
    assert any(f.where == "trainer.device=cpu" and f.level == "info" for f in rep.findings)
    assert "memory_phases_gb" not in rep.facts
    assert f"judged memory: {describe(cfg, engine)}" in rep.format()


def test_the_command_says_which_run_it_judges(no_gpu, cache_dir, tmp_path: Path, capfd) -> None:
    """``python -m recipes.preflight recipe=grpo engine=verl`` here: the CPU run (its task files
    written); with ``scale=gpu_node``: the GPU run, and a bad target is one error line, exit 2."""
    base = ["recipe=grpo", "engine=verl", "checks=[memory]"]
    code = call(command, "command", "preflight", [*base, f"run_dir={tmp_path}"], route=True)
    rep = json.loads((tmp_path / "preflight.json").read_text())
    assert code == 0 and rep["judged"]["memory"].startswith("the CPU run of veRL's trainer")
    assert "judging the CPU run of veRL's trainer" in capfd.readouterr().err
    code = call(command, "command", "preflight", [*base, "scale=gpu_node", f"run_dir={tmp_path}"], route=True)
    rep = json.loads((tmp_path / "preflight.json").read_text())
    assert code < 2 and rep["judged"]["memory"] == "the GPU run (scale=gpu_node: 8 GPUs x 1 node)"
    assert "planned from this machine for the GPU nodes" in capfd.readouterr().err
    assert call(command, "command", "preflight", [*base, "target=bogus"], route=True) == 2
    err = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("error:")]
    assert err == ["error: [target] unknown target 'bogus'; fix: target=auto, target=cpu or target=gpu"]
