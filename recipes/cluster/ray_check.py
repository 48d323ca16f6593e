"""An existing Ray cluster (``RAY_ADDRESS``) against what a veRL run asks of it, before the run starts.

veRL's trainer reserves, for ``trainer.nnodes`` x ``trainer.n_gpus_per_node`` workers, one placement
group per node of bundles ``{"CPU": 3, "GPU": 1}`` (``ResourcePoolManager``, ``max_colocate_count``)
and waits for them without a time limit: a cluster with a node too few hangs the run (veRL issue
#242). :func:`check` reads the cluster's alive nodes and their resources (``ray.nodes()``) and turns
a mismatch into one line (``ValueError``; ``recipes.run`` prints it as ``error:`` and exits 2):

- at least ``trainer.nnodes`` nodes each with ``n_gpus_per_node`` GPUs (logical ones on a CPU) and
  3 CPUs per GPU;
- in all, those GPUs plus a distillation teacher's, and the CPUs of the bundles plus the actors
  veRL schedules beside them (the task runner, TransferQueue's controller and storage units, the
  agent-loop and reward workers: 1 CPU each).

Also :func:`node_start_args` (the resource flags each ``ray start`` of a node passes) and
:func:`wait_for_nodes` / ``python -m recipes.cluster.ray_check wait --address A --nodes N --timeout T``
(exit 0 once N nodes are alive, else one ``error:`` line naming what is missing, exit 2). Not
covered: whether the nodes reach each other (NCCL/gloo ports, a shared filesystem), GPU memory.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

#: CPUs veRL's resource pools reserve with each GPU (``ResourcePoolManager.max_colocate_count``).
CPUS_PER_GPU = 3

#: Logical CPUs a node declares on a machine without a GPU (a one-machine CPU run declares as many,
#: ``recipes.launch_cpu.RAY_CPUS``: with the cores Ray detects the start-up hangs).
CPU_NODE_CPUS = 16

#: Prefix of the custom resource that names a node (``node_start_args(name=...)``).
NODE_TAG = "rlvr_node_"


@dataclass(frozen=True)
class Demand:
    """What a run reserves on a cluster: nodes, per node, and in all."""

    nodes: int
    gpus_per_node: int
    gpus: int
    cpus: int

    @property
    def cpus_per_node(self) -> int:
        return CPUS_PER_GPU * self.gpus_per_node


def _int(cfg: DictConfig, key: str, default: int) -> int:
    value = OmegaConf.select(cfg, key, default=None)
    return default if value is None else int(value)


def demand(cfg: DictConfig) -> Demand:
    """What ``cfg`` reserves on the cluster (see the module docstring)."""
    nodes = max(1, _int(cfg, "trainer.nnodes", 1))
    per_node = max(1, _int(cfg, "trainer.n_gpus_per_node", 1))
    teacher = 0
    if OmegaConf.select(cfg, "distillation.enabled", default=False):
        teacher = max(1, _int(cfg, "distillation.nnodes", 1)) * max(
            1, _int(cfg, "distillation.n_gpus_per_node", 1)
        )
    actors = (
        2  # the task runner and TransferQueue's controller
        + _int(cfg, "transfer_queue.backend.SimpleStorage.num_data_storage_units", 8)
        + _int(cfg, "actor_rollout_ref.rollout.agent.num_workers", 8)
        + _int(cfg, "reward.num_workers", 8)
    )
    gpus = nodes * per_node + teacher
    return Demand(nodes, per_node, gpus, CPUS_PER_GPU * gpus + actors)


def node_start_args(gpus_per_node: int, cpu: bool, name: str | None = None) -> list[str]:
    """The resource flags every ``ray start`` of a node passes. On a CPU: logical ``--num-cpus`` and
    ``--num-gpus`` (veRL's pools always ask for GPUs); on GPU nodes Ray counts both itself. ``name``
    adds a resource naming the node, so :func:`wait_for_nodes` can say which node is missing.

    >>> node_start_args(1, cpu=True)
    ['--num-cpus=16', '--num-gpus=1']
    >>> node_start_args(8, cpu=False, name="n2")
    ['--resources={"rlvr_node_n2": 1}']
    """
    args = [f"--num-cpus={CPU_NODE_CPUS}", f"--num-gpus={max(1, gpus_per_node)}"] if cpu else []
    if name:
        args.append("--resources=" + json.dumps({NODE_TAG + name: 1}))
    return args


def _res(node: dict[str, Any], key: str) -> float:
    return float((node.get("Resources") or {}).get(key, 0))


def describe(node: dict[str, Any]) -> str:
    """One node as ``<id prefix>@<ip> (GPU g, CPU c)``, its name first when it has one."""
    names = [k[len(NODE_TAG) :] for k in node.get("Resources") or {} if k.startswith(NODE_TAG)]
    label = f"{names[0]}=" if names else ""
    return (
        f"{label}{str(node.get('NodeID', '?'))[:8]}@{node.get('NodeManagerAddress', '?')} "
        f"(GPU {_res(node, 'GPU'):g}, CPU {_res(node, 'CPU'):g})"
    )


def problem(nodes: Sequence[dict[str, Any]], want: Demand, address: str) -> str | None:
    """What the alive ``nodes`` (``ray.nodes()`` rows) lack for ``want``, as one line, or None."""
    alive = [n for n in nodes if n.get("Alive", True)]
    seen = "; ".join(describe(n) for n in alive) or "none"
    fit = [n for n in alive if _res(n, "GPU") >= want.gpus_per_node and _res(n, "CPU") >= want.cpus_per_node]
    start = f"`ray start --address={address} " + " ".join(node_start_args(want.gpus_per_node, cpu=True)) + "`"
    if len(fit) < want.nodes:
        return (
            f"[trainer.nnodes] the Ray cluster at {address} has {len(alive)} alive nodes, {len(fit)} of them "
            f"with the {want.gpus_per_node} GPU and {want.cpus_per_node} CPUs a node of this run reserves "
            f"(trainer.n_gpus_per_node={want.gpus_per_node}), but trainer.nnodes={want.nodes} asks for "
            f"{want.nodes} such nodes; nodes seen: {seen} (fix: start {want.nodes - len(fit)} more "
            f"(on a CPU: {start}), or set trainer.nnodes={len(fit)})"
        )
    gpus, cpus = sum(_res(n, "GPU") for n in alive), sum(_res(n, "CPU") for n in alive)
    if gpus < want.gpus or cpus < want.cpus:
        return (
            f"[ray_kwargs] the Ray cluster at {address} has {gpus:g} GPUs and {cpus:g} CPUs in all, this run "
            f"reserves {want.gpus} GPUs and {want.cpus} CPUs (its workers, a distillation teacher, the task "
            f"runner, TransferQueue, the agent-loop and reward workers); nodes seen: {seen} (fix: add nodes, "
            f"or lower trainer.n_gpus_per_node / rollout.agent.num_workers / reward.num_workers)"
        )
    return None


def answers(address: str, timeout_s: float = 5.0) -> str | None:
    """None when something accepts TCP connections at ``host:port``, else why not (``ray.init``
    itself retries an address nobody listens on for minutes)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return f"{address!r} is not host:port"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return None
    except OSError as e:
        return str(e)


def cluster_nodes(address: str) -> list[dict[str, Any]]:
    """The alive nodes of the Ray cluster at ``address`` (``ray.nodes()``), as a short-lived driver.
    A cluster that does not answer is a ``ValueError`` naming ``RAY_ADDRESS``."""
    import ray  # ~1 s: only a run that joins a cluster asks it

    why = answers(address)
    if why is None:
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            why = str(e).splitlines()[0]
    if why is not None:
        raise ValueError(
            f"[RAY_ADDRESS] no Ray cluster answers at {address}: {why} "
            "(fix: start the cluster's head there, or unset RAY_ADDRESS to run on this machine)"
        )
    try:
        return [n for n in ray.nodes() if n.get("Alive")]
    finally:
        ray.shutdown()


def check(cfg: DictConfig, address: str) -> None:
    """Refuse (``ValueError``, one line) a run the cluster at ``address`` cannot hold."""
    err = problem(cluster_nodes(address), demand(cfg), address)
    if err:
        raise ValueError(err)


def wait_for_nodes(address: str, expected: int, timeout_s: float, names: Sequence[str] = ()) -> list[str]:
    """Wait until ``expected`` nodes (and every named one) are alive; return their node ids. After
    ``timeout_s`` a ``TimeoutError`` names the nodes that are missing."""
    import ray  # as above: only a waiting node script asks

    deadline = time.monotonic() + timeout_s
    while (why := answers(address)) is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"no Ray head answers at {address} after {timeout_s:g} s ({why}); no node joined"
            )
        time.sleep(1)
    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        while True:
            alive = [n for n in ray.nodes() if n.get("Alive")]
            have = {
                k[len(NODE_TAG) :] for n in alive for k in n.get("Resources") or {} if k.startswith(NODE_TAG)
            }
            missing = [n for n in names if n not in have]
            if len(alive) >= expected and not missing:
                return [n["NodeID"] for n in alive]
            if time.monotonic() > deadline:
                named = f" (missing: {', '.join(missing)})" if missing else ""
                raise TimeoutError(
                    f"{len(alive)} of {expected} Ray nodes joined {address} within {timeout_s:g} s{named}; "
                    f"joined: {'; '.join(describe(n) for n in alive) or 'none'}"
                )
            time.sleep(1)
    finally:
        ray.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """``wait --address A --nodes N --timeout T [--names n1,n2]``: exit 0 once joined, else 2."""
    p = argparse.ArgumentParser(
        prog="python -m recipes.cluster.ray_check", description=__doc__.splitlines()[0]
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wait", help="wait until N nodes have joined the cluster")
    w.add_argument("--address", required=True)
    w.add_argument("--nodes", type=int, required=True)
    w.add_argument("--timeout", type=float, default=120.0)
    w.add_argument("--names", default="", help="comma-separated node names (node_start_args(name=...))")
    a = p.parse_args(argv)
    names = [n for n in a.names.split(",") if n]
    try:
        ids = wait_for_nodes(a.address, a.nodes, a.timeout, names)
    except TimeoutError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    print(f"{len(ids)} Ray nodes joined {a.address}: {' '.join(i[:8] for i in ids)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
