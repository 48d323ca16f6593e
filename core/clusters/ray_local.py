"""A multi-node Ray cluster on this machine, started and stopped by the project (tests, rehearsals).

:class:`RayLocalCluster` runs ``ray start --head`` and ``nodes - 1`` × ``ray start --address=<head>``
from this interpreter's Ray, each node with the resource flags it is given (on a CPU,
``recipes.cluster.ray_check.node_start_args``: logical GPUs and CPUs), all in one temp dir of its
own, on ports picked free (GCS, node managers, object managers, dashboard and its agents, metrics,
runtime-env agents, Ray client; workers on random ports), so it clashes with no other Ray on the
machine. Every process a node starts (GCS, raylet, dashboard, workers) inherits :data:`MARK` in its
environment; :meth:`RayLocalCluster.stop` ends exactly those (SIGTERM, then SIGKILL:
:func:`core.procs.terminate`), checks by pid that none is left and removes the temp dir. Never
``ray stop``: it stops every Ray on the machine. Each node's raylet starts its workers at niceness
0 (:data:`WORKER_NICENESS`), as a one-machine CPU run's do.

Use it as a context manager, or from the shell (its state, pids and address, in ``<dir>/state.json``)::

    python -m core.clusters.ray_local start --dir D --nodes 2 --num-cpus 16 --num-gpus 1
    python -m core.clusters.ray_local status --dir D
    python -m core.clusters.ray_local stop --dir D

Not covered: nodes on other machines, distinct IP addresses (all nodes share this host's), GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import psutil

from core.procs import terminate

#: Environment variable that marks every process of one local cluster: its id.
MARK = "RLVR_RAY_CLUSTER"

#: Seconds the nodes get to start before it is an error.
START_TIMEOUT = 120.0
#: Starts tried: Ray gives a node 30 s to register (fixed), which a loaded machine can miss.
ATTEMPTS = 5
#: Seconds between SIGTERM and SIGKILL (the GCS and a raylet do not end on SIGTERM alone).
STOP_TIMEOUT = 5.0
#: Ray's setting of its workers' niceness, read by each node's raylet from its environment, and the
#: value the nodes get unless the environment sets one: 0, as a one-machine CPU run
#: (``recipes.launch_cpu.NICENESS_ENV`` / ``WORKER_NICENESS``, checked equal by
#: tests/recipes/test_cluster_niceness.py). Ray's default, +15, starves the trainer's workers beside
#: any other process at niceness 0.
NICENESS_ENV, WORKER_NICENESS = "RAY_worker_niceness", 0


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def marked(cluster_id: str) -> list[psutil.Process]:
    """The processes alive now whose environment carries ``MARK=cluster_id``."""
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get(MARK) == cluster_id and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def _node_ports(head: bool) -> list[str]:
    names = [
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "metrics-export-port",
        "runtime-env-agent-port",
    ]
    if head:
        names += ["dashboard-port", "ray-client-server-port"]
    return [f"--{n}={free_port()}" for n in names] + ["--min-worker-port=0", "--max-worker-port=0"]


class RayLocalCluster:
    """``nodes`` Ray nodes on this machine (a head and workers); see the module docstring."""

    def __init__(
        self,
        nodes: int = 2,
        node_args: Sequence[str] = (),
        object_store_mb: int = 256,
        dashboard: bool = True,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"[nodes] {nodes}: a cluster has at least its head node")
        self.nodes, self.node_args = nodes, list(node_args)
        self.object_store_mb, self.dashboard = object_store_mb, dashboard
        self.id = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.temp_dir: Path | None = None
        self.address: str | None = None
        self.dashboard_url: str | None = None
        self.pids: list[int] = []

    def _start_node(self, head: bool) -> None:
        assert self.temp_dir is not None
        # this interpreter (not the `ray` script's shebang): the nodes' workers import this install
        cmd = [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            f"--temp-dir={self.temp_dir}",
            "--disable-usage-stats",
        ]
        cmd += [f"--object-store-memory={self.object_store_mb * 2**20}", *self.node_args, *_node_ports(head)]
        if head:
            port = free_port()
            cmd += ["--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
            cmd += [f"--include-dashboard={str(self.dashboard).lower()}", "--dashboard-host=127.0.0.1"]
            self.address = f"127.0.0.1:{port}"
        else:
            cmd += [f"--address={self.address}", "--node-ip-address=127.0.0.1"]
        p = subprocess.run(cmd, env=self.node_env(), capture_output=True, text=True, timeout=START_TIMEOUT)
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            raise RuntimeError(
                f"`ray start` of a {'head' if head else 'worker'} node failed: {' | '.join(tail)}"
            )
        if head and self.dashboard:
            port = next(a.split("=", 1)[1] for a in cmd if a.startswith("--dashboard-port="))
            self.dashboard_url = f"http://127.0.0.1:{port}"

    def node_env(self) -> dict[str, str]:
        """The environment of every node's ``ray start``: this one's, with the cluster's mark, its
        workers' niceness (:data:`WORKER_NICENESS` unless set) and Ray's auth off, without ``RAY_ADDRESS``."""
        # auth explicit: a token in ~/.ray (left by any local ray.init) would turn it on for the head only
        env = {NICENESS_ENV: str(WORKER_NICENESS), **os.environ}
        env.update({MARK: self.id, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})
        env.pop("RAY_ADDRESS", None)
        return env

    def start(self) -> str:
        """Start the nodes, wait until all are alive; return the head's address (``RAY_ADDRESS``)."""
        for attempt in range(1, ATTEMPTS + 1):
            # short: Ray's socket paths under it must stay within the 107 characters of a unix socket
            self.temp_dir = Path(tempfile.mkdtemp(prefix="rlvr-ray-", dir="/tmp"))
            try:
                for i in range(self.nodes):
                    self._start_node(head=i == 0)
                self._wait_alive()
                break
            except RuntimeError:
                self.stop()
                if attempt == ATTEMPTS:
                    raise
            except BaseException:
                self.stop()
                raise
        self.pids = [p.pid for p in marked(self.id)]
        return str(self.address)

    def _wait_alive(self) -> None:
        from ray._raylet import GcsClient  # the GCS's own node table, without joining as a driver

        client = GcsClient(address=str(self.address))
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            alive = [n for n in client.get_all_node_info().values() if n.state == 0]  # 0: ALIVE
            if len(alive) >= self.nodes:
                return
            time.sleep(0.5)
        raise RuntimeError(f"{len(alive)} of {self.nodes} Ray nodes alive after {START_TIMEOUT:g} s")

    def stop(self) -> list[int]:
        """End every process of this cluster (by its mark: SIGTERM, then SIGKILL after
        :data:`STOP_TIMEOUT`), remove the temp dir; returns the pids still alive (empty when all ended)."""
        terminate(marked(self.id), STOP_TIMEOUT)
        left = [p.pid for p in marked(self.id)]
        if self.temp_dir is not None and not left:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
        return left

    def __enter__(self) -> RayLocalCluster:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        left = self.stop()
        if left and et is None:
            raise RuntimeError(f"Ray processes {left} of cluster {self.id} outlived its stop")

    def state(self) -> dict:
        """What the CLI writes to ``state.json``: id, address, dashboard, temp dir, pids."""
        return {
            "id": self.id,
            "address": self.address,
            "dashboard": self.dashboard_url,
            "temp_dir": str(self.temp_dir),
            "nodes": self.nodes,
            "pids": self.pids,
        }


