"""A veRL run as ONE Slurm job, Ray started by the job itself: ``recipes.run ... cluster=slurm``.

``python -m recipes.run recipe=grpo engine=verl cluster=slurm trainer.nnodes=2 [cluster.partition=...]``
(``conf/cluster/slurm.yaml``; ``recipes.sweep ... cluster=slurm`` submits one job per arm).

Does, on the submitting machine: refuse a config the job cannot run (:func:`refusal`: ``trainer.nnodes``
not the job's node count, GPUs per node that disagree, before anything is submitted), write the job's
script into the run directory (``slurm.sbatch``, :func:`job_script`), submit it with ``sbatch``,
report the job id and where its logs are, wait for its end (``scontrol show job``: no accounting
database needed while the controller keeps finished jobs, ``MinJobAge``) and report its final state,
with one ``error:`` line when it did not complete (:func:`submit`).

The job script, on the job's first node: start the Ray head (free ports and a temp dir of its own
per job, so two jobs share a machine), one Ray worker per other node through
``srun --nodes=1 --ntasks=1 -w <node> ... ray start --block``, wait until every node joined
(``python -m recipes.cluster.ray_check wait``: on a time-out one ``error:`` line names the missing
nodes), then run ``python -m recipes.run <the run's overrides> run_dir=<run>`` ONCE, on the head,
with ``RAY_ADDRESS`` pointing at the head: veRL's ``main_ppo`` joins the cluster with
``trainer.nnodes`` = the job's node count, and ``recipes.supervise`` gives the run directory its
``train.log``, ``metrics.jsonl`` and checkpoints as on one machine (submitting again resumes).
While it trains the script watches every node's Ray: a node whose Ray ends stops the run with one
``error:`` line naming it. After training it records Ray's view of the cluster (nodes and the
actors each held, from the GCS) in ``ray_cluster.json``. However the job ends (done, failed,
``scancel``, time limit) a trap stops Ray on every node: each node's Ray processes carry
``RLVR_RAY_NODE=<job>:<node>`` in their environment and are stopped by pid on that node (the
workers' srun steps do it on theirs), then the job's temp dirs go.

On GPU nodes (``cluster.gpus_per_node>0``) the job asks ``--gpus-per-node`` and each ``ray start``
declares ``--num-gpus=$SLURM_GPUS_ON_NODE``: written and checked (:func:`job_script`, tests), never
executed here (no GPU). Not covered: a filesystem shared between real machines (the run directory
and the project must be visible on every node), NCCL/InfiniBand between hosts, Slurm's ``gres``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from omegaconf import DictConfig, OmegaConf

from core.procs import send, terminate
from recipes.cluster.ray_check import node_start_args
from recipes.launch_cpu import NICENESS_ENV, WORKER_NICENESS

#: Script file the job runs, in the run directory.
SCRIPT = "slurm.sbatch"
#: Environment variable that marks one node's Ray processes: ``<job id>:<node>``.
MARK = "RLVR_RAY_NODE"
#: Slurm job states after which a job no longer runs.
FINAL = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
)


@dataclass(frozen=True)
class Job:
    """What the job asks of Slurm (``cfg.cluster``)."""

    nodes: int
    gpus_per_node: int = 0
    partition: str | None = None
    time: str | None = None
    cpus_per_node: int | None = None
    join_timeout_s: float = 120.0
    sbatch_args: tuple[str, ...] = ()
    name: str = "rlvr"
    #: logical GPUs each CPU node's Ray declares (``trainer.n_gpus_per_node``, 0: 1)
    cpu_gpus: int = 1


def job(cfg: DictConfig) -> Job:
    """The :class:`Job` of a config composed with ``cluster=slurm``."""
    c = cfg.cluster
    return Job(
        nodes=int(c.nodes),
        gpus_per_node=int(c.gpus_per_node or 0),
        partition=str(c.partition) if c.partition else None,
        time=str(c.time) if c.time else None,
        cpus_per_node=int(c.cpus_per_node) if c.cpus_per_node else None,
        join_timeout_s=float(c.join_timeout_s),
        sbatch_args=tuple(str(a) for a in (c.sbatch_args or ())),
        name=f"rlvr-{cfg.rlvr.recipe}",
        cpu_gpus=max(1, int(OmegaConf.select(cfg, "trainer.n_gpus_per_node", default=0) or 0)),
    )


def refusal(cfg: DictConfig) -> str | None:
    """What makes the job unable to run this config, as one ``[key] why (fix: ...)`` line, or None."""
    j = job(cfg)
    nnodes = int(OmegaConf.select(cfg, "trainer.nnodes", default=1) or 1)
    if j.nodes < 1:
        return f"[cluster.nodes] {j.nodes}: a job needs at least one node (fix: cluster.nodes=1 or more)"
    if nnodes != j.nodes:
        return (
            f"[trainer.nnodes] {nnodes}, but the Slurm job asks for cluster.nodes={j.nodes}: veRL would wait "
            f"for {nnodes} nodes of {j.nodes} (fix: set both to the same number, e.g. trainer.nnodes={j.nodes})"
        )
    per_node = int(OmegaConf.select(cfg, "trainer.n_gpus_per_node", default=0) or 0)
    if j.gpus_per_node and per_node != j.gpus_per_node:
        return (
            f"[trainer.n_gpus_per_node] {per_node}, but the job asks for cluster.gpus_per_node={j.gpus_per_node} "
            f"GPUs per node (fix: set both to the same number)"
        )
    return None


def head_command(overrides: list[str], run_dir: Path) -> list[str]:
    """The command the job runs once, on its head node: this run, without the cluster keys."""
    kept = [o for o in overrides if not _key(o).startswith(("cluster", "run_dir", "dry_run", "hydra"))]
    return [
        sys.executable,
        "-m",
        "recipes.run",
        *kept,
        f"run_dir={Path(run_dir).resolve()}",
        "preflight=false",
    ]


def _key(ov: str) -> str:
    return ov.split("=", 1)[0].lstrip("+~")


def _sbatch_lines(j: Job, run: Path, cwd: Path) -> list[str]:
    lines = [
        f"#SBATCH --job-name={j.name}",
        f"#SBATCH --nodes={j.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={run}/slurm-%j.out",
        f"#SBATCH --chdir={cwd}",
    ]
    if j.partition:
        lines.append(f"#SBATCH --partition={j.partition}")
    if j.time:
        lines.append(f"#SBATCH --time={j.time}")
    if j.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={j.gpus_per_node}")
    if j.cpus_per_node:
        # Ray must see the node's CPUs: Slurm's binding otherwise hides them (veRL issues #158, #523)
        lines.append(f"#SBATCH --cpus-per-task={j.cpus_per_node}")
    lines += [f"#SBATCH {a}" for a in j.sbatch_args]
    return lines


def _start_args(j: Job) -> str:
    """The resource flags of every node's ``ray start`` (bash words; ``$SLURM_GPUS_ON_NODE`` on GPUs)."""
    if j.gpus_per_node:
        cpus = ' --num-cpus="$SLURM_CPUS_PER_TASK"' if j.cpus_per_node else ""
        return f'--num-gpus="${{SLURM_GPUS_ON_NODE:-{j.gpus_per_node}}}"{cpus}'
    return " ".join(shlex.quote(a) for a in node_start_args(j.cpu_gpus, cpu=True))


