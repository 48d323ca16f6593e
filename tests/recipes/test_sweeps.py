"""Sweep definitions: at least 3 seeds each, arms differ only in the swept axis and the seed,
launchers compose, and the sweep CLI plans without running anything.

Kept cheap (each Hydra compose of the full veRL tree costs ~0.5 s of CPU): the params of each sweep
are composed once per module, one arm per axis level is composed (a ``rlvr.seed=N`` override sets
that one key by construction, so seeds need no compose of their own), and the CLI runs in-process.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path

import pytest
import yaml

from core.cli import call
from core.sweeps import SweepSpec
from recipes.compose import CONF_DIR, compose, diff, flatten, options
from recipes.sweep import command


def main(argv: list[str]) -> int:
    """``python -m recipes.sweep <argv>``, in-process."""
    return call(command, "command", "sweep", argv, route=True)


SWEEPS = [
    "dynamic_sampling",
    "dynamic_sampling_matched",
    "kl_coef",
    "loss_norm",
    "format_weight",
]
AXIS_GROUPS = ["adv", "loss", "agg", "clip", "kl", "filter", "verifier", "length", "model", "dataset"]
SWEEP_META = {f.name for f in dataclasses.fields(SweepSpec)}


def keys_of(group: str) -> set[str]:
    """Every key any option of a config group sets (the keys the axis owns)."""
    out: set[str] = set()
    for f in Path(CONF_DIR, group).glob("*.yaml"):
        body = yaml.safe_load(f.read_text()) or {}
        body.pop("defaults", None)
        body.pop("hydra", None)
        out |= set(flatten(body))
    return out


@pytest.fixture(scope="module")
def params():
    """``{sweep: {key: [values]}}`` read from the YAML (``sweep_params`` itself runs in the CLI test)."""
    out = {}
    for name in SWEEPS:
        body = yaml.safe_load(Path(CONF_DIR, "sweep", f"{name}.yaml").read_text())
        raw = body["hydra"]["sweeper"]["params"]
        out[name] = {k: [v.strip() for v in str(vals).split(",")] for k, vals in raw.items()}
    return out


@functools.cache
def arm(name: str, *overrides: str):
    """One composed arm at the sweeps' laptop scale (cached: several tests look at the same arms)."""
    return compose([f"sweep={name}", "scale=laptop_base", *overrides])


def test_all_sweeps_defined():
    assert set(SWEEPS) <= set(options("sweep"))


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_shape(params, name):
    p = params[name]
    assert len(p["rlvr.seed"]) >= 3, "at least two degrees of freedom for a paired t interval"
    assert len(p) == 2, "a sweep crosses exactly one axis with the seeds"
    body = yaml.safe_load(Path(CONF_DIR, "sweep", f"{name}.yaml").read_text())
    meta = body["rlvr"]["sweep"]
    assert meta["name"] == name and set(meta) <= SWEEP_META
    assert meta["axis"] in p, "rlvr.sweep.axis names the swept key"
    assert not set(flatten(body.get("hydra", {}).get("sweeper", {}))) - {"params." + k for k in p}


@pytest.mark.parametrize("name", SWEEPS)
def test_arms_differ_only_in_swept_keys(hydra_ctx, params, name):
    p = params[name]
    axis = next(k for k in p if k != "rlvr.seed")
    owned = keys_of(axis)
    if axis == "recipe":  # a recipe owns every key of the axis groups it picks
        owned = set().union(*(keys_of(g) for g in AXIS_GROUPS)) | keys_of("recipe")
    levels = p[axis]
    seed = f"rlvr.seed={p['rlvr.seed'][0]}"
    base = arm(name, f"{axis}={levels[0]}", seed)
    for level in levels[1:]:
        cfg = arm(name, f"{axis}={level}", seed)
        changed = {k for k, _, _ in diff(base, cfg)}
        stray = {
            k
            for k in changed
            if k not in owned and not k.startswith(("rlvr.sources", "rlvr.deviations")) and k != "rlvr.recipe"
        }
        assert not stray, f"{name} arm {axis}={level} also changes {sorted(stray)}"
        assert changed, f"{name}: {axis}={level} changes nothing"


def test_every_arm_runs_from_the_base_model_on_one_budget(hydra_ctx, params):
    """R1-Zero in miniature for every arm: the pretrained base model, the chain-sum task, 40 steps
    with an evaluation every 10 -- set in the sweep files, so no arm differs in them."""
    for name in SWEEPS:
        axis = next(k for k in params[name] if k != "rlvr.seed")
        for level in params[name][axis]:
            cfg = arm(name, f"{axis}={level}", "rlvr.seed=0")
            assert "tiny-base" in cfg.actor_rollout_ref.model.path and "chain_sum" in cfg.data.train_files
            assert (cfg.trainer.total_training_steps, cfg.trainer.test_freq) == (40, 10), name
    a = arm("dynamic_sampling", "filter=none", "rlvr.seed=0")
    b = arm("dynamic_sampling", "filter=dynamic", "rlvr.seed=0")
    assert a.algorithm.filter_groups.enable is False and b.algorithm.filter_groups.enable is True


@pytest.mark.parametrize("name", SWEEPS)
def test_pilot_seeds_are_never_reused_and_the_pilot_is_one_command(params, name):
    from core.sweeps import load
    from experiments.registry import EXPERIMENTS

    pilot = load(name).pilot
    if pilot is None:
        return
    assert pilot.seeds and not {str(x) for x in pilot.seeds} & set(params[name]["rlvr.seed"])
    argv = EXPERIMENTS.get(pilot.experiment)
    assert f"results={pilot.experiment}" in argv and f"sweep={name}" in argv