def load(state_dir: Path) -> RayLocalCluster:
    """The cluster whose ``state.json`` the CLI wrote into ``state_dir``."""
    st = json.loads((state_dir / "state.json").read_text())
    c = RayLocalCluster(st["nodes"])
    c.id, c.address, c.dashboard_url = st["id"], st["address"], st["dashboard"]
    c.temp_dir, c.pids = Path(st["temp_dir"]), st["pids"]
    return c


def main(argv: Sequence[str] | None = None) -> int:
    """``start|stop|status --dir D``: see the module docstring. Exit 0, or 2 with one ``error:`` line."""
    p = argparse.ArgumentParser(prog="python -m core.clusters.ray_local", description=__doc__.splitlines()[0])
    p.add_argument("cmd", choices=("start", "stop", "status"))
    p.add_argument("--dir", type=Path, required=True, help="where state.json (id, address, pids) lives")
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--num-cpus", type=int, default=None, help="logical CPUs per node (on a CPU: 16)")
    p.add_argument("--num-gpus", type=int, default=None, help="logical GPUs per node (on a CPU: 1)")
    a = p.parse_args(argv)
    state = a.dir / "state.json"
    if a.cmd == "start":
        if state.exists() and marked(load(a.dir).id):
            print(
                f"error: [--dir] {a.dir} holds a running cluster (fix: stop it first, or another --dir)",
                file=sys.stderr,
            )
            return 2
        flags = [f"--num-{k}={v}" for k, v in (("cpus", a.num_cpus), ("gpus", a.num_gpus)) if v is not None]
        c = RayLocalCluster(a.nodes, flags)
        try:
            c.start()
        except RuntimeError as e:  # every attempt failed; what they started is stopped
            print(
                f"error: {e} (after {ATTEMPTS} attempts; fix: retry when the machine is less loaded)",
                file=sys.stderr,
            )
            return 2
        a.dir.mkdir(parents=True, exist_ok=True)
        state.write_text(json.dumps(c.state(), indent=1) + "\n")
        print(f"RAY_ADDRESS={c.address}  ({a.nodes} nodes, {len(c.pids)} processes; state in {state})")
        return 0
    if not state.exists():
        print(f"error: [--dir] no {state} (fix: `start --dir {a.dir}` first)", file=sys.stderr)
        return 2
    c = load(a.dir)
    if a.cmd == "status":
        print(f"RAY_ADDRESS={c.address}  ({len(marked(c.id))} processes of cluster {c.id} alive)")
        return 0
    left = c.stop()
    if left:
        print(f"error: processes {left} of cluster {c.id} are still alive after SIGKILL", file=sys.stderr)
        return 2
    state.unlink()
    print(f"stopped cluster {c.id}: no process of it is left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
