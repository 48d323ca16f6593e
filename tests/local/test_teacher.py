"""The laptop teacher of ``recipe=opd`` (recipes.local.teacher): built on first use where the config
points, keyed by what builds it, and a user's own checkpoint there is used as is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf, open_dict

import recipes.local.teacher as teacher_mod
from recipes.compose import compose
from recipes.local.teacher import BUILDER, TEACHER_KEY, ensure_teacher


def _cfg(path: Path, fast: tuple[str, ...], steps: int = 2):
    cfg = compose(["recipe=opd", *fast, f"{TEACHER_KEY}={path}"])
    with open_dict(cfg):
        spec = cfg.local.teacher
        spec.steps, spec.test_freq = steps, steps
        spec.overrides = [o for o in fast if not o.startswith("scale=")]
    return cfg


def _no_training(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - stands in for a build that must not happen
    raise AssertionError("the teacher was trained again")


def test_teacher_is_built_once_keyed_and_a_users_own_is_kept(cache_dir, fast, tmp_path, monkeypatch) -> None:
    path = tmp_path / "teacher"
    got = ensure_teacher(_cfg(path, fast), print)
    assert got == path and (path / "config.json").is_file()
    meta = json.loads((path / "rlvr_meta.json").read_text())
    assert meta["build"]["builder"] == BUILDER and meta["build"]["teacher"]["steps"] == 2
    assert meta["run"]["steps"] == 2, meta["run"]
    # it trained: its weights are not the policy's it started from
    policy = json.loads((Path(meta["policy_path"]) / "rlvr_meta.json").read_text())
    assert meta["weights_sha256"] != policy["weights_sha256"]
    assert not path.with_name(path.name + ".run").exists()  # the teacher's run folder is removed

    monkeypatch.setattr(teacher_mod, "train", _no_training)
    assert ensure_teacher(_cfg(path, fast), print) == path  # cached: not trained again
    with pytest.raises(AssertionError, match="trained again"):
        ensure_teacher(_cfg(path, fast, steps=3), print)  # another setting: rebuilt

    own = tmp_path / "own_teacher"
    shutil.copytree(path, own)
    (own / "rlvr_meta.json").unlink()
    assert ensure_teacher(_cfg(own, fast), print) == own  # a user's own checkpoint: used as is

    cfg = _cfg(tmp_path / "absent", fast)
    with open_dict(cfg):
        cfg.local.teacher = None
    with pytest.raises(ValueError, match=r"local\.teacher is null"):
        ensure_teacher(cfg, print)
    assert OmegaConf.select(cfg, TEACHER_KEY) and not (tmp_path / "absent").exists()