@pytest.mark.parametrize(
    "launcher,target",
    [
        ("local_parallel", "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"),
    ],
)
def test_launchers_compose(hydra_ctx, launcher, target):
    from hydra import compose as hydra_compose

    cfg = hydra_compose(
        "config", overrides=["sweep=kl_coef", f"hydra/launcher={launcher}"], return_hydra_config=True
    )
    la = cfg.hydra.launcher
    assert la._target_ == target
    if launcher == "local_parallel":
        assert la.n_jobs == 2


def test_plan_composes_each_arm_once_up_to_an_integer_seed(hydra_ctx, capsys, monkeypatch):
    """Arms that differ only in an integer seed validate alike: one composition per axis value; a
    seed that is no integer is composed and refused like any other bad value."""
    import recipes.run as run

    composed: list[list[str]] = []
    real = run.prepare_config

    def counting(overrides, **kw):  # noqa: ANN001, ANN202 - wraps the real preparation
        composed.append(list(overrides))
        return real(overrides, **kw)

    monkeypatch.setattr(run, "prepare_config", counting)
    assert main(["sweep=kl_coef", "plan=true"]) == 0
    err = capsys.readouterr().err
    assert "kl_coef: 9 runs" in err and "rlvr.seed=2 kl=k3_0.05" in err  # the plan lists every arm
    seeds = {o for c in composed for o in c if o.startswith("rlvr.seed=")}
    assert len(composed) == 3 and seeds == {"rlvr.seed=0"}
    composed.clear()
    assert main(["sweep=kl_coef", "rlvr.seed=0,abc", "plan=true"]) == 2
    err = capsys.readouterr().err
    assert "rlvr.seed=abc" in err and "[rlvr.seed] expected int" in err, err
    assert len(composed) == 4  # seed 0 with each of the 3 KL values, then the first arm of seed abc


def test_sweep_cli_plan(hydra_ctx, capsys):
    """The CLI's refusals and a swept key's list from the command line (the file's own plan is
    :func:`test_plan_composes_each_arm_once_up_to_an_integer_seed`'s)."""
    assert main(["sweep=nope", "plan=true"]) == 2
    # a swept key on the command line replaces the file's list; a list on any other key is refused
    assert main(["sweep=kl_coef", "rlvr.seed=0,1", "plan=true"]) == 0
    err = capsys.readouterr().err
    assert "kl_coef: 6 runs" in err and "rlvr.seed=2" not in err
    assert main(["sweep=kl_coef", "trainer.total_training_steps=10,20", "plan=true"]) == 2
    assert "only the sweep's own keys" in capsys.readouterr().err


def test_prepare_builds_each_seeds_cold_start_in_parallel_once(tmp_path, monkeypatch) -> None:
    """A sweep's own cold starts at the SFT laptop scale (an untagged variant here): two seeds built
    by two spawned workers, then cached; at the recipe's own laptop scale from the base model
    (scale=laptop_base) there is no cold start and nothing is built. Two SFT steps each (the build's
    length is not what is checked); the cached pass runs in this process (``jobs=1``: nothing to
    build, so no workers to start)."""
    import json

    import torch

    from recipes.sweep import prepare

    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    small = [
        "rlvr.seed=0,1",
        "local.task.train_n=300",
        "local.task.val_n=32",
        "local.sft.max_steps=2",
        "local.sft.eval_every=2",
        "local.sft.eval_n=16",
        "local.sft.min_pass=0.0",
    ]
    assert prepare("format_weight", small, jobs=2) == []  # laptop_base: RL from the base model
    assert not (tmp_path / "models").exists()
    own = [
        *small,
        "scale=laptop",
        "local.sft.untagged_answer_rate=0.5",
        "actor_rollout_ref.model.path=" + str(tmp_path / "models" / "untagged-sft${local.sft.seed}"),
    ]
    written = prepare("format_weight", own, jobs=2)
    assert sorted(Path(w).name for w in written) == ["untagged-sft0", "untagged-sft1"]
    for w in written:
        meta = json.loads((Path(w) / "rlvr_meta.json").read_text())
        assert meta["build"]["sft"]["untagged_answer_rate"] == 0.5 and meta["sft_steps"] == 2
    threads = torch.get_num_threads()
    try:
        assert prepare("format_weight", own, jobs=1) == []  # cached: nothing rebuilt
    finally:
        torch.set_num_threads(threads)  # a build in this process sets its own thread count


def test_sweep_resume_checks_the_directory_and_overrides(hydra_ctx, capsys, tmp_path) -> None:
    d = tmp_path / "kl_coef-20260101-000000"
    for job in ("0", "1"):
        (d / job).mkdir(parents=True)
        (d / job / "summary.json").write_text("{}")
    (d / "sweep.json").write_text(json.dumps({"sweep": "kl_coef", "overrides": ["rlvr.seed=0,1"]}))
    # no overrides given: the recorded ones are reused (6 runs, not the file's 9)
    assert main(["sweep=kl_coef", f"resume={d}", "plan=true"]) == 0
    err = capsys.readouterr().err
    assert "kl_coef: 6 runs" in err and "2 of 6 runs finished" in err
    # other overrides would map job numbers to other arms: refused
    assert main(["sweep=kl_coef", f"resume={d}", "rlvr.seed=3", "plan=true"]) == 2
    assert "differ from the sweep's" in capsys.readouterr().err
    # a directory of another sweep: refused
    assert main(["sweep=loss_norm", f"resume={d}", "plan=true"]) == 2
    assert "not a directory of sweep 'loss_norm'" in capsys.readouterr().err
