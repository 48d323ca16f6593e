"""A newcomer's mistakes, run as commands: one ``error:`` line naming the typed key or path and the
fix, exit code 2, no traceback, and nothing written (issue 29).

Each case runs ``python -m <command> ...`` from the repository root with an empty ``RLVR_CACHE``,
then compares listings of the repository's output folders, the cache and the fixtures' folder before
and after. Every case fails while composing or validating, so none trains. The first rows are the
issue's own mistakes; the rest are others of the same kinds (other keys, other sections, other
sweeps, other paths). The first case of each command runs in a process of its own; the others run
one after another in one shared process (``tests/one_process.py``: each as its module's
``__main__``, with its own output and exit code), which pays veRL's and Hydra's imports once; a
sweep arm's multirun dry run (no mistake, :func:`test_sweep_arm_names_its_recipe`) runs last there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from one_process import run_in_one_process

from analysis.synthetic import write_run
from data_pipelines.io import write_rows
from data_pipelines.tasks import TASKS

REPO = Path(__file__).resolve().parents[2]
#: The repository's output folders a command could create or fill (plus the top level itself).
OUTPUTS = ("runs", "multirun", "outputs", "reports", "report", "data", "wandb")

# (id, command, arguments ({tmp}: the fixtures' folder), what the error line must contain, extra env)
CASES: list[tuple[str, str, list[str], list[str], dict[str, str]]] = [
    # the mistakes
    (
        "typo in an actor key",
        "recipes.run",
        ["recipe=grpo", "actor_rollout_ref.actor.clip_ratio_hgh=0.3"],
        ["[actor_rollout_ref.actor.clip_ratio_hgh]", "did you mean actor_rollout_ref.actor.clip_ratio_high"],
        {},
    ),
    (
        "typo in an actor key added with +",
        "recipes.run",
        ["recipe=grpo", "+actor_rollout_ref.actor.clip_ratio_hgh=0.3"],
        ["[actor_rollout_ref.actor.clip_ratio_hgh]", "did you mean actor_rollout_ref.actor.clip_ratio_high"],
        {},
    ),
    (
        "string for the batch size",
        "recipes.run",
        ["recipe=grpo", "data.train_batch_size=abc"],
        ["error: invalid config: [data.train_batch_size]", "fix: data.train_batch_size=<int>"],
        {},
    ),
    (
        "sweep value that is no option",
        "recipes.sweep",
        ["sweep=kl_coef", "kl=none,k3_bogus", "plan=true"],
        ["kl=k3_bogus", "unknown kl 'k3_bogus'", "available:"],
        {},
    ),
    (
        "W&B report without a key",
        "analysis.report",
        ["runs=[{tmp}/run_a,{tmp}/run_b]", "out={tmp}/report_out"],
        ["WANDB_API_KEY", "fix:"],
        {"PUBLISH": "wandb"},
    ),
    # other mistakes of the same kinds
    (
        "typo in a trainer key",
        "recipes.run",
        ["recipe=dapo", "trainer.totl_training_steps=5"],
        ["[trainer.totl_training_steps]", "did you mean trainer.total_training_steps", "fix:"],
        {},
    ),
    (
        "typo in an algorithm key added with +",
        "recipes.run",
        ["recipe=drgrpo", "+algorithm.gama=1.0"],
        ["[algorithm.gama]", "did you mean algorithm.gamma", "fix: algorithm.gamma=1.0"],
        {},
    ),
    (
        "typo in a project key",
        "recipes.run",
        ["recipe=grpo", "rlvr.sed=1"],
        ["[rlvr.sed]", "did you mean rlvr.seed"],
        {},
    ),
    (
        "string for the temperature",
        "recipes.run",
        ["recipe=dapo", "actor_rollout_ref.rollout.temperature=hot"],
        ["[actor_rollout_ref.rollout.temperature]", "expected float"],
        {},
    ),
    (
        "advantage option that does not exist",
        "recipes.run",
        ["recipe=grpo", "adv=grpoo"],
        ["unknown adv 'grpoo'", "available:"],
        {},
    ),
    (
        "another sweep's value that is no option",
        "recipes.sweep",
        ["sweep=loss_norm", "agg=seq_mean_tokn_mean,token_mean", "rlvr.seed=0", "plan=true"],
        ["agg=seq_mean_tokn_mean", "unknown agg 'seq_mean_tokn_mean'", "did you mean seq_mean_token_mean"],
        {},
    ),
    (
        "report of a run folder that does not exist",
        "analysis.report",
        ["runs=[{tmp}/no_such_run]"],
        ["[runs]", "{tmp}/no_such_run", "fix:"],
        {},
    ),
    (
        "typo in a report key",
        "analysis.report",
        ["runs=[{tmp}/run_a,{tmp}/run_b]", "baselin=x"],
        ["[baselin]", "did you mean baseline"],
        {},
    ),
    (
        "evaluation of a model that does not exist",
        "analysis.evaluate",
        ["model={tmp}/no_such_model", "data={tmp}/test.parquet", "out={tmp}/eval_out"],
        ["{tmp}/no_such_model"],
        {},
    ),
    (
        "distillation teacher that does not exist",
        "recipes.run",
        ["recipe=opd", "distillation.teacher_models.teacher_model.model_path={tmp}/no_such_teacher"],
        ["[distillation.teacher_models.teacher_model.model_path]", "{tmp}/no_such_teacher", "Fix:"],
        {},
    ),
    (
        "diagnosis of a run that does not exist",
        "analysis.diagnose",
        ["run={tmp}/no_such_run"],
        ["{tmp}/no_such_run"],
        {},
    ),
    (
        "dataset that does not exist",
        "data_pipelines.make_data",
        ["data=arithmetc", "out={tmp}/data_out"],
        ["'arithmetc'", "arithmetic"],
        {},
    ),
]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic run folders and a small test parquet."""
    tmp = tmp_path_factory.mktemp("user_errors")
    write_run(tmp / "run_a", seed=0, steps=5)
    write_run(tmp / "run_b", seed=1, steps=5)
    write_rows(TASKS.get("arithmetic")(n=3, seed=0, split="test"), tmp / "test.parquet")
    return tmp


