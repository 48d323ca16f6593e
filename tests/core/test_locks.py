"""core.locks: one writer per folder, across processes (results folders, run folders)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from core import locks, results

REPO = Path(__file__).resolve().parents[2]


def _holder(folder: Path, ready: Path, seconds: float = 60.0) -> subprocess.Popen:
    """A separate process holding ``folder``'s lock until killed (or ``seconds`` pass)."""
    code = textwrap.dedent(
        f"""
        import pathlib, time
        from core import locks
        with locks.hold({str(folder)!r}, "results folder"):
            pathlib.Path({str(ready)!r}).write_text("held")
            time.sleep({seconds})
        """
    )
    env = {k: v for k, v in os.environ.items() if k != locks.ENV}
    p = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env)
    for _ in range(300):
        if ready.exists():
            return p
        if p.poll() is not None:
            raise AssertionError(f"holder exited early ({p.returncode})")
        time.sleep(0.05)
    p.kill()
    raise AssertionError("holder never took the lock")


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(locks.ENV, raising=False)


def test_second_writer_fails_fast_naming_folder_pid_and_fix(tmp_path, clean_env):
    folder = tmp_path / "results" / "overopt"
    p = _holder(folder, tmp_path / "ready")
    try:
        t0 = time.monotonic()
        with pytest.raises(locks.FolderBusy) as e, locks.hold(folder, "results folder", "use another"):
            pytest.fail("entered a folder another process holds")
        assert time.monotonic() - t0 < 5  # fails at once, does not wait for the holder
        msg = str(e.value)
        assert str(folder.resolve()) in msg and f"pid={p.pid}" in msg and f"kill {p.pid}" in msg
        assert "use another" in msg
    finally:
        p.kill()
        p.wait()
    # the kernel drops the lock with its (killed) holder: no stale lock
    with locks.hold(folder) as held:
        assert held == folder.resolve()
        assert f"pid={os.getpid()}" in locks.holder(folder)
    assert locks.holder(folder) == "unknown"


def test_results_lock_guards_the_experiment_folder(tmp_path, monkeypatch, clean_env):
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    p = _holder(tmp_path / "results" / "exp", tmp_path / "ready")
    try:
        with pytest.raises(locks.FolderBusy, match="RLVR_RESULTS"), results.lock("exp"):
            pass
        with results.lock("other"):  # another experiment's folder is free
            pass
    finally:
        p.kill()
        p.wait()


def test_reentrant_in_process_and_for_children(tmp_path, clean_env):
    folder = tmp_path / "runs"
    with locks.hold(folder):
        with locks.hold(folder):  # nested in the same process
            pass
        assert str(folder.resolve()) in os.environ[locks.ENV]
        child = f"from core import locks\nwith locks.hold({str(folder)!r}):\n    print('ok')"
        out = subprocess.run([sys.executable, "-c", child], cwd=REPO, capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert locks.ENV not in os.environ
    # an unrelated process (no inherited lock) started while the folder is held is refused
    p = _holder(folder, tmp_path / "ready")
    try:
        child = f"from core import locks\nwith locks.hold({str(folder)!r}):\n    pass"
        env = {k: v for k, v in os.environ.items() if k != locks.ENV}
        out = subprocess.run([sys.executable, "-c", child], cwd=REPO, capture_output=True, text=True, env=env)
        assert out.returncode != 0 and "FolderBusy" in out.stderr
    finally:
        p.kill()
        p.wait()


def test_make_results_refuses_an_experiment_already_running(tmp_path, monkeypatch, clean_env, capsys):
    """``make results NAME=x`` while another ``make results NAME=x`` runs: exit 2, nothing started."""
    from omegaconf import OmegaConf

    from experiments import registry as experiments

    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    started = []
    monkeypatch.setattr(experiments.subprocess, "call", lambda argv: started.append(argv) or 0)
    cfg = OmegaConf.create({"list": False, "name": "overopt", "args": []})
    p = _holder(tmp_path / "results" / "overopt", tmp_path / "ready")
    try:
        assert experiments.command(cfg) == 2
        err = capsys.readouterr().err
        assert f"pid={p.pid}" in err and "results" in err and "overopt" in err
        assert started == []
    finally:
        p.kill()
        p.wait()
    assert experiments.command(cfg) == 0 and len(started) == 1  # free again once the holder is gone


def test_local_run_refuses_a_run_folder_in_use(tmp_path, clean_env, capsys):
    """Two local runs into one run_dir: the second stops before writing anything there."""
    from recipes.run import run

    run_dir = tmp_path / "run"
    p = _holder(run_dir, tmp_path / "ready")
    try:
        overrides = ["recipe=grpo", "engine=local", "scale=laptop", f"run_dir={run_dir}"]
        assert run(overrides) == 2
        assert f"pid={p.pid}" in capsys.readouterr().err
        assert sorted(q.name for q in run_dir.iterdir()) == [".lock"]  # no config.yaml, no manifest
    finally:
        p.kill()
        p.wait()
