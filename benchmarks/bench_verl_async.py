"""veRL's async trainer modes on this CPU against its sync trainer: the same recipe, side by side.

Each mode of :data:`verl_cpu.staleness.MODES` (``trainer.v1.trainer_mode``: ``sync``, ``colocate_async``,
``separate_async`` -- the last with one standalone rollout replica fed by the ``cpu_gloo``
checkpoint engine, :mod:`verl_cpu.checkpoint_engine`) runs ``recipe`` at its laptop profile for
``steps`` steps through ``python -m recipes.run engine=verl``, ``rounds`` x, the order alternating
per round, on one model: a random tiny Qwen2 (:data:`SPEC`, byte tokenizer) built here, so the
numbers measure the trainer's machinery, not a trained model (its rewards, and so its gradients, are 0). Per run: the command's wall seconds, each step's seconds (``timing_s/step``) and phases,
the trained samples per second over steps 2.. (prompts x ``rollout.n`` per step / the steps'
seconds; step 1 pays warm-up), the load average before and after, and the staleness of the weights
each step's batch was generated with, from the rollout's version stamps (:mod:`verl_cpu.staleness`,
checked against ``trainer.v1.sampler.max_off_policy_threshold``). Medians over rounds, and each
mode's throughput / sync's.

Recorded in ``results/bench_verl_async/latest.json`` (``core.results``); ``make results
NAME=bench_verl_async``. A Hydra app (``conf/command/bench_verl_async.yaml``)::

    python -m benchmarks.bench_verl_async [recipe=grpo] [rounds=2] [steps=4] [threshold=2]

Not measured: a GPU (no number here is one: on 2 shared cores the modes' processes compete for the
same cores, so an async mode's overlap of generation and training buys little here), world size 2.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import results
from core.cli import hydra_main
from verl_cpu import staleness

#: The tiny model every run trains (``core.model.ModelSpec`` fields), built in the benchmark's work folder.
SPEC = (32, 2, 4, 2, 64, 256)
PHASES = ("step", "gen", "old_log_prob", "ref", "adv", "update_actor", "update_weights")


def mode_args(mode: str, threshold: int) -> list[str]:
    """The overrides that run ``mode`` with veRL's staleness bound ``threshold``."""
    return [*staleness.MODES[mode], f"{staleness.THRESHOLD_KEY}={threshold}"]


def run_mode(mode: str, a: DictConfig, run_dir: Path, model: Path) -> dict[str, Any]:
    """One run of the recipe in ``mode``: wall, per-step seconds and phases, throughput, staleness."""
    steps = int(a.steps)
    args = [
        "engine=verl",
        f"recipe={a.recipe}",
        f"actor_rollout_ref.model.path={model}",
        f"trainer.total_training_steps={steps}",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.val_before_train=false",
        f"local.threads={a.threads}",
        f"run_dir={run_dir}",
        *[str(x) for x in a.extra],
        *mode_args(mode, int(a.threshold)),
    ]
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "recipes.run", *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"{mode} run failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    by_step: dict[int, dict[str, float]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_step.setdefault(int(row["step"]), {}).update(row["data"])
    phases = {
        ph: [
            by_step[s][f"timing_s/{ph}"]
            for s in range(1, steps + 1)
            if f"timing_s/{ph}" in by_step.get(s, {})
        ]
        for ph in PHASES
    }
    cfg = OmegaConf.load(run_dir / "verl_config.yaml")
    samples = int(cfg.data.train_batch_size) * int(cfg.actor_rollout_ref.rollout.n)
    stale = staleness.read(run_dir) if mode != "sync" else []
    return {
        "wall_s": wall,
        "phases_s": phases,
        "samples_per_step": samples,
        "samples_per_s": samples * len(phases["step"][1:]) / sum(phases["step"][1:]),
        "load_avg_before": [round(x, 2) for x in load0],
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "staleness_worst": [st.worst for st in stale],
        "staleness_errors": staleness.check(stale, int(a.threshold), steps) if mode != "sync" else [],
    }


def command(a: DictConfig) -> int:
    """Every mode, alternating, printed and recorded."""
    experiment = "bench_verl_async"
    modes = list(staleness.MODES)
    results.write_experiment(experiment, design={"recipe": str(a.recipe), "modes": modes})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    from core import model as models  # torch: building the model only

    with tempfile.TemporaryDirectory(prefix="bench_verl_async-") as tmp:
        model = models.build_checkpoint(Path(tmp) / "model", models.ModelSpec(*SPEC), "byte", seed=0)
        for r in range(int(a.rounds)):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                res = run_mode(mode, a, Path(tmp) / f"{mode}-{r}", model)
                runs[mode].append(res)
                print(
                    f"[bench] round {r} {mode}: {res['wall_s']:.1f} s wall, {res['samples_per_s']:.2f} samples/s, "
                    f"staleness {res['staleness_worst']}, load {res['load_avg_before'][0]}",
                    flush=True,
                )
    median = {
        m: {
            "samples_per_s": statistics.median(x["samples_per_s"] for x in rs),
            "step_s": statistics.median(s for x in rs for s in x["phases_s"]["step"][1:]),
            "wall_s": statistics.median(x["wall_s"] for x in rs),
            "max_staleness": max((s for x in rs for s in x["staleness_worst"]), default=0),
        }
        for m, rs in runs.items()
    }
    ratios = {f"{m}/sync": median[m]["samples_per_s"] / median["sync"]["samples_per_s"] for m in modes[1:]}
    errors = {m: [e for x in rs for e in x["staleness_errors"]] for m, rs in runs.items()}
    for m, med in median.items():
        print(f"[bench] {m}: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    out = {
        "settings": {k: a[k] for k in ("recipe", "rounds", "steps", "threshold", "threads")}
        | {"extra": list(a.extra), "model": f"random tiny Qwen2 {SPEC}, byte tokenizer"},
        "runs": runs,
        "median": median,
        "ratios": ratios,
        "staleness_errors": errors,
        "machine_note": "shared machine: other jobs ran on the same 2 cores (see each run's load average)",
    }
    print(f"recorded {results.write_table(experiment, 'latest', out)}")
    return 1 if any(errors.values()) else 0


main = hydra_main("command", "bench_verl_async", command)


if __name__ == "__main__":
    main()
