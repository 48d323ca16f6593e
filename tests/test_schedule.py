"""tests/conftest.py's scheduling of ``make test``: a module's tests run in one worker, the serial
modules together, under ``--dist loadscope``; other modes keep pytest-xdist's own scheduler."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from xdist.scheduler import LoadScopeScheduling


@pytest.fixture
def conftest(pytestconfig: pytest.Config) -> ModuleType:
    """tests/conftest.py as pytest loaded it (a plugin registered under its path)."""
    mod = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py").resolve()))
    assert mod is not None, "tests/conftest.py is not a registered plugin"
    return mod


def test_units(conftest: ModuleType) -> None:
    assert conftest.unit_of("tests/local/test_run.py::test_smoke_grpo") == "tests/local/test_run.py"
    assert conftest.unit_of("core/data.py::core.data.chat_ids") == "core/data.py"  # a doctest
    assert {conftest.unit_of(f"{m}::test_x[a::b]") for m in conftest.SERIAL} == {"repository-commands"}


def _config(dist: str) -> SimpleNamespace:
    values = {"dist": dist, "tx": ["2*popen"]}
    return SimpleNamespace(getvalue=values.get)


@pytest.mark.parametrize("dist", ["loadgroup", "load", "no"])
def test_other_modes_keep_xdists_scheduler(conftest: ModuleType, dist: str) -> None:
    assert conftest.pytest_xdist_make_scheduler(_config(dist), None) is None


def test_loadscope_schedules_units(conftest: ModuleType) -> None:
    """The scheduler is xdist's loadscope one, scoped by unit: a module's tests share a scope."""
    sched = conftest.pytest_xdist_make_scheduler(_config("loadscope"), None)
    assert isinstance(sched, LoadScopeScheduling) and sched.numnodes == 2
    ids = ["tests/local/test_run.py::test_smoke_grpo", "tests/local/test_run.py::test_resume[x]"]
    assert {sched._split_scope(i) for i in ids} == {"tests/local/test_run.py"}
    assert sched._split_scope(f"{conftest.SERIAL[0]}::t") == sched._split_scope(f"{conftest.SERIAL[1]}::t")
