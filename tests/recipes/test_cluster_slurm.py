"""The Slurm job script and its checks, without a cluster (``recipes.cluster.slurm``): what the job
asks of Slurm and of Ray on CPU and on GPU nodes (the GPU path is only written and checked here,
never executed), the configs refused before submission, and the node keeper that owns a node's Ray
processes. The real cluster runs are in tests/cluster (``make test-cluster``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from recipes.cluster import slurm

ROOT = Path(__file__).resolve().parents[2]


def composed(hydra_ctx, *overrides: str):  # noqa: ANN001, ANN201
    from recipes.run import prepare_config

    cfg, engine, _, used = prepare_config(
        ["recipe=grpo", "engine=verl", "cluster=slurm", *overrides], changes=False
    )
    return cfg, engine, used


def test_a_cpu_job_starts_ray_on_every_node_and_runs_the_run_once_on_the_head(
    hydra_ctx, tmp_path: Path
) -> None:
    cfg, _, used = composed(hydra_ctx, "trainer.nnodes=2", "scale=laptop", "cluster.partition=cpu")
    text = slurm.job_script(slurm.job(cfg), tmp_path, slurm.head_command(used, tmp_path), ROOT)
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --partition=cpu"):
        assert line in text.splitlines(), line
    assert "--gpus-per-node" not in text
    assert "START_ARGS=(--num-cpus=16 --num-gpus=1)" in text  # logical resources on CPU nodes
    assert text.count("ray.scripts.scripts start") == 1 and '--head --node-ip-address="$HEAD_IP"' in text
    assert 'srun --nodes=1 --ntasks=1 -w "$node"' in text
    assert 'ray_check wait --address "$RAY_ADDRESS" --nodes ${#NODES[@]}' in text
    head = [ln for ln in text.splitlines() if " -m recipes.run " in ln]
    assert len(head) == 1 and head[0].endswith("&")  # the run, once
    assert (
        "cluster=" not in head[0]
        and f"run_dir={tmp_path.resolve()}" in head[0]
        and "trainer.nnodes=2" in head[0]
    )
    assert "trap cleanup EXIT" in text and '--temp-dir="$TMP-$NODE"' in text


def test_a_gpu_job_asks_slurm_for_the_gpus_and_ray_declares_slurms(hydra_ctx, tmp_path: Path) -> None:
    cfg, _, used = composed(
        hydra_ctx, "scale=gpu_node", "trainer.nnodes=4", "cluster.gpus_per_node=8",
        "trainer.n_gpus_per_node=8", "cluster.cpus_per_node=64", "cluster.time=2-00:00:00",
    )  # fmt: skip
    text = slurm.job_script(slurm.job(cfg), tmp_path, slurm.head_command(used, tmp_path), ROOT)
    assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
    lines = text.splitlines()
    for line in (
        "#SBATCH --nodes=4",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --cpus-per-task=64",
        "#SBATCH --time=2-00:00:00",
    ):
        assert line in lines, line
    assert 'START_ARGS=(--num-gpus="${SLURM_GPUS_ON_NODE:-8}" --num-cpus="$SLURM_CPUS_PER_TASK")' in text
    assert "scale=gpu_node" in next(ln for ln in lines if " -m recipes.run " in ln)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["trainer.nnodes=2", "cluster.nodes=3"], "[trainer.nnodes] 2"),
        (["cluster.gpus_per_node=8", "trainer.n_gpus_per_node=4"], "[trainer.n_gpus_per_node] 4"),
        (["cluster.nodes=0"], "[cluster.nodes] 0"),
    ],
)
def test_a_job_that_disagrees_with_the_config_is_refused_by_key(
    hydra_ctx, overrides: list[str], key: str
) -> None:
    from recipes.run import check

    cfg, engine, used = composed(hydra_ctx, "scale=laptop", *overrides)
    assert slurm.refusal(cfg).startswith(key)
    with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
        check(cfg, engine, used, used)


def test_dry_run_prints_the_job_script_and_submits_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    p = subprocess.run(
        [sys.executable, "-m", "recipes.run", "recipe=grpo", "engine=verl", "cluster=slurm", "scale=gpu_node",
         "trainer.nnodes=2", "cluster.gpus_per_node=8", "trainer.n_gpus_per_node=8", "preflight=false",
         f"run_dir={run}", "dry_run=true"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout == (run / "slurm.sbatch").read_text() and p.stdout.startswith("#!/usr/bin/env bash")
    assert "#SBATCH --gpus-per-node=8" in p.stdout and "nothing was submitted" in p.stderr


def test_the_local_engine_is_not_submitted(hydra_ctx) -> None:
    from recipes.run import _cluster_check, prepare_config

    cfg, engine, _, _ = prepare_config(["recipe=grpo", "engine=local", "cluster=slurm"], changes=False)
    with pytest.raises(
        ValueError, match=r"^\[cluster\] cluster=slurm submits veRL's trainer, not engine=local"
    ):
        _cluster_check(cfg, engine)


def test_the_node_keeper_stops_what_its_command_left_even_orphans(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # the command starts an orphan (its parent exits at once), then blocks like `ray start --block`
    script = f"(sleep 300 & echo $! > {pids}) ; sleep 300"
    keeper = subprocess.Popen(
        [sys.executable, "-m", "recipes.cluster.slurm", "node", "--", "bash", "-c", script]
    )
    end = time.monotonic() + 30
    while not (pids.is_file() and pids.read_text().strip()) and time.monotonic() < end:
        time.sleep(0.2)
    orphan = psutil.Process(int(pids.read_text()))
    assert orphan.ppid() == keeper.pid  # a child subreaper: the orphan stays in the keeper's tree
    keeper.send_signal(signal.SIGTERM)
    assert keeper.wait(timeout=30) == 143
    assert not orphan.is_running() or orphan.status() == psutil.STATUS_ZOMBIE
