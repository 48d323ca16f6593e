"""Overhead of the offline difficulty filter vs generating the same samples alone.

``python -m benchmarks.bench_data_filter [model=<hf dir>] [data=<task>] [params.<k>=<v>]
[prompts=128] [n=16] [max_new_tokens=48] [rounds=3]`` (a Hydra app: ``conf/command/bench_data_filter.yaml``)

Interleaves, per round: (a) pure generation — the same generator, the same chunks and per-chunk
seeds, nothing else; (b) the whole filter (``data_pipelines.filter.run`` on a fresh cache:
hashing, sampling, scoring with ``rewards.compute_score``, shard writes, aggregation, filtered /
control / SFT parquet, histogram PNG, veRL load checks). Overhead = (b - a) / a, medians over
rounds, in wall time and in this process's CPU time (sampling runs on one thread, so CPU time
is the load-independent figure on a shared machine; reward worker processes, used for SymPy
checks, are not in it). The filter's own split of its time (generate / score / write / per run)
is printed and recorded (``own_work``): scoring and shard writes grow with the samples; the output
sets with veRL's load checks, the histogram and the input's hash are paid once per run, so their
share depends on the job's size (rendered in docs/data.md).
Default model: the local engine's cold-start checkpoint (``recipe=dapo scale=laptop``, arithmetic:
realistic answers to score), from ``$RLVR_CACHE``, built on first use; the record names its build key
and weights hash. Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn

from analysis.results_io import model_key
from core.cli import hydra_main
from core.compose import CONF_DIR, compose
from core.data import read_rows
from core.results import write_table
from data_pipelines.filter import _chunk_seed, run
from data_pipelines.generation import SamplerGenerator, SamplingParams
from data_pipelines.io import write_rows
from data_pipelines.tasks import TASKS
from recipes.local.coldstart import ensure_model
from recipes.local.data import ensure_task_files


def _default_model() -> tuple[Path, str]:
    """The local engine's cold-start checkpoint (``recipe=dapo scale=laptop``: the SFT'd model on
    arithmetic, realistic answers to score), from the run cache (``$RLVR_CACHE``), built on first use
    as the engine builds it -- so the record names a model anyone can rebuild, by its key."""
    cfg = compose(["recipe=dapo", "scale=laptop"])
    ensure_task_files(cfg)
    return ensure_model(cfg, get_custom_reward_fn(cfg)), str(cfg.local.task.name)


def command(args: DictConfig) -> int:
    """Time pure generation and the whole filter, interleaved; print the overheads."""
    tmp = Path(tempfile.mkdtemp(prefix="bench_filter_"))
    model, task = (Path(str(args.model)), "arithmetic") if args.model else _default_model()
    task = str(args.data or task)
    prompts, n, rounds = int(args.prompts), int(args.n), int(args.rounds)
    sampling = {"max_new_tokens": int(args.max_new_tokens), "batch_prompts": 8, "cpu_threads": 1}
    data = tmp / "train.parquet"
    params = OmegaConf.to_container(args.params)
    write_rows(TASKS.get(task)(n=prompts, seed=0, split="train", **params), data)
    rows = read_rows(data)
    gen = SamplerGenerator(model, SamplingParams(**sampling), "local")
    base = OmegaConf.load(CONF_DIR / "datagen/filter.yaml")
    base.pop("hydra")
    base.pop("defaults")
    base.merge_with({"data": str(data), "model": str(model), "n": n, "progress": False, "sampling": sampling})
    chunks = [list(range(s, min(s + 8, prompts))) for s in range(0, prompts, 8)]

    def pure() -> tuple[float, float]:
        t, c0 = time.perf_counter(), time.process_time()
        for c, idx in enumerate(chunks):
            gen.generate([rows[i]["prompt"] for i in idx], n, _chunk_seed(0, c))
        return time.perf_counter() - t, time.process_time() - c0

    def pipeline(r: int) -> tuple[float, float, dict]:
        cfg = base.copy()
        cfg.out = str(tmp / f"out{r}")
        t, c0 = time.perf_counter(), time.process_time()
        summary = run(cfg, generator=gen)
        return time.perf_counter() - t, time.process_time() - c0, summary

    print(
        f"model={model} task={task} {params} prompts={prompts} n={n} max_new_tokens={sampling['max_new_tokens']}"
    )
    pipeline(-1)  # warm-up: imports, first-call kernels, rewards workers
    pure()
    a_times, b_times, a_cpu, b_cpu, last = [], [], [], [], {}
    for r in range(rounds):
        wall, cpu = pure()
        a_times.append(wall)
        a_cpu.append(cpu)
        wall, cpu, last = pipeline(r)
        b_times.append(wall)
        b_cpu.append(cpu)
        print(
            f"round {r}: generation alone {a_times[-1]:.2f} s wall / {a_cpu[-1]:.2f} s CPU, "
            f"whole filter {wall:.2f} s wall / {cpu:.2f} s CPU"
        )
    setup = {
        "model": str(model),
        "model_key": model_key(str(model)),  # build key and weights sha256 (None: a model not built here)
        "task": task,
        "params": params,
        "prompts": prompts,
        "n": n,
        "max_new_tokens": sampling["max_new_tokens"],
        "rounds": rounds,
    }
    _report(setup, a_times, a_cpu, b_times, b_cpu, last)
    return 0


def _report(
    setup: dict,
    a_times: list[float],
    a_cpu: list[float],
    b_times: list[float],
    b_cpu: list[float],
    last: dict,
) -> None:
    """Print the medians, overheads and the filter's own split; record them in results/bench_data_filter/."""
    a, b = statistics.median(a_times), statistics.median(b_times)
    ac, bc = statistics.median(a_cpu), statistics.median(b_cpu)
    print(
        f"\ngeneration alone: {a:.2f} s wall, {ac:.2f} s CPU (median of {len(a_times)})   "
        f"whole filter: {b:.2f} s wall, {bc:.2f} s CPU"
    )
    print(
        f"pipeline overhead, wall: {b - a:+.2f} s = {(b - a) / a:+.1%} of generation (noisy on a shared machine)"
    )
    print(f"pipeline overhead, CPU:  {bc - ac:+.2f} s = {(bc - ac) / ac:+.1%} of generation (target <= 10%)")
    t = last["timings"]
    rest = t["total_s"] - t["generate_s"] - t["score_s"] - t["write_s"]
    print(
        f"inside the filter (last round): generate {t['generate_s']:.2f} s, score {t['score_s']:.2f} s, "
        f"shard writes {t['write_s']:.2f} s, per run {rest:.2f} s (output sets with veRL's load checks "
        f"{t.get('outputs_s', float('nan')):.2f} s, plot {t.get('plot_s', float('nan')):.2f} s, the rest: "
        "input hash and checks)"
    )
    own = t["total_s"] - t["generate_s"]
    print(
        f"the filter's own work (everything but generate calls): {own:.2f} s = {own / t['generate_s']:.1%} "
        f"of its generation time (same process, no cross-run noise)"
    )
    print(
        f"samples: {last['samples']}, mean pass rate {last['pass_rate']['mean']:.3f}, histogram {last['histogram']}"
    )
    path = write_table(
        "bench_data_filter",
        "latest",
        {
            "setup": setup,
            "generation_alone": {"wall_s": a_times, "cpu_s": a_cpu},
            "whole_filter": {"wall_s": b_times, "cpu_s": b_cpu},
            "overhead": {"wall": (b - a) / a, "cpu": (bc - ac) / ac, "target_cpu": 0.10},
            "inside_filter_last_round": t,
            # the filter's own work (wall, same process): per sample (scoring, shard writes) as a share
            # of its generation, and per run (input hash and checks, output sets with veRL's load checks,
            # the plot), which a larger job spreads thinner
            "own_work": {
                "per_sample_s": t["score_s"] + t["write_s"],
                "per_sample_share": (t["score_s"] + t["write_s"]) / t["generate_s"],
                "per_run_s": rest,
                "per_run_share": rest / t["generate_s"],
            },
            "samples": last["samples"],
        },
    )
    print(f"wrote {path}")


main = hydra_main("command", "bench_data_filter", command)


if __name__ == "__main__":
    main()