#: The job script after its ``#SBATCH`` header (``str.format`` fields: run, py, start_args, node_env,
#: timeout, head).
_BODY = """set -uo pipefail
RUN={run}
PY={py}
NODES=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
HEAD=${{NODES[0]}}
WORKERS=("${{NODES[@]:1}}")
HEAD_IP=$(hostname --ip-address | awk '{{print $1}}')
free_port() {{ "$PY" -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'; }}
PORT=$(free_port)
export RAY_ADDRESS="$HEAD_IP:$PORT"
# this job's own Ray token: every node and the run get it from the job's environment
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \\n')
export RAY_USAGE_STATS_ENABLED=0
TMP=/tmp/rlvr-ray-$SLURM_JOB_ID
ERR="$RUN/slurm-$SLURM_JOB_ID.error"
START_ARGS=({start_args})
{node_env}# each node's `ray start --block` runs under `recipes.cluster.slurm node`, which owns every process
# Ray starts on that node (a child subreaper) and stops them all by pid however the node's part ends
node_ray() {{ exec "$PY" -m recipes.cluster.slurm node -- "$PY" -m ray.scripts.scripts start "$@" \\
  "${{START_ARGS[@]}}" --resources="{{\\"rlvr_node_$NODE\\": 1}}" --temp-dir="$TMP-$NODE" --block; }}
echo "[slurm] job $SLURM_JOB_ID on ${{NODES[*]}}: Ray head on $HEAD at $RAY_ADDRESS; run $RUN"

TRAIN=""
NODE_PIDS=()
cleanup() {{
  local rc=$?
  trap - EXIT TERM INT
  [ -n "$TRAIN" ] && kill -TERM "$TRAIN" 2>/dev/null && wait "$TRAIN" 2>/dev/null
  for pid in "${{NODE_PIDS[@]}}"; do kill -TERM "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$TMP"-*
  echo "[slurm] job $SLURM_JOB_ID: Ray stopped on ${{NODES[*]}} (exit $rc)"
  exit $rc
}}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() {{ echo "error: $*" | tee "$ERR" >&2; exit 2; }}

NODE=$HEAD node_ray --head --node-ip-address="$HEAD_IP" --port="$PORT" --ray-client-server-port="$(free_port)" \\
  --include-dashboard=false --disable-usage-stats > "$RUN/ray-$HEAD.log" 2>&1 &
NODE_PIDS+=($!)
export -f node_ray
export PY TMP START_ARGS_LINE="${{START_ARGS[*]}}"
for node in "${{WORKERS[@]}}"; do
  # a worker node's Ray in its own job step on that node; srun stops the step however the job ends
  srun --nodes=1 --ntasks=1 -w "$node" --overlap --kill-on-bad-exit=0 \\
    bash -c 'START_ARGS=($START_ARGS_LINE); NODE=$1 node_ray --address="$RAY_ADDRESS"' node_ray "$node" \\
    > "$RUN/ray-$node.log" 2>&1 &
  NODE_PIDS+=($!)
done
if ! JOINED=$("$PY" -m recipes.cluster.ray_check wait --address "$RAY_ADDRESS" --nodes ${{#NODES[@]}} \\
    --timeout {timeout:g} --names "$(IFS=,; echo "${{NODES[*]}}")" 2>&1); then
  echo "$JOINED" | grep -v '^error: ' >&2
  fail "$(echo "$JOINED" | grep '^error: ' | tail -n 1 | sed 's/^error: //')"
fi
echo "[slurm] $(echo "$JOINED" | tail -n 1)"

# The run, once, on the head; every node's Ray is watched while it trains.
{head} &
TRAIN=$!
lost() {{
  local i
  for i in "${{!NODES[@]}}"; do
    kill -0 "${{NODE_PIDS[$i]}}" 2>/dev/null || {{ echo "${{NODES[$i]}}"; return; }}
  done
}}
LOST=""
while kill -0 "$TRAIN" 2>/dev/null; do
  LOST=$(lost)
  [ -n "$LOST" ] && break
  sleep 2
done
RC=1
if [ -z "$LOST" ]; then
  wait "$TRAIN"
  RC=$?
  TRAIN=""
  [ "$RC" -ne 0 ] && sleep 3 && LOST=$(lost)
fi
if [ -n "$LOST" ]; then
  fail "node $LOST left the Ray cluster during the run (its Ray stopped; log: $RUN/ray-$LOST.log); the run was" \\
    "stopped. Fix: submit the same command again once the node is back: it resumes from the last checkpoint"
fi
"$PY" -m recipes.cluster.slurm record --out "$RUN/ray_cluster.json" || true
exit "$RC"
"""


