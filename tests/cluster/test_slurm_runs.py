"""veRL's trainer through Slurm on a real two-node cluster (``cluster=slurm``): configs the job cannot
hold refused while another job starts, ``scancel`` of that job mid-run, and a node that dies mid-run
then a resubmission that resumes: that resubmission is the checked two-node run (both nodes held
veRL's workers, one training, finite metrics).

Each test submits as a user types it (``python -m recipes.run ... cluster=slurm``); the ``watch``
fixture checks afterwards that no process any job step ran is left on either node.
"""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.cluster


def steps(run_dir: Path) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.setdefault(int(row["step"]), {}).update(row["data"])
    return out


def finite(step: dict, *keys: str) -> bool:
    return all(isinstance(step.get(k), (int, float)) and math.isfinite(step[k]) for k in keys)


def actors(run_dir: Path) -> dict[str, dict[str, int]]:
    """``{node: {actor class: count}}`` from the job's record of Ray's GCS (``ray_cluster.json``)."""
    rec = json.loads((run_dir / "ray_cluster.json").read_text())
    return {n["name"]: n["actors"] for n in rec["nodes"]}


def workers(by_node: dict[str, int]) -> int:
    return sum(c for name, c in by_node.items() if name.endswith("WorkerDict"))


def niceness(pids: list[int]) -> set[int]:
    """The niceness of those of ``pids`` still running."""
    out = set()
    for pid in pids:
        try:
            out.add(psutil.Process(pid).nice())
        except psutil.Error:
            continue
    return out


def test_configs_the_job_cannot_hold_are_refused_while_a_job_starts_then_scancel_stops_it_on_both_nodes(
    submitter, watch, helpers, tmp_path
):
    run = tmp_path / "run"
    proc = submitter.start(
        submitter.args(run, "trainer.total_training_steps=50", "trainer.save_freq=50", "preflight=false")
    )
    helpers.wait_for(lambda: len(submitter.squeue()) == 1, 300, "the job in the queue", proc)
    (job,) = submitter.squeue()
    # while that job starts: trainer.nnodes disagrees with the job's nodes, refused before submission
    mismatch = tmp_path / "mismatch"
    p = submitter.run(submitter.args(mismatch, "cluster.nodes=3"), timeout=600)
    assert p.returncode == 2 and "nothing was launched" in p.stderr, p.stderr[-3000:]
    (err,) = helpers.error_lines(p.stderr)
    assert "[trainer.nnodes] 2" in err and "cluster.nodes=3" in err, err
    assert not (mismatch / "slurm.sbatch").exists() and submitter.squeue() == [job]
    # 3 nodes on the 2-node cluster: refused before submission (Slurm would queue it for ever)
    # (48 prompts: a batch veRL splits over 3 nodes, so only the cluster's size is wrong)
    three = submitter.args(
        tmp_path / "three", "trainer.nnodes=3", "data.train_batch_size=48", "preflight=false"
    )
    p = submitter.run(three, timeout=600)
    assert p.returncode == 2, p.stderr[-3000:]
    (err,) = helpers.error_lines(p.stderr)
    assert err.startswith("error: [cluster.nodes] 3 nodes asked, but partition cpu has 2"), err
    assert submitter.squeue() == [job]
    # the first job, once veRL's workers run on both nodes: scancel stops everything on both
    both = lambda: all("ray::WorkerDict" in watch.names(n) for n in ("n1", "n2"))  # noqa: E731
    helpers.wait_for(both, 1200, "veRL workers on both nodes", proc)
    # Ray's workers at niceness 0 on both nodes, as in a one-machine CPU run (the job script sets it)
    nice = {n: niceness(watch.pids(n, "ray::WorkerDict")) for n in ("n1", "n2")}
    assert nice == {"n1": {0}, "n2": {0}}, nice
    os.system(f"SLURM_CONF={submitter.cluster.conf} scancel {job}")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err[-3000:]
    assert f"[slurm] job {job} ended: CANCELLED" in err, err[-3000:]
    assert len(helpers.error_lines(err)) == 1, helpers.error_lines(err)
    left = watch.stop(wait=60)
    assert not left, f"still running after scancel: {left}"


def test_a_node_dying_mid_run_ends_the_job_naming_it_and_resubmitting_resumes_across_both_nodes(
    submitter, watch, helpers, tmp_path, slurm
):
    run = tmp_path / "run"
    args = submitter.args(run, "trainer.total_training_steps=3", "trainer.save_freq=1", "trainer.test_freq=3")
    proc = submitter.start(args)  # with the pre-flight on the submitting side, as a user types it
    ckpt = run / "checkpoints" / "global_step_1"
    helpers.wait_for(lambda: (ckpt / "actor").is_dir(), 1500, "checkpoint of step 1", proc)
    raylets = watch.pids("n2", "raylet")
    assert len(raylets) == 1, watch.names("n2")
    os.kill(raylets[0], signal.SIGKILL)  # the second node dies
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err[-3000:]
    (line,) = helpers.error_lines(err)
    assert "node n2 left the Ray cluster" in line and "resumes from the last checkpoint" in line, line
    left = watch.stop(wait=60)
    assert not left, f"still running after the node died: {left}"
    done = sorted(int(d.name.split("_")[-1]) for d in (run / "checkpoints").glob("global_step_*"))
    assert done and done[-1] < 3, done

    # the same command again: resumes from the last checkpoint and finishes, across both nodes
    again = helpers.Watch(slurm)
    p = submitter.run(args)
    assert p.returncode == 0, p.stderr[-4000:]
    job = helpers.job_id(p.stderr)
    assert f"[slurm] job {job} ended: COMPLETED" in p.stderr and not helpers.error_lines(p.stderr)
    assert "2 Ray nodes joined" in (run / f"slurm-{job}.out").read_text()
    # both nodes held veRL's workers: in Ray's own record of this job and in each node's job-step processes
    by_node = actors(run)
    assert set(by_node) == {"n1", "n2"}, by_node
    assert workers(by_node["n1"]) == 1 and workers(by_node["n2"]) == 1, by_node
    for node in ("n1", "n2"):
        assert "ray::WorkerDict" in again.names(node), (node, again.names(node))
    assert not again.stop(wait=60)
    # one training, not two: one task runner in this job, one trainer invocation per submission
    assert sum(a.get("TaskRunnerV1", 0) for a in by_node.values()) == 1, by_node
    parts = sorted((run / "metrics.d").glob("*.jsonl"), key=lambda f: int(f.stem))
    assert len(parts) == 2
    # the second invocation starts at the last checkpoint (its validation there), then trains on
    again_steps = sorted({json.loads(ln)["step"] for ln in parts[1].read_text().splitlines()})
    resumed = list(range(done[-1] + 1, 4))
    assert again_steps == [done[-1], *resumed], (done, again_steps)
    ckpt = run / "checkpoints" / "global_step_3" / "actor"
    assert sorted(f.name for f in ckpt.glob("model_world_size_*")) == [
        "model_world_size_2_rank_0.pt",
        "model_world_size_2_rank_1.pt",
    ]
    by_step = steps(run)  # step 0: the first invocation's validation before training
    trained = [s for s in sorted(by_step) if s > 0]
    assert trained == [1, 2, 3], sorted(by_step)
    keys = ("actor/pg_loss", "actor/grad_norm", "critic/score/mean", "timing_s/step")
    assert all(finite(by_step[s], *keys) for s in trained), {s: by_step[s] for s in trained}
    print(f"\n[cluster] 2 nodes, resumed: s/step {[round(by_step[s]['timing_s/step'], 1) for s in resumed]}")
