"""A real Slurm cluster of N nodes on this one machine, owned by the project (tests, CI, trying it out).

``python -m core.clusters.slurm_local start|stop|status --dir D [--nodes 2]``, or
``with SlurmCluster(D, nodes=2) as cluster: ...`` (``cluster.env()`` is the environment in which
``sbatch``/``squeue``/``scancel`` talk to it).

Does: install Debian's ``slurm-wlm`` and ``munge`` when a daemon is missing (as root, through
``apt-get``; ``apt-get update`` once if the install fails, as ``make setup`` installs qemu-user),
write a munge key and a ``slurm.conf`` into its own state directory ``D`` (nothing under ``/etc``),
start ``munged`` with its own socket, key, pid, seed and log files in ``D`` (a system munged is
never touched), ``slurmctld`` and one ``slurmd -N n<i>`` per node (distinct ports, all on
127.0.0.1), and wait until ``sinfo`` shows every node idle. Every daemon runs in the foreground of
a process this module starts, so it knows each pid; they are recorded in ``D/pids.json``.
:meth:`SlurmCluster.stop` cancels the cluster's jobs, stops those pids (SIGTERM, then SIGKILL),
then every process that still carries the cluster in its environment (a job's tasks and
``slurmstepd`` inherit ``SLURM_CONF=D/slurm.conf`` or :data:`MARK`; :func:`core.procs.terminate`),
and verifies nothing is left. It never stops anything by name.

Short time-outs (``SlurmdTimeout``, ``KillWait``) make a dead node or a cancelled job visible in
seconds; finished jobs stay in the controller for ``MinJobAge`` seconds, so ``scontrol show job``
reports their final state without accounting (no ``slurmdbd``). Not covered: several machines,
GPUs (``gres``), cgroups (the cluster tracks processes by parent, ``proctrack/linuxproc``).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from core.procs import terminate

#: Environment variable that marks the daemons of one cluster (and ``slurmstepd``, their child).
MARK = "RLVR_SLURM_CLUSTER"
#: Debian packages that provide the daemons and the client commands.
PACKAGES = ("slurm-wlm", "munge")
#: File whose lock serializes the installs on this machine.
INSTALL_LOCK = "/tmp/rlvr-slurm-install.lock"
COMMANDS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "scontrol", "squeue", "scancel")


def ensure_installed(say=print) -> None:  # noqa: ANN001 - a print-like callable
    """Install :data:`PACKAGES` through apt-get when one of :data:`COMMANDS` is missing; ``RuntimeError``
    (one line, with the fix) when that is not possible here."""
    missing = [c for c in COMMANDS if shutil.which(c) is None]
    if not missing:
        return
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RuntimeError(
            f"Slurm is not installed ({', '.join(missing)} missing) and cannot be installed here (needs root and "
            f"apt-get); fix: install {' and '.join(PACKAGES)} (Debian/Ubuntu: apt-get install -y {' '.join(PACKAGES)})"
        )
    # one install at a time on this machine (two test workers may start a cluster each): the next one
    # waits here, then finds the commands installed
    with open(INSTALL_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = [c for c in COMMANDS if shutil.which(c) is None]
        if not missing:
            return
        say(f"[slurm] installing {' '.join(PACKAGES)} (Debian/Ubuntu; {', '.join(missing)} missing)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", *PACKAGES]
        if subprocess.run(install, env=env, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=False)
            done = subprocess.run(install, env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(
                    f"apt-get install {' '.join(PACKAGES)} failed: {done.stderr.strip()[-300:]}"
                )


def free_port() -> int:
    """A TCP port free on this machine now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_job_id(ctld_port: int) -> int:
    """The first job id of a cluster whose controller listens on ``ctld_port``: a range of 1,000 ids
    per port, so clusters running at once (on distinct ports) do not share ids.

    >>> first_job_id(40123), first_job_id(40124)
    (40123001, 40124001)
    """
    return 1000 * (ctld_port % 60000) + 1


def node_names(nodes: int) -> list[str]:
    return [f"n{i}" for i in range(1, nodes + 1)]


