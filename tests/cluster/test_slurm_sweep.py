"""A 2-arm sweep through Slurm (``recipes.sweep ... cluster=slurm``): one job per arm, one run
directory per arm, and the sweep's report. Each arm is a 1-node job, so the two jobs share the
two-node cluster (and this machine) at once, each with its own Ray ports and temp dir. The arms
train one step each and skip the pre-flight (``preflight=false``): what is checked is the sweep's
submission, not the training (the two-node runs in test_slurm_runs.py train and pre-flight)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.cluster


def test_a_two_arm_sweep_submits_one_job_per_arm_and_reports(submitter, watch, helpers, tmp_path):
    cmd = [
        "nice", "-n", "5", sys.executable, "-m", "recipes.sweep", "sweep=kl_coef", "kl=none,k3_0.01",
        "rlvr.seed=0", "engine=verl", "cluster=slurm", "trainer.nnodes=1",
        f"actor_rollout_ref.model.path={submitter.model}",
        "trainer.total_training_steps=1", "trainer.test_freq=1", "trainer.save_freq=1", "preflight=false",
        "++local.task.train_n=64", "++local.task.val_n=16", "local.eval_samples=8", "data.max_response_length=12",
    ]  # fmt: skip
    p = subprocess.run(cmd, cwd=tmp_path, env=submitter.env, capture_output=True, text=True, timeout=2400)
    assert p.returncode == 0, p.stderr[-5000:]
    (out,) = list((tmp_path / "multirun").glob("kl_coef-*"))
    arms = sorted(d for d in out.iterdir() if d.is_dir() and d.name.isdigit())
    assert [d.name for d in arms] == ["0", "1"]
    jobs = set()
    for arm in arms:
        (log,) = list(arm.glob("slurm-*.out"))
        jobs.add(log.stem.removeprefix("slurm-"))
        assert (arm / "summary.json").is_file() and (arm / "metrics.jsonl").read_text().strip()
        assert json.loads((arm / "ray_cluster.json").read_text())["nodes"]
    assert len(jobs) == 2, jobs
    assert sum(f"[slurm] job {j} ended: COMPLETED" in p.stderr for j in jobs) == 2
    assert (out / "report").is_dir() and any((out / "report").iterdir())
