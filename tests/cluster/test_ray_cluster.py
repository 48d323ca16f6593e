"""veRL's trainer across the two nodes of a real Ray cluster on this machine, through ``RAY_ADDRESS``.

The module starts one two-node Ray cluster (:class:`core.clusters.ray_local.RayLocalCluster`: a
head and a worker node, each declaring the logical GPU and CPUs of
``recipes.cluster.ray_check.node_start_args``), then, as a user types it
(``RAY_ADDRESS=<head> python -m recipes.run recipe=grpo engine=verl trainer.nnodes=...``):

- a config asking for 3 nodes is refused before it starts: one ``error:`` line, exit 2, no run
  folder, no actor on the cluster;
- grpo with ``trainer.nnodes=2`` trains 2 steps: finite metrics for each step, once; Ray's own
  records (``ray.util.state.list_actors``, the head's dashboard) show the two FSDP ranks
  (``WorkerDict``) and the two rollout replicas on the two nodes, one ``TaskRunnerV1`` and one job:
  one training, not two; each rank wrote its checkpoint shard;
- the cluster stops, and no process it started is left (checked by pid and by its mark).

The cluster starts and stops through its CLI (``python -m core.clusters.ray_local start|status|stop``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from omegaconf import OmegaConf

from core.clusters.ray_local import RayLocalCluster, load, marked
from recipes.cluster.ray_check import node_start_args

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

#: A run of seconds (as tests/verl_cpu/test_main_ppo.py): tiny task files, short responses.
SMALL = [
    "recipe=grpo",
    "trainer.total_training_steps=2",
    "trainer.test_freq=2",
    "trainer.save_freq=2",
    "++local.task.train_n=64",
    "++local.task.val_n=16",
    "local.eval_samples=8",
    "data.max_response_length=12",
]


def ray_local(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core.clusters.ray_local", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory) -> Path:  # noqa: ANN001 - pytest fixture
    return tmp_path_factory.mktemp("ray-local")


@pytest.fixture(scope="module")
def cluster(state_dir: Path):  # noqa: ANN201 - pytest fixture
    """The two-node cluster, started and stopped through the CLI (``python -m core.clusters.ray_local``),
    each node with the flags of ``node_start_args(1, cpu=True)``; stopped also when a test fails."""
    flags = dict(a.lstrip("-").split("=") for a in node_start_args(1, cpu=True))
    p = ray_local(
        "start",
        "--dir",
        str(state_dir),
        "--nodes",
        "2",
        "--num-cpus",
        flags["num-cpus"],
        "--num-gpus",
        flags["num-gpus"],
    )
    assert p.returncode == 0, p.stderr[-3000:]
    try:
        yield load(state_dir)
    finally:
        if (state_dir / "state.json").exists():
            ray_local("stop", "--dir", str(state_dir))


def run_on(cluster: RayLocalCluster, args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RLVR_CACHE": str(cache), "RAY_ADDRESS": str(cluster.address)}
    env.pop("VERL_PLATFORM", None)
    return subprocess.run(
        [sys.executable, "-m", "recipes.run", "engine=verl", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def actors(cluster: RayLocalCluster) -> list:
    from ray.util.state import list_actors  # Ray's state API, served by the head's dashboard

    return list_actors(
        address=cluster.dashboard_url, detail=True, limit=10_000, raise_on_missing_output=False
    )


def test_three_nodes_on_a_two_node_cluster_are_refused_before_anything_starts(
    cluster: RayLocalCluster, model: Path, cache: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    # rollout.n=6: the batch splits over 3 ranks, so the config itself is valid
    p = run_on(
        cluster,
        [
            *SMALL,
            f"actor_rollout_ref.model.path={model}",
            f"run_dir={run_dir}",
            "trainer.nnodes=3",
            "actor_rollout_ref.rollout.n=6",
        ],
        cache,
    )
    assert p.returncode == 2, p.stderr[-3000:]
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, p.stderr[-3000:]
    assert errors[0].startswith(
        f"error: [trainer.nnodes] the Ray cluster at {cluster.address} has 2 alive nodes"
    )
    assert "trainer.nnodes=3 asks for 3" in errors[0] and "set trainer.nnodes=2" in errors[0]
    assert not run_dir.exists()
    assert actors(cluster) == []  # nothing of the run reached the cluster


def test_grpo_trains_once_across_both_nodes(
    cluster: RayLocalCluster, model: Path, cache: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    p = run_on(
        cluster,
        [*SMALL, f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}", "trainer.nnodes=2"],
        cache,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    verl = OmegaConf.load(run_dir / "verl_config.yaml")
    assert (verl.trainer.nnodes, verl.trainer.n_gpus_per_node) == (2, 1)
    assert (
        verl.ray_kwargs.ray_init.get("num_cpus") is None and verl.ray_kwargs.ray_init.get("num_gpus") is None
    )

    # one training: one trainer invocation, each step logged once, every metric finite
    rows = [
        json.loads(line)
        for f in sorted((run_dir / "metrics.d").iterdir())
        for line in f.read_text().splitlines()
    ]
    assert len(list((run_dir / "metrics.d").iterdir())) == 1
    train = [r for r in rows if "actor/pg_loss" in r["data"]]
    assert [r["step"] for r in train] == [1, 2]
    for r in train:
        for k in ("actor/pg_loss", "actor/grad_norm", "actor/kl_loss", "critic/score/mean", "timing_s/step"):
            assert isinstance(r["data"].get(k), (int, float)) and math.isfinite(r["data"][k]), (k, r["data"])
        assert r["data"]["training/rollout_probs_diff_max"] < 1e-3  # the weights reached both replicas
    shards = sorted(
        f.name for f in (run_dir / "checkpoints" / "global_step_2" / "actor").glob("model_world_size_2_*")
    )
    assert shards == ["model_world_size_2_rank_0.pt", "model_world_size_2_rank_1.pt"]

    # Ray's records: the ranks and the replicas on both nodes, one task runner, one job
    seen = actors(cluster)
    nodes = {a.node_id for a in seen}
    by_class: dict[str, list] = {}
    for a in seen:
        by_class.setdefault(a.class_name.rsplit(".", 1)[-1], []).append(a)
    ranks, servers = by_class["WorkerDict"], by_class["CPURolloutServer"]
    assert len(ranks) == 2 and len({a.node_id for a in ranks}) == 2, [(a.class_name, a.node_id) for a in seen]
    assert len(servers) == 2 and {a.node_id for a in servers} == {a.node_id for a in ranks}
    assert len(by_class["TaskRunnerV1"]) == 1 and len({a.job_id for a in seen}) == 1
    assert len(nodes) == 2
    cluster_nodes = {n.node_id for n in _nodes(cluster)}
    assert nodes == cluster_nodes


def _nodes(cluster: RayLocalCluster) -> list:
    from ray.util.state import list_nodes  # as actors()

    return list_nodes(address=cluster.dashboard_url, detail=True)


def test_stopping_the_cluster_leaves_none_of_its_processes(cluster: RayLocalCluster, state_dir: Path) -> None:
    started = [psutil.Process(pid) for pid in cluster.pids]  # identity: pid and start time
    names = {p.name() for p in started}
    assert "gcs_server" in names and sum(p.name() == "raylet" for p in started) == 2, names
    now = marked(cluster.id)  # what runs now, idle workers included
    status = ray_local("status", "--dir", str(state_dir))
    assert status.returncode == 0 and f"RAY_ADDRESS={cluster.address}" in status.stdout
    stop = ray_local("stop", "--dir", str(state_dir))
    assert stop.returncode == 0 and "no process of it is left" in stop.stdout, stop.stderr[-2000:]
    assert not marked(cluster.id)
    assert [p.pid for p in started + now if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
    assert cluster.temp_dir is not None and not cluster.temp_dir.exists()