def slurm_conf(state: Path, nodes: int, ports: dict[str, int], cpus_per_node: int = 1) -> str:
    """The ``slurm.conf`` of a cluster whose state lives in ``state``: one controller, ``nodes``
    nodes on this host (``slurmd -N``), one partition ``cpu`` holding them all."""
    host = socket.gethostname()
    lines = [
        "# A Slurm cluster on one machine (core.clusters.slurm_local); every file lives beside this one.",
        "ClusterName=rlvr",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ports['ctld']}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={state / 'munge' / 'munge.socket'}",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={state / 'ctld'}",
        f"SlurmctldPidFile={state / 'slurmctld.pid'}",
        f"SlurmctldLogFile={state / 'slurmctld.log'}",
        f"SlurmdSpoolDir={state / 'spool' / '%n'}",
        f"SlurmdPidFile={state / 'slurmd-%n.pid'}",
        f"SlurmdLogFile={state / 'slurmd-%n.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        # a dead slurmd is marked DOWN after 10 s; a cancelled job's tasks get SIGKILL 10 s after SIGTERM
        "SlurmdTimeout=10",
        "SlurmctldTimeout=10",
        "KillWait=10",
        "MessageTimeout=5",
        "InactiveLimit=0",
        # finished jobs stay visible to `scontrol show job` for 10 minutes (no accounting database here)
        "MinJobAge=600",
        "MailProg=/bin/true",
        # job ids of its own: two local clusters at once (two pytest workers) never hand out the same id,
        # and a job names its temp dirs and its Ray processes' mark by its id
        f"FirstJobId={first_job_id(ports['ctld'])}",
    ]
    for name in node_names(nodes):
        lines.append(
            f"NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports[name]} "
            f"CPUs={cpus_per_node} RealMemory=4000 State=UNKNOWN"
        )
    lines.append(
        f"PartitionName=cpu Nodes={','.join(node_names(nodes))} Default=YES MaxTime=INFINITE State=UP"
    )
    return "\n".join(lines) + "\n"


