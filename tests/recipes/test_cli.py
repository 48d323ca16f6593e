"""The entry point end to end, as a user calls it (subprocesses, CPU only).

:func:`test_dry_run_verl_published_scale` runs ``python -m recipes.run`` in a process of its own; the
other command lines run one after another in one shared process (``tests/one_process.py``: each as
``recipes.run``'s ``__main__``, with its own output and exit code), which pays veRL's and Hydra's
imports once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from one_process import run_in_one_process

from docgen.blocks import generate


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recipes.run", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


#: ``python -m recipes.run`` command lines run in the shared process ({tmp}: a folder of their own)
SHARED = {
    "local laptop": ["recipe=dapo", "engine=local", "dry_run=true", "run_dir={tmp}/r"],
    "r1_zero": ["recipe=r1_zero", "engine=verl", "dry_run=true", "run_dir={tmp}/r1"],
    "unknown recipe": ["recipe=dappo"],
    "bad config": [
        "recipe=dapo",
        "engine=verl",
        "dry_run=true",
        "actor_rollout_ref.rollout.temperature=0",
        "run_dir={tmp}/bad",
    ],
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """The :data:`SHARED` command lines run in one process: ``{name: (its result, its folder)}``."""
    tmp = tmp_path_factory.mktemp("cli_shared")
    folders = {name: tmp / f"case{i}" for i, name in enumerate(SHARED)}
    cases = [
        ("recipes.run", [a.replace("{tmp}", str(folders[name])) for a in args], {})
        for name, args in SHARED.items()
    ]
    done = run_in_one_process(cases, tmp / "work", dict(os.environ), timeout=900)
    return {
        name: (subprocess.CompletedProcess(SHARED[name], rc, out, err), folders[name])
        for name, (rc, out, err) in zip(SHARED, done, strict=True)
    }


def test_dry_run_verl_published_scale(tmp_path):
    run_dir = tmp_path / "run"
    p = _run("recipe=dapo", "engine=verl", "dry_run=true", f"run_dir={run_dir}", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    cfg = yaml.safe_load(p.stdout)  # stdout is the resolved veRL config and nothing else
    assert cfg["actor_rollout_ref"]["actor"]["clip_ratio_high"] == 0.28
    assert cfg["data"]["max_response_length"] == 20480
    # sizes written as relations reach veRL as plain numbers (veRL has no rlvr.* resolvers)
    assert (
        cfg["data"]["gen_batch_size"] == 1536
        and cfg["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] == 32
    )
    assert "rlvr." not in (run_dir / "verl_config.yaml").read_text()
    assert yaml.safe_load((run_dir / "verl_config.yaml").read_text())["data"]["gen_batch_size"] == 1536
    assert "rlvr" not in cfg and "engine" not in cfg
    for name in ("config.yaml", "verl_config.yaml", "launch.sh", "run.json"):
        assert (run_dir / name).is_file(), name
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["recipe"] == "dapo" and manifest["engine"] == "verl" and manifest["scale"] is None
    assert "verl" in manifest["versions"] and "torch" in manifest["versions"]
    assert "verl.trainer.main_ppo" in (run_dir / "launch.sh").read_text()
    assert "[scale]" in p.stderr and "published" in p.stderr


def test_local_engine_picks_laptop_and_says_so(shared):
    p, _ = shared["local laptop"]
    assert p.returncode == 0, p.stderr
    assert "using scale=laptop" in p.stderr
    assert "data.max_response_length: 20480 -> " in p.stderr  # every changed key is printed
    assert "actor_rollout_ref.actor.clip_ratio_high" not in p.stderr  # algorithmic keys untouched
    # a key set by an interpolation shows the value the run uses, then the interpolation as written
    lr = next(x for x in p.stderr.splitlines() if "actor_rollout_ref.actor.optim.lr:" in x)
    used = lr.split(" -> ")[1].split()[0]
    assert float(used) > 1e-6 and "(= ${rlvr.sqrt_div:" in lr, lr


def test_r1_zero_ref_reset_segments(shared):
    p, tmp = shared["r1_zero"]
    run_dir = tmp / "r1"
    assert p.returncode == 0, p.stderr
    launch = (run_dir / "launch.sh").read_text()
    assert launch.count("verl.trainer.main_ppo") == 26  # 10,400 steps / 400
    assert launch.count("verl.model_merger merge") == 25
    assert "actor_rollout_ref.model.path=" in launch and "trainer.resume_mode=auto" in launch


def test_unknown_recipe_lists_available(shared):
    p, _ = shared["unknown recipe"]
    assert p.returncode == 2
    assert "unknown recipe 'dappo'" in p.stderr and "dapo" in p.stderr and "grpo" in p.stderr


def test_bad_config_exits_nonzero_naming_key(shared):
    p, tmp = shared["bad config"]
    assert p.returncode == 2
    assert "actor_rollout_ref.rollout.temperature" in p.stderr and "nothing was launched" in p.stderr
    assert not (tmp / "bad" / "launch.sh").exists()


def test_what_veRLs_trainer_cannot_run_on_a_cpu_is_one_error_line_before_ray(tmp_path, capsys):
    """On this CPU machine ``engine=verl`` runs veRL's trainer with the CPU backend; a feature it
    cannot run there, an unknown rollout backend or a model path with no checkpoint stops before
    anything starts (no run folder, no Ray), with one ``error:`` line naming the key."""
    from recipes import run

    cases = {
        # an async mode whose batch arithmetic veRL asserts on (train = parameter_sync_step x mini-batch)
        "trainer.v1.trainer_mode=separate_async": r"\[trainer\.v1\.separate_async\.parameter_sync_step\] "
        r"separate_async needs data\.train_batch_size = .* fix: trainer\.v1\.separate_async\.parameter_sync_step=1",
        "actor_rollout_ref.rollout.name=hf": r"\[actor_rollout_ref\.rollout\.name\] 'hf' is not a rollout backend",
        f"actor_rollout_ref.model.path={tmp_path / 'nowhere'}": r"\[actor_rollout_ref\.model\.path\] .*nowhere is not a checkpoint",
    }
    for override, pattern in cases.items():
        run_dir = tmp_path / "g"
        code = run.single(["recipe=grpo", "engine=verl", override, f"run_dir={run_dir}"])
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1, (override, err[-1500:])
        assert re.search(pattern, errors[0]), (override, errors[0])
        assert not (run_dir / "launch.sh").exists()


def test_readme_table_matches_configs():
    assert generate(check=True, only=["recipes-table"]) == [], "README recipe table is stale: make docs"


def test_a_refusal_raised_mid_run_is_one_error_line(tmp_path, monkeypatch, capsys):
    """An expected error the local engine raises while running (here: dynamic sampling finding no
    varied group) ends ``python -m recipes.run`` with one ``error:`` line and exit 2, not a traceback;
    a bug keeps its traceback."""
    import types

    import pytest

    import recipes.run as entry

    def refuses(cfg, run_dir):
        raise ValueError("[algorithm.filter_groups] only 0 of 16 groups varied (fix: change the data)")

    monkeypatch.setattr(entry, "_local", lambda: types.SimpleNamespace(run_local=refuses))
    argv = ["recipe=dapo", "engine=local", f"run_dir={tmp_path / 'run'}"]
    with pytest.raises(SystemExit) as stop:
        entry.single(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "error: [algorithm.filter_groups] only 0 of 16" in err
    assert "Traceback" not in err

    def crashes(cfg, run_dir):
        raise TypeError("a bug")

    monkeypatch.setattr(entry, "_local", lambda: types.SimpleNamespace(run_local=crashes))
    with pytest.raises(TypeError):
        entry.single(argv)
