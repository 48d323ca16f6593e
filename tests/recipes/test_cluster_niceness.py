"""Ray's workers on the cluster nodes the project starts run at the niceness of a one-machine CPU run
(``recipes.launch_cpu.NICENESS_ENV`` = ``WORKER_NICENESS``; Ray's default, +15, starves them beside
any competing process): the local Ray cluster's node environment and the Slurm job script's
``ray start`` on CPU nodes. Fast: nothing starts (the real runs are in tests/cluster)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.clusters import ray_local
from recipes.cluster import slurm
from recipes.launch_cpu import NICENESS_ENV, WORKER_NICENESS

ROOT = Path(__file__).resolve().parents[2]


def _script(gpus_per_node: int, tmp_path: Path) -> str:
    j = slurm.Job(nodes=2, gpus_per_node=gpus_per_node)
    return slurm.job_script(j, tmp_path, ["true"], ROOT)


def _niceness_seen_by_ray_start(script: str, env: dict[str, str]) -> str:
    """The value a node's ``ray start`` inherits: the script's lines that set the variable, which
    come before the first ``ray start``, run in bash, then the variable as a child process sees it."""
    lines = script.splitlines()
    first_start = next(i for i, ln in enumerate(lines) if "ray.scripts.scripts start" in ln)
    sets = [ln for ln in lines[:first_start] if NICENESS_ENV in ln and not ln.lstrip().startswith("#")]
    done = subprocess.run(
        ["bash", "-c", "\n".join([*sets, f"bash -c 'echo \"${{{NICENESS_ENV}-unset}}\"'"])],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_local_ray_clusters_nodes_start_their_workers_at_the_cpu_runs_niceness() -> None:
    # core cannot import recipes: the local cluster keeps its own copy of the setting, equal to the CPU run's
    assert (
        (ray_local.NICENESS_ENV, ray_local.WORKER_NICENESS)
        == (NICENESS_ENV, WORKER_NICENESS)
        == (
            "RAY_worker_niceness",
            0,
        )
    )
    env = ray_local.RayLocalCluster(2).node_env()
    assert env[NICENESS_ENV] == "0"
    assert env[ray_local.MARK] and env["RAY_AUTH_MODE"] == "disabled" and "RAY_ADDRESS" not in env


def test_a_niceness_the_user_set_is_kept_on_the_local_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NICENESS_ENV, "7")
    assert ray_local.RayLocalCluster(2).node_env()[NICENESS_ENV] == "7"


def test_the_slurm_jobs_cpu_nodes_start_ray_with_the_cpu_runs_niceness(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != NICENESS_ENV}
    script = _script(0, tmp_path)
    assert f"export {NICENESS_ENV}=" in script
    assert _niceness_seen_by_ray_start(script, env) == str(WORKER_NICENESS)
    # a value the submitting environment sets (sbatch exports it to the job) is kept
    assert _niceness_seen_by_ray_start(script, {**env, NICENESS_ENV: "5"}) == "5"


def test_the_slurm_jobs_gpu_nodes_keep_rays_own_niceness(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != NICENESS_ENV}
    script = _script(8, tmp_path)
    assert NICENESS_ENV not in script
    assert _niceness_seen_by_ray_start(script, env) == "unset"
