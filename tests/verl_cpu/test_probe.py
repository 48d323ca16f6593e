"""The phase timers of :mod:`verl_cpu.probe` and the worker niceness of a CPU run's environment.

The timers run inside veRL's processes in ``tests/verl_cpu/test_main_ppo.py``; here: what a timed
call writes (sync and coroutine), that an exception still writes its row and propagates, that
nothing is wrapped without ``VERL_CPU_PROFILE``, and that a config's own ``RAY_worker_niceness``
is kept while the default puts Ray's workers at the trainer's niceness.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from verl_cpu import probe


def test_a_timed_call_appends_its_phase_row_sync_async_and_on_error(tmp_path: Path) -> None:
    path = str(tmp_path / "p.jsonl")

    def work(x: int) -> int:
        return sum(range(x))

    async def awork(x: int) -> int:
        await asyncio.sleep(0.01)
        return x

    def fails() -> None:
        raise ValueError("boom")

    assert probe.timed(work, "a", path)(10_000) == sum(range(10_000))
    assert asyncio.run(probe.timed(awork, "b", path)(3)) == 3
    with pytest.raises(ValueError, match="boom"):
        probe.timed(fails, "c", path)()
    rows = probe.read(Path(path))
    assert [r["phase"] for r in rows] == ["a", "b", "c"]
    for r in rows:
        assert r["pid"] == os.getpid() and r["role"] == "driver" and r["nice"] == os.nice(0)
        assert r["end"] >= r["start"] and r["cpu_s"] >= 0
    assert rows[1]["end"] - rows[1]["start"] >= 0.01  # the await is inside the timed span


def test_nothing_is_wrapped_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(probe.PROFILE_ENV, raising=False)
    assert probe.install() == []


def test_a_cut_line_of_a_killed_process_is_skipped(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text('{"phase": "a", "start": 1, "end": 2}\n{"phase": "b", "sta')
    assert [r["phase"] for r in probe.read(f)] == ["a"]


def test_rays_workers_run_at_the_trainers_niceness_unless_the_config_says_otherwise() -> None:
    from recipes.launch_cpu import NICENESS_ENV, env

    assert env(OmegaConf.create({"local": {"threads": 1}}))[NICENESS_ENV] == "0"
    given = {
        "local": {"threads": 1},
        "ray_kwargs": {"ray_init": {"runtime_env": {"env_vars": {NICENESS_ENV: 15}}}},
    }
    assert env(OmegaConf.create(given))[NICENESS_ENV] == "15"