def _listing(*roots: Path) -> set[str]:
    out: set[str] = set()
    for root in roots:
        if root.is_dir():
            out |= {str(p) for p in root.rglob("*") if "__pycache__" not in p.parts}
    return out


def _library_caches(cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The libraries' cache folders the commands point into the run cache (matplotlib's, torch's...),
    by variable: a library's cache is not a file the user's command wrote."""
    try:
        from core.env import cache_env
    except ImportError:  # no library caches are moved into the run cache
        return {}
    monkeypatch.setenv("RLVR_CACHE", str(cache))
    return cache_env()


def _snapshot(cache: Path, tmp: Path, skip: list[Path] = ()) -> set[str]:
    top = {str(p) for p in REPO.iterdir()}
    found = top | _listing(*(REPO / d for d in OUTPUTS), cache, tmp)
    return {
        p
        for p in found
        if not any(Path(p) == c or c in Path(p).parents or Path(p) in c.parents for c in skip)
    }


#: the first case of each command, each run in a process of its own
OWN = [c for i, c in enumerate(CASES) if c[1] not in {d[1] for d in CASES[:i]}]
#: the other cases, run in one shared process
SHARED = [c for c in CASES if c not in OWN]


def _environ(cache: Path, libraries: dict[str, str]) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "PUBLISH", *libraries)}
    environ.update(RLVR_CACHE=str(cache), HYDRA_FULL_ERROR="0")
    return environ


def _check(name: str, needles: list[str], fixtures: Path, returncode: int, stdout: str, stderr: str) -> None:
    """No traceback, exit code 2, one ``error:`` line holding every needle."""
    output = stdout + stderr
    assert "Traceback" not in output, f"{name}: a traceback:\n{output}"
    assert returncode == 2, f"{name}: exit code {returncode}:\n{output}"
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, f"{name}: {len(errors)} error lines:\n{stderr}"
    for needle in needles:
        assert needle.replace("{tmp}", str(fixtures)) in errors[0], f"{name}: no {needle!r} in {errors[0]!r}"


@pytest.mark.parametrize("name,module,args,needles,env", OWN, ids=[c[0] for c in OWN])
def test_mistake_is_one_line_naming_the_key(
    fixtures: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    module: str,
    args: list[str],
    needles: list[str],
    env: dict,
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    libraries = _library_caches(cache, monkeypatch)
    skip = [Path(v) for v in libraries.values()]
    argv = [a.replace("{tmp}", str(fixtures)) for a in args]
    before = _snapshot(cache, fixtures, skip)
    proc = subprocess.run(
        [sys.executable, "-m", module, *argv],
        cwd=REPO,
        env={**_environ(cache, libraries), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    _check(name, needles, fixtures, proc.returncode, proc.stdout, proc.stderr)
    assert _snapshot(cache, fixtures, skip) == before, (
        f"{name}: something was written:\n{proc.stdout}{proc.stderr}"
    )


@pytest.fixture(scope="module")
def shared(fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The :data:`SHARED` cases run in one process: ``{name: (exit code, stdout, stderr)}``, and the
    listings before and after them all."""
    tmp = tmp_path_factory.mktemp("shared")
    cache = tmp / "cache"
    cache.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        libraries = _library_caches(cache, mp)
    skip = [Path(v) for v in libraries.values()]
    cases = [(m, [a.replace("{tmp}", str(fixtures)) for a in args], env) for _, m, args, _, env in SHARED]
    # last, no mistake: a sweep's arm as a dry run of the multirun (test_sweep_arm_names_its_recipe),
    # into a sweep folder of its own outside the folders compared
    cases.append(("recipes.run", [*ARM, f"hydra.sweep.dir={tmp / 'mr'}"], {}))
    before = _snapshot(cache, fixtures, skip)
    done = run_in_one_process(cases, tmp / "work", _environ(cache, libraries), timeout=1800)
    after = _snapshot(cache, fixtures, skip)
    runs = dict(zip([c[0] for c in SHARED], done[:-1], strict=True))
    return {"runs": runs, "arm": done[-1], "before": before, "after": after}


@pytest.mark.parametrize("name,module,args,needles,env", SHARED, ids=[c[0] for c in SHARED])
def test_mistake_in_a_shared_process_is_one_line_naming_the_key(
    fixtures: Path, shared: dict, name: str, module: str, args: list[str], needles: list[str], env: dict
) -> None:
    _check(name, needles, fixtures, *shared["runs"][name])


def test_the_mistakes_in_a_shared_process_write_nothing(shared: dict) -> None:
    assert SHARED and {c[1] for c in SHARED} <= {c[1] for c in OWN}, "each command also runs on its own"
    written = sorted(shared["after"] ^ shared["before"])
    assert not written, f"something was written: {written[:10]}"


def test_plus_is_never_suggested_where_verl_refuses_it() -> None:
    """A typo in a section veRL instantiates gets did-you-mean without ``+``; a free section may."""
    from recipes.compose import compose

    with pytest.raises(ValueError) as actor:
        compose(["recipe=grpo", "actor_rollout_ref.actor.no_such_knob=1"])
    assert "+actor_rollout_ref" not in str(actor.value)
    with pytest.raises(ValueError) as data:
        compose(["recipe=grpo", "data.no_such_knob=1"])
    assert "+data.no_such_knob=1" in str(data.value)


def test_failed_sweep_says_what_failed_and_resumes_only_finished_work(tmp_path: Path) -> None:
    from recipes.sweep import failure

    out = tmp_path / "kl_coef-20260101-000000"
    (out / "0").mkdir(parents=True)
    (out / "0" / "error.txt").write_text("[engine] no GPU\narm: rlvr.seed=0 kl=none\n")
    none_done = failure("kl_coef", out, 2, 1)
    assert "job 0 (rlvr.seed=0 kl=none) failed: [engine] no GPU" in none_done
    assert "No run finished" in none_done and "resume=" not in none_done
    assert "finished arms are in" not in none_done
    (out / "1").mkdir()
    (out / "1" / "summary.json").write_text("{}")
    some_done = failure("kl_coef", out, 2, 1)
    assert "1 of 2 runs finished" in some_done and f"resume={out}" in some_done


def test_sweep_hands_launcher_keys_to_the_runs() -> None:
    """``hydra.launcher.n_jobs=4`` (documented in conf/hydra/launcher/local_parallel.yaml) is the runs'."""
    from core.cli import route_extra

    routed = route_extra("command", "sweep", argv=["sweep=kl_coef", "hydra.launcher.n_jobs=4", "plan=true"])
    assert routed == ["sweep=kl_coef", "plan=true", "overrides=['hydra.launcher.n_jobs=4']"]
    from recipes.sweep import sweep_params

    assert sweep_params("kl_coef", ["hydra.launcher.n_jobs=4"])["kl"] == ["none", "k3_0.01", "k3_0.05"]


#: ``python -m recipes.run`` arguments of one arm of a sweep as a multirun dry run
ARM = ["-m", "sweep=kl_coef", "rlvr.seed=0", "kl=none", "dry_run=true"]


def test_sweep_arm_names_its_recipe(shared: dict) -> None:
    """An arm of a sweep (its file picks the recipe) does not say it composes the bare defaults (run
    last in the shared process)."""
    returncode, _, stderr = shared["arm"]
    assert returncode == 0, stderr
    assert "no recipe=" not in stderr
    assert "[recipe] r1_zero" in stderr