def _node_env(j: Job) -> str:
    """Lines of the job script that set the environment of every node's ``ray start`` (exported, so
    the worker nodes' job steps get them too): on CPU nodes Ray's workers at the niceness of a
    one-machine CPU run (``recipes.launch_cpu.WORKER_NICENESS``; a value the submitting environment
    sets, which ``sbatch`` exports to the job, is kept). GPU nodes keep Ray's own."""
    if j.gpus_per_node:
        return ""
    return (
        "# Ray's workers at the niceness of a one-machine CPU run (Ray's default, +15, starves them)\n"
        f"export {NICENESS_ENV}=${{{NICENESS_ENV}:-{WORKER_NICENESS}}}\n"
    )


def job_script(j: Job, run_dir: Path, head: list[str], cwd: Path) -> str:
    """The job's bash script (see the module docstring)."""
    run, py = Path(run_dir).resolve(), Path(sys.executable)
    header = [
        "#!/usr/bin/env bash",
        f"# One veRL run as one Slurm job ({j.nodes} node{'s' if j.nodes > 1 else ''}): Ray head on the first node,",
        "# a Ray worker on each other node, the run once on the head. Written by recipes.cluster.slurm.",
        *_sbatch_lines(j, run, cwd),
    ]
    body = _BODY.format(
        run=shlex.quote(str(run)),
        py=shlex.quote(str(py)),
        start_args=_start_args(j),
        node_env=_node_env(j),
        timeout=j.join_timeout_s,
        head=shlex.join(head),
    )
    return "\n".join(header) + "\n" + body


