"""veRL's own trainer on this CPU against the local engine, and the CPU rollout backend batched against
one request at a time; each side by side in one invocation.

1. **Engines, per step** (``rounds`` x, alternating): the same recipe (``recipe``, at its laptop
   profile, ``steps`` steps, held-out evaluation at the start and the end) through
   ``python -m recipes.run engine=local`` and ``engine=verl``. Per step, the phases each engine times
   (veRL's ``timing_s/*``: gen, old_log_prob, ref, adv, update_actor, update_weights; the local
   engine's: gen, update_actor), medians over steps 2.. (step 1 pays warm-up); per run, the
   command's wall time and what is not a step (start-up, the two evaluations, shutdown). Ratios
   veRL/local per phase that both time, on the wall clock (the trainer's work is spread over Ray
   processes: no single process's CPU clock holds it).
2. **The rollout backend** (``rollout_rounds`` x, alternating): one
   :class:`verl_cpu.server.CPURolloutServer` in this process on the recipe's model, serving
   ``prompts`` held-out prompts x ``rollout.n`` samples at T=1 -- all sent at once, as veRL's agent
   loop sends a step's requests (batched), and each awaited before the next (one at a time) -- and
   the project's sampler called directly on the same prompts (:func:`core.sampler.generate`: the
   server's batched decode without the server). Generated tokens per second, wall and CPU.

Recorded in ``results/bench_verl_cpu/latest.json`` (``core.results``), rendered into
docs/engines.md by ``make docs``. A Hydra app (``conf/command/bench_verl_cpu.yaml``)::

    python -m benchmarks.bench_verl_cpu [recipe=r1_zero] [rounds=2] [steps=8] [rollout_rounds=3] [prompts=16]

Not measured: a GPU (no number here is one), veRL's trainer at world size 2 (the machine has 2 cores).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from omegaconf import DictConfig

from core import results
from core.cli import hydra_main

ENGINES = ("local", "verl")
#: Phases as each engine names them: label -> metric key.
PHASES = {
    "gen": "timing_s/gen",
    "old_log_prob": "timing_s/old_log_prob",
    "ref": "timing_s/ref",
    "adv": "timing_s/adv",
    "update_actor": "timing_s/update_actor",
    "update_weights": "timing_s/update_weights",
    "step": "timing_s/step",
}


def run_engine(engine: str, recipe: str, steps: int, run_dir: Path, threads: int) -> dict[str, Any]:
    """One run of ``recipe`` on ``engine``; its wall seconds and per-step phase times."""
    args = [
        f"recipe={recipe}",
        f"engine={engine}",
        f"trainer.total_training_steps={steps}",
        f"trainer.test_freq={steps}",
        "trainer.save_freq=-1",
        f"local.threads={threads}",
        "local.progress=false",
        f"run_dir={run_dir}",
    ]
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "recipes.run", *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise RuntimeError(f"{engine} run failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    by_step: dict[int, dict[str, float]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_step.setdefault(int(row["step"]), {}).update(row["data"])
    per = {
        label: [by_step[s][key] for s in range(1, steps + 1) if key in by_step.get(s, {})]
        for label, key in PHASES.items()
    }
    testing = sum(v.get("timing_s/testing", 0.0) for v in by_step.values())
    return {"wall_s": wall, "phases_s": per, "steps_s": sum(per["step"]), "testing_s": testing}


def engines(a: DictConfig, work: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for r in range(int(a.rounds)):
        for engine in ENGINES if r % 2 == 0 else ENGINES[::-1]:
            res = run_engine(engine, str(a.recipe), int(a.steps), work / f"{engine}-{r}", int(a.threads))
            runs[engine].append(res)
            print(
                f"[bench] round {r} {engine}: {res['wall_s']:.1f} s wall, steps {res['steps_s']:.1f} s",
                flush=True,
            )
    med: dict[str, dict[str, float]] = {}
    for engine, rs in runs.items():
        phases = {
            label: statistics.median(x for res in rs for x in res["phases_s"][label][1:])
            for label in PHASES
            if any(res["phases_s"][label][1:] for res in rs)
        }
        phases["outside_steps"] = statistics.median(res["wall_s"] - res["steps_s"] for res in rs)
        phases["wall"] = statistics.median(res["wall_s"] for res in rs)
        med[engine] = phases
    both = [k for k in med["verl"] if k in med["local"]]
    return {
        "runs": runs,
        "median_s": med,
        "ratios": {f"verl/local {k}": med["verl"][k] / med["local"][k] for k in both},
    }


def rollout(a: DictConfig) -> dict[str, Any]:
    """Tokens/s of the CPU rollout server batched and one at a time, and of the sampler it wraps."""
    import torch  # the rollout arms only: the engine arms run in subprocesses

    from core import model as models  # with torch, as above
    from core.compose import compose  # Hydra, veRL: the rollout arms only
    from core.data import load_prompts  # as above
    from core.sampler import generate  # as above
    from recipes.local import ensure_inputs  # the model builders: the rollout arms only
    from verl_cpu.server import CPURolloutServer  # torch, transformers: the rollout arms only

    cfg = compose([f"recipe={a.recipe}", "engine=local", "scale=laptop_base"])
    path = ensure_inputs(cfg)
    torch.set_num_threads(int(a.threads))
    _, tok = models.load(path)
    n, max_new = int(cfg.actor_rollout_ref.rollout.n), int(cfg.data.max_response_length)
    prompts = [
        p.ids
        for p in load_prompts(cfg.data.val_files, tok, int(cfg.data.max_prompt_length))[: int(a.prompts)]
    ]
    conf = SimpleNamespace(
        prompt_length=int(cfg.data.max_prompt_length), response_length=max_new, max_model_len=None, seed=0
    )
    server = CPURolloutServer(conf, SimpleNamespace(local_path=str(path)))
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
    reqs = [p for p in prompts for _ in range(n)]

    async def batched() -> int:
        outs = await asyncio.gather(*[server.generate(p, dict(params)) for p in reqs])
        return sum(len(o.token_ids) for o in outs)

    async def one_at_a_time() -> int:
        return sum([len((await server.generate(p, dict(params))).token_ids) for p in reqs])

    def direct() -> int:
        with torch.inference_mode():
            out = generate(
                server.model, prompts, n, max_new, server.stops, server.pad_id, generator=server.generator
            )
        return int(out.response_mask.sum())

    arms = {
        "batched": lambda: asyncio.run(batched()),
        "one_at_a_time": lambda: asyncio.run(one_at_a_time()),
        "sampler": direct,
    }
    rows: dict[str, list[dict[str, float]]] = {k: [] for k in arms}
    for r in range(int(a.rollout_rounds)):
        for name, fn in arms.items() if r % 2 == 0 else list(arms.items())[::-1]:
            w0, c0 = time.perf_counter(), time.process_time()
            tokens = fn()
            rows[name].append(
                {"tokens": tokens, "wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0}
            )
    tps = {
        clock: {
            name: statistics.median(x["tokens"] / x[f"{clock}_s"] for x in xs) for name, xs in rows.items()
        }
        for clock in ("wall", "cpu")
    }
    return {
        "requests": len(reqs),
        "max_new_tokens": max_new,
        "model": str(path),
        "rounds": rows,
        "tokens_per_s": tps,
        "ratios": {
            clock: {
                "batched/one_at_a_time": tps[clock]["batched"] / tps[clock]["one_at_a_time"],
                "batched/sampler": tps[clock]["batched"] / tps[clock]["sampler"],
            }
            for clock in tps
        },
    }


def command(a: DictConfig) -> int:
    """Both measurements, printed and recorded."""
    experiment = "bench_verl_cpu"
    results.write_experiment(experiment, design={"recipe": str(a.recipe), "engines": list(ENGINES)})
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    roll = rollout(a)
    print(
        f"[bench] rollout tokens/s (wall): {roll['tokens_per_s']['wall']}; ratios {roll['ratios']['wall']}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench_verl_cpu-") as tmp:
        eng = engines(a, Path(tmp))
    for engine, med in eng["median_s"].items():
        print(f"[bench] {engine}: " + ", ".join(f"{k} {v:.3f} s" for k, v in med.items()))
    out = {
        "settings": {k: a[k] for k in ("recipe", "rounds", "steps", "rollout_rounds", "prompts", "threads")},
        "engines": eng,
        "rollout": roll,
    }
    print(f"recorded {results.write_table(experiment, 'latest', out)}")
    return 0


main = hydra_main("command", "bench_verl_cpu", command)


if __name__ == "__main__":
    main()
