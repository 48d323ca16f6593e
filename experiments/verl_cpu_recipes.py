"""Every recipe through veRL's own trainer (``main_ppo``) on this CPU, from an empty cache, recorded.

``python -m experiments.verl_cpu_recipes`` (``make results NAME=verl_cpu_recipes``) points
``RLVR_CACHE`` at an empty ``<work>/cache`` and runs, one ``python -m recipes.run engine=verl``
each, as a user types it:

- ``<recipe>``: each recipe of ``recipes`` for ``steps`` steps at its laptop profile (the first run
  builds the laptop base model, the cold start and the distillation teacher as a local run would);
  R1-Zero's reference reset (``r1_zero``, ``r1_reasoning``) every step, so the run is two segments
  joined by ``verl.model_merger``;
- ``world2``: ``grpo`` at world size 2 (two gloo FSDP2 ranks, two rollout replicas);
- ``resume``: ``grpo`` again in the first run's directory with one more step: it resumes at the
  checkpoint and runs step ``steps + 1`` only.

Per run: exit code, wall seconds, the steps logged, the median ``timing_s/step`` of steps 2.. and of
each phase veRL timed, the last step's loss, gradient norm, reward (and the critic's loss, KL loss)
and whether every logged value is finite; the run's one ``error:`` line on failure. Recorded in
``results/verl_cpu_recipes/latest.json`` (``core.results``), rendered by ``make docs`` into
docs/engines.md. Not covered: learning (2 steps), a GPU.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import results
from core.cli import hydra_main

#: What each step must log, finite, and what the record keeps of the last step.
REQUIRED = ("actor/pg_loss", "actor/grad_norm", "critic/score/mean")
KEPT = (
    *REQUIRED,
    "critic/vf_loss",
    "actor/kl_loss",
    "response_length/mean",
    "training/rollout_probs_diff_max",
)
PHASES = (
    "gen",
    "old_log_prob",
    "ref",
    "values",
    "adv",
    "update_critic",
    "update_actor",
    "update_weights",
    "step",
)


def read_steps(path: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            out.setdefault(int(row["step"]), {}).update(row["data"])
    return out


def run(name: str, args: list[str], run_dir: Path, env: dict[str, str], logs: Path) -> dict[str, Any]:
    """One ``recipes.run engine=verl`` and its record."""
    cmd = [sys.executable, "-m", "recipes.run", "engine=verl", *args, f"run_dir={run_dir}"]
    t0 = time.time()
    with open(logs / f"{name}.log", "w") as f:
        code = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    wall = time.time() - t0
    text = (logs / f"{name}.log").read_text(errors="replace")
    steps = read_steps(run_dir / "metrics.jsonl")
    trained = sorted(s for s, v in steps.items() if "timing_s/step" in v)
    last = steps[trained[-1]] if trained else {}
    finite = all(
        isinstance(v, (int, float)) and math.isfinite(v)
        for s in trained
        for k, v in steps[s].items()
        if isinstance(v, (int, float)) or v is None
    )
    phases = {
        p: round(statistics.median(steps[s][f"timing_s/{p}"] for s in trained[1:] or trained), 4)
        for p in PHASES
        if all(f"timing_s/{p}" in steps[s] for s in trained) and trained
    }
    return {
        "command": " ".join(["python -m recipes.run engine=verl", *args]),
        "code": code,
        "wall_s": round(wall, 1),
        "steps": trained,
        "median_phase_s": phases,
        "last": {k: last.get(k) for k in KEPT if k in last},
        "required_finite": all(
            isinstance(steps[s].get(k), (int, float)) and math.isfinite(steps[s][k])
            for s in trained
            for k in REQUIRED
        ),
        "all_finite": finite,
        "segments": 1 + len(list((run_dir / "ref_reset").glob("step_*"))),
        "resumed": "Load from checkpoint folder" in text or "Resuming from" in text,
        "error": next((ln for ln in text.splitlines() if ln.startswith("error:")), ""),
    }


def command(a: DictConfig) -> int:
    experiment = str(a.results)
    steps = int(a.steps)
    design = {"recipes": list(a.recipes), "steps": steps, "extra": ["world2", "resume"]}
    results.write_experiment(experiment, design=design)
    work = Path(str(a.work)).resolve()
    if work.exists():
        shutil.rmtree(work)
    (work / "logs").mkdir(parents=True)
    env = {**os.environ, "RLVR_CACHE": str(work / "cache")}
    short = [
        f"trainer.total_training_steps={steps}",
        f"trainer.test_freq={steps}",
        f"trainer.save_freq={steps}",
    ]
    rows: dict[str, dict[str, Any]] = {}
    for recipe in a.recipes:
        extra = ["rlvr.ref_reset_steps=1"] if recipe in ("r1_zero", "r1_reasoning") else []
        rows[str(recipe)] = run(
            str(recipe), [f"recipe={recipe}", *short, *extra], work / str(recipe), env, work / "logs"
        )
        print(
            f"[verl_cpu_recipes] {recipe}: exit {rows[str(recipe)]['code']}, {rows[str(recipe)]['wall_s']} s",
            flush=True,
        )
    rows["world2"] = run(
        "world2", ["recipe=grpo", "trainer.n_gpus_per_node=2", *short], work / "world2", env, work / "logs"
    )
    more = [
        f"trainer.total_training_steps={steps + 1}",
        f"trainer.test_freq={steps + 1}",
        f"trainer.save_freq={steps + 1}",
    ]
    if "grpo" in rows:
        rows["resume"] = run("resume", ["recipe=grpo", *more], work / "grpo", env, work / "logs")
    for name in ("world2", "resume"):
        if name in rows:
            print(
                f"[verl_cpu_recipes] {name}: exit {rows[name]['code']}, {rows[name]['wall_s']} s", flush=True
            )
    out = {"settings": {"steps": steps, "recipes": list(a.recipes)}, "runs": rows}
    print(f"recorded {results.write_table(experiment, 'latest', out)}")
    return 0 if all(r["code"] == 0 for r in rows.values()) else 1


main = hydra_main("command", "verl_cpu_recipes", command)


if __name__ == "__main__":
    main()
