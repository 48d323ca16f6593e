"""A real two-node Slurm cluster on this machine for the ``cluster`` tests (``make test-cluster``).

``slurm``: one cluster per session (:class:`core.clusters.slurm_local.SlurmCluster`: munged,
slurmctld, ``slurmd -N n1`` and ``-N n2``, installed with apt-get when absent), stopped by pid at
the end of the session however the tests ended; the finalizer fails the session when a daemon or a
process of a job survives. ``watch``: records every process each job step runs on each node
(the descendants of each step's tasks, polled each second) and, after the test, checks that none is left.
``submit``: ``python -m recipes.run ... cluster=slurm`` as a user types it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from core.clusters.slurm_local import SlurmCluster

ROOT = Path(__file__).resolve().parents[2]

#: The units of work of ``make test-cluster TEST_CLUSTER_WORKERS=2`` (``-n 2 --dist loadscope``): the Ray
#: cluster's module then the sweep's in one worker, the Slurm runs' module in the other (each worker
#: that needs one starts its own Slurm cluster), so the two halves take about as long.
UNITS = {"test_ray_cluster.py": "ray-then-sweep", "test_slurm_sweep.py": "ray-then-sweep"}


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):  # noqa: ANN001, ANN201 - pytest-xdist hook signature
    """Under ``--dist loadscope`` with only tests/cluster given (``make test-cluster``): xdist's
    ``loadscope`` scheduler with :data:`UNITS` as the scopes (a module of its own otherwise). None
    (tests/conftest.py's scheduler) for any other run."""
    if config.getvalue("dist") != "loadscope" or not config.args:
        return None
    if not all(
        Path(a.split("::", 1)[0]).resolve().is_relative_to(Path(__file__).parent) for a in config.args
    ):
        return None
    from xdist.scheduler import LoadScopeScheduling  # pytest-xdist: only when it schedules

    class ClusterUnits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return UNITS.get(Path(module).name, module)

    return ClusterUnits(config, log)


#: Seconds of a short 2-node run here (Ray's start on two nodes, veRL's start-up, 2 steps) on a loaded
#: 2-core machine; a test that waits longer has hung.
RUN_TIMEOUT = 1500

#: A short grpo run on veRL's trainer from a tiny model (the run dir and model are added per test).
SMALL = [
    "recipe=grpo",
    "engine=verl",
    "cluster=slurm",
    "trainer.nnodes=2",
    "trainer.total_training_steps=2",
    "trainer.test_freq=2",
    "trainer.save_freq=2",
    "++local.task.train_n=64",
    "++local.task.val_n=16",
    "local.eval_samples=8",
    "data.max_response_length=12",
]


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - pytest fixture
    """The session's two-node Slurm cluster (see the module docstring)."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"), nodes=2)
    try:
        cluster.start()
        yield cluster
    finally:
        stopped = cluster.stop()  # raises when something survives
        print(f"\n[slurm] stopped: {', '.join(stopped)}", file=sys.stderr)
        assert not cluster.running() and not cluster.marked()


@pytest.fixture(scope="session")
def model(tiny_checkpoint) -> Path:  # noqa: ANN001 - the root conftest's fixture
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


@pytest.fixture(scope="session")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rlvr-cache")


class Watch:
    """Every process the cluster's job steps run, per node: ``{pid: (start time, node, names seen)}``."""

    def __init__(self, cluster: SlurmCluster) -> None:
        self.cluster = cluster
        self.seen: dict[int, tuple[float, str, set[str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _tasks(self) -> list[tuple[psutil.Process, str]]:
        """The job steps' tasks on this cluster with their node: children of a ``slurmstepd`` whose
        environment names this cluster's ``slurm.conf`` and a node (``slurmstepd``'s own environment
        is overwritten by its process title)."""
        conf, out = str(self.cluster.conf), []
        for p in psutil.process_iter(["pid", "name", "ppid"]):
            try:
                env = p.environ()
                if env.get("SLURM_CONF") != conf or not env.get("SLURMD_NODENAME"):
                    continue
                if psutil.Process(p.info["ppid"]).name() == "slurmstepd":
                    out.append((p, env["SLURMD_NODENAME"]))
            except (psutil.Error, OSError):
                continue
        return out

    def _poll(self) -> None:
        while not self._stop.is_set():
            for task, node in self._tasks():
                try:
                    procs = [task, *task.children(recursive=True)]
                except psutil.Error:
                    continue
                for k in procs:
                    try:
                        started, known, names = self.seen.get(k.pid, (k.create_time(), node, set()))
                        names.add(k.name())
                        self.seen[k.pid] = (started, known, names)
                    except psutil.Error:
                        continue
            self._stop.wait(1.0)

    def names(self, node: str) -> set[str]:
        """Names of the processes seen on ``node`` (Ray's workers show as ``ray::<actor>``)."""
        return {n for _, known, names in list(self.seen.values()) if known == node for n in names}

    def pids(self, node: str, name: str) -> list[int]:
        """Live processes seen on ``node`` whose name is ``name``."""
        return [pid for pid, (_, known, names) in list(self.seen.items()) if known == node and name in names]

    def alive(self) -> list[str]:
        """The recorded processes still running (same pid and start time)."""
        left = []
        for pid, (started, node, _names) in list(self.seen.items()):
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - started) < 0.05 and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{p.name()} (pid {pid}, node {node})")
            except psutil.Error:
                continue
        return left

    def stop(self, wait: float = 60.0) -> list[str]:
        """Stop watching; the processes still alive after up to ``wait`` seconds."""
        end = time.monotonic() + wait
        while self.alive() and time.monotonic() < end:
            time.sleep(1)
        self._stop.set()
        self._thread.join(timeout=5)
        return self.alive()


@pytest.fixture
def watch(slurm: SlurmCluster):  # noqa: ANN201 - pytest fixture
    """Record the job steps' processes during a test; after it, none may be left (see :class:`Watch`)."""
    w = Watch(slurm)
    yield w
    jobs = subprocess.run(
        ["squeue", "-h", "-o", "%i"], env=slurm.env(), capture_output=True, text=True
    ).stdout
    if jobs.split():  # a failed test may leave its job running: cancel it, then check as for the others
        subprocess.run(["scancel", *jobs.split()], env=slurm.env(), check=False)
    left = w.stop()
    assert not left, f"processes of the job steps still running after the test: {left}"


class Submitter:
    """``python -m recipes.run ...`` from the repository root against the session's cluster."""

    def __init__(self, cluster: SlurmCluster, cache: Path, model: Path) -> None:
        self.cluster, self.cache, self.model = cluster, cache, model
        self.env = {**cluster.env(), "RLVR_CACHE": str(cache)}
        self.env.pop("VERL_PLATFORM", None)

    def args(self, run_dir: Path, *more: str) -> list[str]:
        return [*SMALL, f"actor_rollout_ref.model.path={self.model}", f"run_dir={run_dir}", *more]

    def run(self, args: list[str], timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["nice", "-n", "5", sys.executable, "-m", "recipes.run", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, args: list[str]) -> subprocess.Popen:
        return subprocess.Popen(
            ["nice", "-n", "5", sys.executable, "-m", "recipes.run", *args],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def squeue(self) -> list[str]:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True)
        return out.stdout.split()

    def scontrol(self, *args: str) -> str:
        return subprocess.run(["scontrol", *args], env=self.env, capture_output=True, text=True).stdout


@pytest.fixture
def submitter(slurm: SlurmCluster, cache: Path, model: Path) -> Submitter:
    return Submitter(slurm, cache, model)


def job_id(stderr: str) -> str:
    """The job id ``recipes.run`` reported (``[slurm] submitted job <id> ...``)."""
    for line in stderr.splitlines():
        if line.startswith("[slurm] submitted job "):
            return line.split()[3]
    raise AssertionError(f"no job was submitted:\n{stderr[-3000:]}")


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:  # noqa: ANN001
    """Poll ``predicate`` every 2 s; fail after ``timeout`` s, or once ``proc`` ended."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the submission ended before {what}:\n{proc.stderr.read()[-3000:]}")
        time.sleep(2)
    raise AssertionError(f"no {what} after {timeout:.0f} s")


def error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("error:")]


@pytest.fixture
def helpers():  # noqa: ANN201 - pytest fixture
    """The module's helper functions for the test files (a conftest is not importable by name)."""
    import types

    return types.SimpleNamespace(job_id=job_id, wait_for=wait_for, error_lines=error_lines, Watch=Watch)