def write_script(cfg: DictConfig, run_dir: Path, overrides: list[str], cwd: Path | None = None) -> Path:
    """Write ``<run_dir>/slurm.sbatch``; returns its path."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / SCRIPT
    path.write_text(
        job_script(job(cfg), run_dir, head_command(overrides, run_dir), (cwd or Path.cwd()).resolve())
    )
    path.chmod(0o755)
    return path


# -- the submitting side -------------------------------------------------------------------------
def sbatch(script: Path) -> str:
    """Submit ``script``; returns the job id. ``ValueError`` with sbatch's own reason when refused."""
    if shutil.which("sbatch") is None:
        raise ValueError(
            "[cluster] sbatch is not installed here: cluster=slurm submits from a machine with Slurm's client "
            "commands (fix: run it on the cluster's login node; python -m core.clusters.slurm_local start "
            "--dir <dir> makes a local cluster)"
        )
    done = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True)
    if done.returncode != 0:
        why = " ".join(done.stderr.split()) or f"exit {done.returncode}"
        raise ValueError(
            f"[cluster] sbatch refused the job: {why} (fix: cluster.nodes/cluster.partition as sinfo lists them)"
        )
    return done.stdout.strip().split(";")[0]


def state(job_id: str) -> dict[str, str]:
    """``scontrol show job``'s fields of a job (empty once the controller forgot it)."""
    done = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True)
    if done.returncode != 0:
        return {}
    return dict(re.findall(r"(\w+)=(\S*)", done.stdout))


