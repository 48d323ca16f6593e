"""benchmarks.bench_cpu_engines: the CPU sampler sees a run's processes, grandchildren included, and the
length check pairs a local run's logged held-out metrics with the ones derived from its dumps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks.bench_cpu_engines import CpuSampler, length_check
from core.compose import compose
from recipes.local.track import dump_generations

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass\n"


def test_sampler_counts_a_grandchild() -> None:
    """A child that starts a grandchild burning ~1 s of CPU: the sampled total holds most of it."""
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN!r}])"
    proc = subprocess.Popen([sys.executable, "-c", code])
    sampler = CpuSampler(proc.pid, "no-such-launch:", 0.1)
    sampler.start()
    proc.wait()
    seconds = sampler.stop()
    assert 0.5 < seconds < 5.0, seconds
    assert len(sampler.last) >= 2  # the child and the grandchild


def test_length_check_pairs_logged_and_derived(tiny_checkpoint, tmp_path: Path, hydra_ctx) -> None:
    cfg = compose(
        ["recipe=r1_zero", "scale=laptop_base", f"actor_rollout_ref.model.path={tiny_checkpoint()}"]
    )
    OmegaConf.save(cfg, tmp_path / "config.yaml", resolve=True)
    dump_generations(
        tmp_path / "validation",
        0,
        ["q"] * 2,
        ["12", "<answer>3</answer>"],
        ["1", "3"],
        [0, 1],
        {"acc": [False, True]},
    )
    logged = {"rlvr/val_acc": 0.5, "rlvr/val_response_length": 3.5}
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "data": logged}) + "\n")
    out = length_check(tmp_path)
    assert [(r["metric"], r["step"]) for r in out["rows"]] == [
        ("rlvr/val_acc", 0),
        ("rlvr/val_response_length", 0),
    ]
    assert out["max_abs_diff"]["rlvr/val_acc"] == 0.0
    assert out["max_abs_diff"]["rlvr/val_response_length"] == pytest.approx(0.0)  # (2 + 1 + 3 + 1) / 2
