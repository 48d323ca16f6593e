"""The patches of veRL internals: each pinned to the veRL code under it, refused on any other."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

import pytest

from verl_cpu import patches


@pytest.mark.parametrize("patch", patches.PATCHES, ids=lambda p: p.name)
def test_the_code_under_each_patch_is_the_code_it_was_written_for(patch: patches.Patch) -> None:
    """Fails when veRL's code under a patch changes: re-check the patch (its ``where``), then its hash."""
    assert patches.source_sha(*patch.targets) == patch.sha256, (patch.name, patch.where)
    assert patch.where and patch.why


def test_changed_code_or_another_version_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    stale = dataclasses.replace(patches.PATCHES[0], sha256="0" * 16)
    with pytest.raises(patches.PatchMismatch, match=r"patch 'gloo-process-group'.*changed"):
        patches.check(stale)
    import verl

    monkeypatch.setattr(verl, "__version__", "0.9.2")
    with pytest.raises(patches.PatchMismatch, match=r"written for veRL 0\.9\.1, this is veRL 0\.9\.2"):
        patches.check(patches.PATCHES[0])


def test_the_cpu_platform_patches_veRL_as_its_modules_load_and_nothing_without_it() -> None:
    """In fresh processes, as in a Ray worker: with ``VERL_PLATFORM=cpu`` + ``VERL_USE_EXTERNAL_MODULES``
    every patch lands as veRL imports its module; without the platform, nothing is patched."""
    code = textwrap.dedent(
        """
        import os, sys
        import verl  # imports verl_cpu (VERL_USE_EXTERNAL_MODULES), which hooks the patches
        import verl_cpu, verl_cpu.patches as p
        import verl.workers.engine_workers as ew
        if os.environ.get("VERL_PLATFORM") != "cpu":
            print(p.applied()); sys.exit()
        from verl.utils.device import get_device_name
        from verl.workers.rollout.base import get_rollout_class
        from verl.workers.rollout.replica import RolloutReplicaRegistry
        from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer
        print(get_device_name(), get_rollout_class("cpu").__name__, RolloutReplicaRegistry.get("cpu").__name__)
        print(hasattr(ew.initialize_global_process_group_ray, "__wrapped__"), sorted(p.applied()))
        print(ReplayBuffer("sync", {}, None, "drop", {}, refill_fn=None).poll_interval)
        """
    )
    cpu = {"VERL_PLATFORM": "cpu", "VERL_USE_EXTERNAL_MODULES": "verl_cpu", "VERL_ENGINE_DEVICE": "cuda"}
    for env, want in ((cpu, "patched"), ({}, "untouched")):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**_env(), **env}, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
        lines = out.stdout.strip().splitlines()
        if want == "untouched":
            assert lines[-1] == "[]"
            continue
        assert lines[0] == "cpu CPUServerAdapter CPUReplica"
        assert lines[1].startswith("True") and all(q.name in lines[1] for q in patches.PATCHES[:4])
        assert float(lines[2]) == patches.POLL_S


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("VERL_")}