class SlurmCluster:
    """A local Slurm cluster in ``state`` (see the module docstring). ``start()`` / ``stop()``, or a
    context manager that stops it however the block ends."""

    def __init__(self, state: Path | str, nodes: int = 2, say=None) -> None:  # noqa: ANN001
        self.state = Path(state).resolve()
        self.nodes = nodes
        self.say = say or (lambda m: print(m, file=sys.stderr, flush=True))

    @property
    def conf(self) -> Path:
        return self.state / "slurm.conf"

    def env(self) -> dict[str, str]:
        """The environment in which Slurm's commands talk to this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _daemon_env(self) -> dict[str, str]:
        return {**self.env(), MARK: str(self.state)}

    # -- start ----------------------------------------------------------------------------------
    def start(self, timeout: float = 60.0) -> SlurmCluster:
        """Install if needed, configure, start every daemon and wait until all nodes are idle;
        stops what it started and raises ``RuntimeError`` when the cluster does not come up."""
        ensure_installed(self.say)
        if self.running():
            raise RuntimeError(
                f"a cluster already runs in {self.state}; fix: stop it first (stop --dir {self.state})"
            )
        try:
            self._configure()
            self._start_munged()
            self._spawn("slurmctld", ["slurmctld", "-D", "-c", "-f", str(self.conf)])
            self._wait(lambda: self._run(["scontrol", "ping"]).returncode == 0, 20, "slurmctld answering")
            for name in node_names(self.nodes):
                self._spawn(f"slurmd-{name}", ["slurmd", "-D", "-N", name, "-f", str(self.conf)])
            self._wait(self._all_idle, timeout, f"{self.nodes} nodes idle in sinfo")
        except BaseException:
            self.stop()
            raise
        self.say(
            f"[slurm] {self.nodes} nodes idle ({', '.join(node_names(self.nodes))}); SLURM_CONF={self.conf}"
        )
        return self

    def _configure(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o700)
        for sub in ("munge", "ctld", "spool"):
            (self.state / sub).mkdir(exist_ok=True)
            (self.state / sub).chmod(0o700)
        key = self.state / "munge" / "munge.key"
        if not key.is_file():
            key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        ports = {"ctld": free_port(), **{n: free_port() for n in node_names(self.nodes)}}
        self.conf.write_text(slurm_conf(self.state, self.nodes, ports))
        (self.state / "pids.json").write_text("{}")

    def _start_munged(self) -> None:
        m = self.state / "munge"
        self._spawn(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",
                f"--socket={m / 'munge.socket'}",
                f"--key-file={m / 'munge.key'}",
                f"--pid-file={m / 'munged.pid'}",
                f"--seed-file={m / 'munged.seed'}",
                f"--log-file={m / 'munged.log'}",
            ],
        )
        self._wait(lambda: (m / "munge.socket").exists(), 10, "munged's socket")

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = open(self.state / f"{name}.out", "ab")  # noqa: SIM115 - the daemon keeps it
        proc = subprocess.Popen(
            cmd, env=self._daemon_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        pids = self._pids()
        pids[name] = {"pid": proc.pid, "started": psutil.Process(proc.pid).create_time(), "cmd": cmd}
        (self.state / "pids.json").write_text(json.dumps(pids, indent=2) + "\n")
        time.sleep(0.2)
        if proc.poll() is not None:
            out = (self.state / f"{name}.out").read_text(errors="replace").strip().splitlines()
            raise RuntimeError(f"{name} exited at once (exit {proc.returncode}): {out[-1] if out else ''}")

    def _wait(self, ready, timeout: float, what: str) -> None:  # noqa: ANN001
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            dead = [n for n, p in self._alive().items() if p is None]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited while waiting for {what} (logs: {self.state})")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"no {what} after {timeout:.0f} s (logs: {self.state})")

    def _run(self, cmd: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env(), capture_output=True, text=True, timeout=30)

    def node_states(self) -> dict[str, str]:
        """``{node: state}`` as ``sinfo`` reports it (``idle``, ``alloc``, ``down*`` ...)."""
        done = self._run(["sinfo", "-h", "-N", "-o", "%N %t"])
        return dict(line.split() for line in done.stdout.splitlines() if len(line.split()) == 2)

    def _all_idle(self) -> bool:
        states = self.node_states()
        return len(states) == self.nodes and all(s == "idle" for s in states.values())

    # -- what runs ------------------------------------------------------------------------------
    def _pids(self) -> dict[str, dict]:
        f = self.state / "pids.json"
        return json.loads(f.read_text()) if f.is_file() else {}

    def _alive(self) -> dict[str, psutil.Process | None]:
        """``{daemon: its process, or None once it is gone}`` for every daemon this cluster started
        (a pid reused by another process counts as gone: its start time differs)."""
        out: dict[str, psutil.Process | None] = {}
        for name, rec in self._pids().items():
            try:
                p = psutil.Process(rec["pid"])
                out[name] = (
                    p if abs(p.create_time() - rec["started"]) < 0.05 and p.status() != "zombie" else None
                )
            except psutil.Error:
                out[name] = None
        return out

    def running(self) -> bool:
        return any(p is not None for p in self._alive().values())

    def marked(self) -> list[psutil.Process]:
        """Live processes that carry this cluster in their environment (its daemons; a job's tasks and
        what they started), except this process and its ancestors."""
        mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
        conf, state = str(self.conf), str(self.state)
        out = []
        for p in psutil.process_iter(["pid"]):
            if p.pid in mine:
                continue
            try:
                env = p.environ()
            except (psutil.Error, OSError):
                continue
            # a job's tasks carry the cluster's conf and a job id (a user's shell with SLURM_CONF does not)
            if env.get(MARK) == state or (env.get("SLURM_CONF") == conf and env.get("SLURM_JOB_ID")):
                out.append(p)
        return out

    # -- stop -----------------------------------------------------------------------------------
    def stop(self, grace: float = 10.0) -> list[str]:
        """Cancel the cluster's jobs, stop every daemon it started and every process still marked
        with it; returns what was stopped, ``RuntimeError`` when something survives."""
        stopped: list[str] = []
        alive = self._alive()
        if alive.get("slurmctld") is not None and alive.get("munged") is not None:
            jobs = self._run(["squeue", "-h", "-o", "%i"]).stdout.split()
            if jobs:
                self._run(["scancel", *jobs])
                end = time.monotonic() + grace + 5
                while time.monotonic() < end and self._run(["squeue", "-h", "-o", "%i"]).stdout.split():
                    time.sleep(0.5)
                stopped.append(f"jobs {','.join(jobs)} (scancel)")
        order = [n for n in alive if n.startswith("slurmd")] + ["slurmctld", "munged"]
        for name in order:
            p = alive.get(name)
            if p is not None:
                stopped.append(f"{name} (pid {p.pid})")
                terminate([p], grace)
        left = self.marked()
        if left:
            stopped += [f"{_describe(p)} (marked)" for p in left]
            terminate(left, grace)
        survivors = [n for n, p in self._alive().items() if p is not None] + [
            _describe(p) for p in self.marked()
        ]
        if survivors:
            raise RuntimeError(f"still running after stop: {', '.join(survivors)}")
        return stopped

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _describe(p: psutil.Process) -> str:
    try:
        return f"{p.name()} (pid {p.pid})"
    except psutil.Error:
        return f"pid {p.pid}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m core.clusters.slurm_local", description=__doc__.split("\n")[0]
    )
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("--dir", required=True, help="the cluster's state directory (slurm.conf, keys, logs)")
    parser.add_argument("--nodes", type=int, default=2)
    args = parser.parse_args(argv)
    cluster = SlurmCluster(args.dir, nodes=args.nodes)
    try:
        if args.action == "start":
            cluster.start()
            print(f"export SLURM_CONF={cluster.conf}")
        elif args.action == "stop":
            for item in cluster.stop():
                print(f"stopped {item}")
        else:
            alive = cluster._alive()
            for name, p in alive.items():
                print(f"{name}: {'running, pid ' + str(p.pid) if p else 'not running'}")
            if alive.get("slurmctld") is not None:
                for node, state in cluster.node_states().items():
                    print(f"node {node}: {state}")
            return 0 if cluster.running() else 1
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