def wait(job_id: str, poll: float = 2.0, timeout: float | None = None) -> dict[str, str]:
    """Poll until the job is in a :data:`FINAL` state (or ``timeout`` seconds pass); its fields."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        fields = state(job_id)
        if not fields or fields.get("JobState") in FINAL:
            return fields
        if end is not None and time.monotonic() > end:
            return fields
        time.sleep(poll)


def error_line(run_dir: Path, job_id: str) -> str | None:
    """The one line that says why the job failed: the job's own ``error`` file, else the last
    ``error:`` line of its output."""
    err = run_dir / f"slurm-{job_id}.error"
    if err.is_file() and err.read_text().strip():
        return err.read_text().strip().splitlines()[0].removeprefix("error: ")
    out = run_dir / f"slurm-{job_id}.out"
    lines = [
        ln
        for ln in (out.read_text(errors="replace").splitlines() if out.is_file() else [])
        if ln.startswith("error: ")
    ]
    return lines[-1].removeprefix("error: ") if lines else None


def partition_nodes(partition: str | None) -> tuple[str, int] | None:
    """(name, node count) of ``partition`` (None: the cluster's default one) as ``sinfo`` lists it;
    None when ``sinfo`` does not answer or lists no such partition."""
    done = subprocess.run(["sinfo", "-h", "-o", "%P %D"], capture_output=True, text=True)
    counts: dict[str, int] = {}
    default = None
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        name, count = line.split()
        if name.endswith("*"):
            name = default = name[:-1]
        counts[name] = counts.get(name, 0) + int(count)
    name = partition or default
    return (name, counts[name]) if name in counts else None


def submit(cfg: DictConfig, run_dir: Path, overrides: list[str], log=print) -> int:  # noqa: ANN001
    """Write the script, submit it, report the job and (``cluster.wait``) its end; an exit code."""
    j = job(cfg)
    part = partition_nodes(j.partition) if shutil.which("sinfo") else None
    if part is not None and j.nodes > part[1]:  # Slurm would queue it for ever
        log(
            f"error: [cluster.nodes] {j.nodes} nodes asked, but partition {part[0]} has {part[1]} (sinfo); the job "
            f"could never start (fix: trainer.nnodes={part[1]} or fewer, or another cluster.partition)\n"
            "nothing was launched."
        )
        return 2
    script = write_script(cfg, run_dir, overrides)
    try:
        job_id = sbatch(script)
    except ValueError as e:
        log(f"error: {e}\nnothing was launched.")
        return 2
    log(
        f"[slurm] submitted job {job_id} ({job(cfg).nodes} nodes): script {script}; logs {run_dir}/slurm-{job_id}.out "
        f"(the job), {run_dir}/train.log (the trainer), {run_dir}/ray-<node>.log (each node's Ray)"
    )
    if not cfg.cluster.wait:
        log(f"[slurm] not waiting (cluster.wait=false): squeue -j {job_id}; scancel {job_id} stops it")
        return 0
    log(
        f"[slurm] waiting for job {job_id} to end (Ctrl-C stops waiting, not the job; scancel {job_id} stops it)"
    )
    try:
        fields = wait(job_id)
    except KeyboardInterrupt:
        log(f"[slurm] stopped waiting; job {job_id} goes on (squeue -j {job_id}; scancel {job_id})")
        return 130
    final = fields.get("JobState", "unknown (the controller no longer lists it)")
    log(
        f"[slurm] job {job_id} ended: {final}, exit code {fields.get('ExitCode', '?')}, on {fields.get('NodeList', '?')}"
    )
    if final == "COMPLETED":
        return 0
    why = error_line(run_dir, job_id) or f"see {run_dir}/slurm-{job_id}.out and {run_dir}/train.log"
    log(f"error: Slurm job {job_id} {final}: {why}")
    return 2


# -- inside the job --------------------------------------------------------------------------------
def keep(cmd: list[str], grace: float = 3.0) -> int:
    """Run ``cmd`` (a node's ``ray start --block``) as this process's child and own every process
    it starts: this process becomes a child subreaper (Linux ``prctl``), so Ray's processes stay in
    its tree even when their parent dies (a killed raylet's workers), and in the job's tree for
    Slurm. However it ends (``cmd`` exits, SIGTERM/SIGINT from Slurm or the job script) every
    descendant is stopped by pid: SIGTERM, SIGKILL after ``grace`` seconds (short: a raylet and the
    GCS do not end on SIGTERM alone, and Slurm kills a cancelled job's steps ``KillWait`` seconds later). Returns ``cmd``'s exit
    code (143 when stopped by a signal)."""
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    stopped = {"signal": 0}

    def on_signal(signum: int, frame: object) -> None:
        stopped["signal"] = signum
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    proc = subprocess.Popen(cmd)
    code = 143
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        me = psutil.Process()
        procs = me.children(recursive=True)
        terminate(procs, grace)
        late = me.children(recursive=True)  # started (or orphaned to this subreaper) meanwhile
        for p in late:
            send(p, signal.SIGKILL)
        psutil.wait_procs(late, timeout=5)
        print(f"[slurm] {' '.join(cmd[:3])}...: stopped {len(procs)} processes", file=sys.stderr, flush=True)
    return 143 if stopped["signal"] else code


def record(out: Path) -> dict:
    """Ray's view of the job's cluster, from its GCS (``RAY_ADDRESS``): each node (its name, id,
    resources) and the actors each one held, veRL's included (finished actors stay listed)."""
    import ray  # inside the job only

    ray.init(logging_level="ERROR", log_to_driver=False)
    try:
        nodes = {}
        for n in ray.nodes():
            names = [
                k.removeprefix("rlvr_node_") for k in n.get("Resources") or {} if k.startswith("rlvr_node_")
            ]
            nodes[n["NodeID"]] = {"name": names[0] if names else None, "alive": n.get("Alive"), "actors": {}}
        actors = ray._private.state.actors()  # the GCS actor table, dead actors included
        for a in actors.values():
            node = nodes.setdefault(a["Address"]["NodeID"], {"name": None, "alive": None, "actors": {}})
            name = a.get("ActorClassName", "?")
            node["actors"][name] = node["actors"].get(name, 0) + 1
    finally:
        ray.shutdown()
    rec = {"nodes": list(nodes.values())}
    out.write_text(json.dumps(rec, indent=2) + "\n")
    return rec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m recipes.cluster.slurm", description="helpers the Slurm job script runs"
    )
    sub = p.add_subparsers(dest="action", required=True)
    r = sub.add_parser("record", help="write Ray's nodes and their actors (RAY_ADDRESS) to --out")
    r.add_argument("--out", type=Path, required=True)
    k = sub.add_parser(
        "node", help="run a node's `ray start --block` and stop all it started however it ends"
    )
    k.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.action == "node":
        return keep(a.command[1:] if a.command[:1] == ["--"] else a.command)
    rec = record(a.out)
    for n in rec["nodes"]:
        print(
            f"[slurm] node {n['name']}: {sum(n['actors'].values())} actors ({', '.join(sorted(n['actors']))})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
