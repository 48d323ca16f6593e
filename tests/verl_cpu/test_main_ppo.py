"""veRL's own trainer (``verl.trainer.main_ppo``) on this CPU: ``python -m recipes.run ... engine=verl``.

The fast test runs one recipe (GRPO: a reference model and the KL loss, so every patch is on the
path) for 2 steps from a tiny model, as a user types it, and checks what veRL wrote: its metrics for
each step, its checkpoint, and that the rollout's log-probs are the actor's (the weights reached the
rollout server). No process of the run outlives it.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A run of seconds: tiny task files, a short held-out set, short responses.
SMALL = [
    "trainer.total_training_steps=2",
    "trainer.test_freq=2",
    "trainer.save_freq=2",
    "++local.task.train_n=64",
    "++local.task.val_n=16",
    "local.eval_samples=16",
    "data.max_response_length=24",
]


def run_verl(
    args: list[str], cache: Path, timeout: float = 600, **env_more: str
) -> subprocess.CompletedProcess:
    env = {**os.environ, "RLVR_CACHE": str(cache), **env_more}
    env.pop("VERL_PLATFORM", None)
    return subprocess.run(
        [sys.executable, "-m", "recipes.run", "engine=verl", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def steps(run_dir: Path) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.setdefault(int(row["step"]), {}).update(row["data"])
    return out


def finite(step: dict, *keys: str) -> bool:
    return all(isinstance(step.get(k), (int, float)) and math.isfinite(step[k]) for k in keys)


@pytest.fixture(scope="module")
def model(tiny_checkpoint) -> Path:
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


def test_grpo_runs_two_steps_on_verls_trainer_from_a_tiny_model(model: Path, tmp_path: Path) -> None:
    from recipes.supervise import launched, run_key
    from verl_cpu.probe import PROFILE_ENV, read

    run_dir, probe = tmp_path / "run", tmp_path / "probe.jsonl"
    p = run_verl(
        ["recipe=grpo", f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}", *SMALL],
        tmp_path / "cache",
        **{PROFILE_ENV: str(probe)},
    )
    assert p.returncode == 0, p.stderr[-4000:]
    assert (
        "keys changed for the CPU" in p.stderr and "actor_rollout_ref.rollout.name: vllm -> cpu" in p.stderr
    )
    by_step = steps(run_dir)
    for s in (1, 2):
        assert finite(by_step[s], "actor/pg_loss", "actor/grad_norm", "critic/score/mean", "actor/kl_loss"), (
            by_step[s]
        )
        # the rollout server sampled with the actor's weights: its log-probs are the actor's recomputed ones
        assert by_step[s]["training/rollout_probs_diff_max"] < 1e-3, by_step[s]
    assert "val-core/arithmetic/acc/mean@1" in by_step[2]
    assert (run_dir / "checkpoints" / "global_step_2" / "actor").is_dir()
    # Hydra's output of veRL's main_ppo is the run's, not outputs/ of the folder the command ran in
    assert (run_dir / "hydra" / ".hydra" / "config.yaml").is_file()
    assert (run_dir / "launch.sh").read_text().count("verl.trainer.main_ppo") == 1
    assert "verl_cpu" in (run_dir / "launch.sh").read_text()
    assert not launched(run_key(run_dir))  # nothing of the run is left running
    # the phase timers ran inside veRL's processes, and Ray started its workers at the trainer's own
    # niceness (its default adds 15: the trainer starves beside any other process)
    rows = read(probe)
    roles = {(r["role"], r["phase"]) for r in rows}
    for role, phase in [
        ("driver", "ray.init"),
        ("TaskRunnerV1", "trainer.init"),
        ("WorkerDict", "worker.init_model"),
        ("WorkerDict", "worker.train_mini_batch"),
        ("CPURolloutServer", "server.decode"),
    ]:
        assert (role, phase) in roles, (role, phase, sorted(roles))
    # (Ray adds its setting to the raylet's own niceness: the workers run at the driver's)
    (driver_nice,) = {r["nice"] for r in rows if r["role"] == "driver"}
    assert {r["nice"] for r in rows} == {driver_nice}, {(r["role"], r["nice"]) for r in rows}
