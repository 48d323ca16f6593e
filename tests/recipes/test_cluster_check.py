"""The Ray-cluster check's verdicts and the CPU run's cluster changes, without a cluster.

:func:`recipes.cluster.ray_check.problem` judges node rows shaped like ``ray.nodes()``; the real
path (a two-node Ray cluster, a run it holds and one it refuses) is ``tests/cluster/test_ray_cluster.py``.
"""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from recipes import launch_cpu
from recipes.cluster import ray_check
from recipes.cluster.ray_check import Demand, demand, problem


def node(i: int, gpus: float = 1, cpus: float = 16, alive: bool = True, name: str = "") -> dict:
    res = {"GPU": gpus, "CPU": cpus, **({ray_check.NODE_TAG + name: 1} if name else {})}
    return {
        "NodeID": f"{i:02d}" + "ab" * 27,
        "NodeManagerAddress": "10.0.0.1",
        "Alive": alive,
        "Resources": res,
    }


def cfg(**keys: object) -> OmegaConf:
    c = OmegaConf.create({})
    for k, v in {"trainer.nnodes": 2, "trainer.n_gpus_per_node": 1, **keys}.items():
        OmegaConf.update(c, k, v, force_add=True)
    return c


def test_a_cluster_with_the_asked_nodes_passes() -> None:
    want = demand(cfg(**{"transfer_queue.backend.SimpleStorage.num_data_storage_units": 1}))
    assert want == Demand(nodes=2, gpus_per_node=1, gpus=2, cpus=6 + 2 + 1 + 8 + 8)
    assert problem([node(1), node(2)], want, "h:1") is None


def test_three_nodes_asked_of_two_is_one_line_with_both_fixes() -> None:
    err = problem([node(1), node(2)], demand(cfg(**{"trainer.nnodes": 3})), "h:6379")
    assert err is not None and "\n" not in err
    assert err.startswith("[trainer.nnodes] the Ray cluster at h:6379 has 2 alive nodes, 2 of them")
    assert "trainer.nnodes=3 asks for 3" in err and "set trainer.nnodes=2" in err
    assert "start 1 more" in err and "ray start --address=h:6379 --num-cpus=16 --num-gpus=1" in err
    assert "01abab" in err and "(GPU 1, CPU 16)" in err  # the nodes seen, with their resources


def test_dead_and_small_nodes_do_not_count() -> None:
    nodes = [node(1), node(2, alive=False), node(3, gpus=0), node(4, cpus=2)]
    err = problem(nodes, demand(cfg()), "h:1")
    assert err is not None and "has 3 alive nodes, 1 of them with the 1 GPU and 3 CPUs" in err
    assert "set trainer.nnodes=1" in err


def test_too_few_cpus_in_all_names_the_resource_keys() -> None:
    err = problem([node(1, cpus=4), node(2, cpus=4)], demand(cfg()), "h:1")
    assert err is not None and err.startswith("[ray_kwargs]") and "8 CPUs in all" in err
    assert "reserves 2 GPUs and 32 CPUs" in err


def test_a_distillation_teacher_adds_its_gpu() -> None:
    want = demand(cfg(**{"distillation.enabled": True, "distillation.n_gpus_per_node": 1}))
    assert want.gpus == 3
    err = problem([node(1), node(2)], want, "h:1")
    assert err is not None and "2 GPUs and 32 CPUs in all" in err


def test_a_named_node_is_described_by_its_name() -> None:
    assert ray_check.describe(node(1, name="n1")).startswith("n1=01abab")
    assert ray_check.node_start_args(1, cpu=True, name="n1")[-1] == '--resources={"rlvr_node_n1": 1}'


def test_nobody_listening_is_one_line_naming_ray_address() -> None:
    from core.clusters.ray_local import free_port

    with pytest.raises(
        ValueError, match=r"^\[RAY_ADDRESS\] no Ray cluster answers at 127\.0\.0\.1:\d+: .*refused"
    ):
        ray_check.cluster_nodes(f"127.0.0.1:{free_port()}")


def test_the_wait_cli_ends_in_one_error_line(capsys: pytest.CaptureFixture) -> None:
    from core.clusters.ray_local import free_port

    assert (
        ray_check.main(["wait", "--address", f"127.0.0.1:{free_port()}", "--nodes", "2", "--timeout", "0"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no Ray head answers at 127.0.0.1:")


def test_a_cpu_run_with_ray_address_keeps_its_nodes_and_leaves_resources_to_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = cfg(
        **{
            "trainer.n_gpus_per_node": 0,
            "ray_kwargs.ray_init.num_cpus": None,
            "actor_rollout_ref.rollout.name": "vllm",
        }
    )
    monkeypatch.setenv("RAY_ADDRESS", "h:1")
    assert launch_cpu.refusal(c) is None
    changed = {k: (before, after) for k, before, after, _ in launch_cpu.apply(c)}
    assert c.trainer.nnodes == 2 and changed["trainer.n_gpus_per_node"] == (0, 1)
    assert "trainer.nnodes" not in changed
    assert OmegaConf.select(c, "ray_kwargs.ray_init.num_cpus") is None
    assert OmegaConf.select(c, "ray_kwargs.ray_init.num_gpus") is None


def test_a_cpu_run_without_ray_address_refuses_several_nodes_naming_both_fixes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    err = launch_cpu.refusal(cfg(**{"actor_rollout_ref.rollout.name": "vllm"}))
    assert err is not None and err.startswith("[trainer.nnodes] 2 cannot run")
    assert "export RAY_ADDRESS=" in err and "or set trainer.nnodes=1" in err
    one = cfg(**{"trainer.nnodes": 1, "trainer.n_gpus_per_node": 2})
    launch_cpu.apply(one)  # the one-machine path: all processes on this machine, Ray's resources declared
    assert (one.trainer.nnodes, one.trainer.n_gpus_per_node) == (1, 2)
    assert one.ray_kwargs.ray_init.num_cpus == launch_cpu.RAY_CPUS and one.ray_kwargs.ray_init.num_gpus == 2
