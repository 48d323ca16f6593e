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
    return SimpleNamespace(getvalue=values.get, option=SimpleNamespace(loadscopereorder=True))


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


def _items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_the_longest_units_are_collected_first_in_a_worker(conftest: ModuleType) -> None:
    """In a worker, the FIRST units lead in their order, the others follow by number of tests, and each
    unit's tests stay together in their order; without workers pytest's order is kept."""
    smoke, serial = conftest.FIRST[1], conftest.SERIAL[0]
    ids = [
        "tests/a.py::t1",
        f"{smoke}::t",
        "tests/b.py::t1",
        "tests/b.py::t2",
        f"{serial}::t1",
        "tests/a.py::t2",
        f"{conftest.SERIAL[1]}::t",
        f"{serial}::t2",
    ]
    got = [i.nodeid for i in conftest.order(_items(*ids))]
    assert got == [
        f"{serial}::t1",  # the serial modules are one unit: together, first, in collection order
        f"{conftest.SERIAL[1]}::t",
        f"{serial}::t2",
        f"{smoke}::t",
        "tests/a.py::t1",  # a and b have two tests each: collection order between them
        "tests/a.py::t2",
        "tests/b.py::t1",
        "tests/b.py::t2",
    ]
    worker, plain = SimpleNamespace(workerinput={}), SimpleNamespace()
    items = _items(*ids)
    conftest.pytest_collection_modifyitems(plain, items)
    assert [i.nodeid for i in items] == ids
    conftest.pytest_collection_modifyitems(worker, items)
    assert [i.nodeid for i in items] == got


def test_the_controller_queues_units_in_the_workers_order(conftest: ModuleType) -> None:
    """xdist's own reordering (most tests first) is switched off for the unit scheduler."""
    config = _config("loadscope")
    conftest.pytest_xdist_make_scheduler(config, None)
    assert config.option.loadscopereorder is False
