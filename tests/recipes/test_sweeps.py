"""Sweep definitions: at least 5 seeds each, and the arms differ only in the swept axis and the seed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from recipes.compose import CONF_DIR, compose, diff, flatten, options
from recipes.sweep import arms, sweep_params

SWEEPS = ["dynamic_sampling", "kl_coef", "loss_norm", "format_weight", "loss_variants"]
AXIS_GROUPS = ["adv", "loss", "agg", "clip", "kl", "filter", "verifier", "length", "model", "dataset"]


def keys_of(group: str) -> set[str]:
    """Every key any option of a config group sets (the keys the axis owns)."""
    out: set[str] = set()
    for f in Path(CONF_DIR, group).glob("*.yaml"):
        body = yaml.safe_load(f.read_text()) or {}
        body.pop("defaults", None)
        body.pop("hydra", None)
        out |= set(flatten(body))
    return out


def test_all_sweeps_defined():
    assert set(SWEEPS) <= set(options("sweep"))


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_has_five_seeds(hydra_ctx, name):
    params = sweep_params(name)
    assert len(params["rlvr.seed"]) >= 5
    assert len(params) == 2, "a sweep crosses exactly one axis with the seeds"


@pytest.mark.parametrize("name", SWEEPS)
def test_arms_differ_only_in_swept_keys(hydra_ctx, name):
    params = sweep_params(name)
    axis = next(k for k in params if k != "rlvr.seed")
    owned = keys_of(axis)
    if axis == "recipe":  # a recipe owns every key of the axis groups it picks
        owned = set().union(*(keys_of(g) for g in AXIS_GROUPS)) | keys_of("recipe")
    plan = arms(name)
    base = compose([f"sweep={name}", "scale=laptop", *plan[0]])
    assert len(plan) == len(params[axis]) * len(params["rlvr.seed"])
    seen_axis_change = False
    two_seeds = {f"rlvr.seed={s}" for s in params["rlvr.seed"][:2]}  # every level, two seeds: enough to see
    for arm in [a for a in plan[1:] if two_seeds & set(a)]:
        cfg = compose([f"sweep={name}", "scale=laptop", *arm])
        changed = {k for k, _, _ in diff(base, cfg)}
        stray = {k for k in changed if k not in owned and k != "rlvr.seed" and not k.startswith("rlvr.sources")
                 and k != "rlvr.recipe"}
        assert not stray, f"{name} arm {arm} also changes {sorted(stray)}"
        seen_axis_change |= bool(changed - {"rlvr.seed"})
    assert seen_axis_change, f"{name}: the arms do not differ in the swept axis"


def test_sweep_cli_plan(tmp_path):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "recipes.sweep", "sweep=kl_coef", "plan=true"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "kl_coef: 15 runs" in p.stderr and "kl=k3_0.05 rlvr.seed=4" in p.stderr
