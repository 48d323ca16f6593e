"""Overhead of the offline difficulty filter vs generating the same samples alone.

``python -m benchmarks.bench_data_filter [model=<hf dir>] [data=<task>] [params.<k>=<v>]
[prompts=128] [n=16] [max_new_tokens=48] [rounds=3]``

Interleaves, per round: (a) pure generation — the same generator, the same chunks and per-chunk
seeds, nothing else; (b) the whole filter (``data_pipelines.filter.run`` on a fresh cache:
hashing, sampling, scoring with ``rewards.compute_score``, shard writes, aggregation, filtered /
control / SFT parquet, histogram PNG, veRL load checks). Overhead = (b - a) / a, median over
rounds; the filter's own split of its time (generate / score / write / rest) is printed too.
Default model: the local engine's cold-start checkpoint if one is cached under
``~/.cache/rlvr/models`` (realistic answers to score), else a random tiny model (junk answers,
cheap to score: the overhead is then a lower bound). Not a test: numbers depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]


def _default_model(tmp: Path) -> tuple[Path, str]:
    cached = sorted(Path("~/.cache/rlvr/models").expanduser().glob("*/config.json"))
    if cached:
        return cached[-1].parent, "arithmetic"
    from data_pipelines.local_model import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp / "tiny", seed=0, hidden=128, layers=4), "overtime_pay"


def main(argv: list[str]) -> None:
    from data_pipelines.filter import _chunk_seed, run
    from data_pipelines.generation import HFGenerator, SamplingParams
    from data_pipelines.io import read_rows, write_rows
    from data_pipelines.tasks import TASKS

    args = OmegaConf.from_dotlist(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench_filter_"))
    model, task = (
        (Path(args.model), args.get("data", "arithmetic")) if args.get("model") else _default_model(tmp)
    )
    task = args.get("data", task)
    prompts, n, rounds = int(args.get("prompts", 128)), int(args.get("n", 16)), int(args.get("rounds", 3))
    sampling = {"max_new_tokens": int(args.get("max_new_tokens", 48)), "batch_prompts": 8, "cpu_threads": 1}
    data = tmp / "train.parquet"
    params = OmegaConf.to_container(args.get("params", {})) or {}
    write_rows(TASKS.get(task)(n=prompts, seed=0, split="train", **params), data)
    rows = read_rows(data)
    gen = HFGenerator(model, SamplingParams(**sampling))
    base = OmegaConf.load(REPO / "conf/datagen/filter.yaml")
    base.pop("hydra")
    base.pop("defaults")
    base.merge_with({"data": str(data), "model": str(model), "n": n, "progress": False, "sampling": sampling})
    chunks = [list(range(s, min(s + 8, prompts))) for s in range(0, prompts, 8)]

    def pure() -> float:
        t = time.perf_counter()
        for c, idx in enumerate(chunks):
            gen.generate([rows[i]["prompt"] for i in idx], n, _chunk_seed(0, c))
        return time.perf_counter() - t

    def pipeline(r: int) -> tuple[float, dict]:
        cfg = base.copy()
        cfg.out = str(tmp / f"out{r}")
        t = time.perf_counter()
        summary = run(cfg, generator=gen)
        return time.perf_counter() - t, summary

    print(
        f"model={model} task={task} {params} prompts={prompts} n={n} max_new_tokens={sampling['max_new_tokens']}"
    )
    pipeline(-1)  # warm-up: imports, first-call kernels, rewards workers
    pure()
    a_times, b_times, last = [], [], {}
    for r in range(rounds):
        a_times.append(pure())
        b, last = pipeline(r)
        b_times.append(b)
        print(f"round {r}: generation alone {a_times[-1]:.2f} s, whole filter {b:.2f} s")
    a, b = statistics.median(a_times), statistics.median(b_times)
    t = last["timings"]
    rest = t["total_s"] - t["generate_s"] - t["score_s"] - t["write_s"]
    print(f"\ngeneration alone: {a:.2f} s (median of {rounds})   whole filter: {b:.2f} s")
    print(f"pipeline overhead: {b - a:+.2f} s = {(b - a) / a:+.1%} of generation time (target <= 10%)")
    print(
        f"inside the filter (last round): generate {t['generate_s']:.2f} s, score {t['score_s']:.2f} s, "
        f"shard writes {t['write_s']:.2f} s, rest (hash, outputs, PNG, veRL checks) {rest:.2f} s"
    )
    own = t["total_s"] - t["generate_s"]
    print(
        f"the filter's own work (everything but generate calls): {own:.2f} s = {own / t['generate_s']:.1%} "
        f"of its generation time (same process, no cross-run noise)"
    )
    print(
        f"samples: {last['samples']}, mean pass rate {last['pass_rate']['mean']:.3f}, histogram {last['histogram']}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
