"""Analysis benchmarks (not timed tests): ``python -m benchmarks.bench_analysis [pairs=1000000] [runs=20] [steps=1000]``
(a Hydra app: ``conf/command/bench_analysis.yaml``).

1. ``analysis.pass_at_k`` over 10^6 (n, c, k) triples, two workloads: the usual evaluation grid
   (n=64, k in {1,4,16,64}) and a wide one (n up to 1,024, any c, k); target < 1 s each.
   Also checks 2,000 random triples against exact integer arithmetic (``math.comb``).
2. ``python -m analysis.report`` over ``runs`` synthetic runs × ``steps`` steps (veRL-format
   metrics.jsonl with 12 keys per step, rollout dumps every 100 steps), 4 arms × 5 seeds;
   target < 30 s end to end (reading, aggregation, plots, HTML/Markdown).
Prints one line per measurement and ``PASS``/``FAIL`` against the target.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from analysis import report
from analysis.metrics import pass_at_k
from analysis.synthetic import write_run
from core.cli import hydra_main, load
from core.results import write_table


def bench_pass_at_k(pairs: int, out: dict) -> bool:
    rng = np.random.default_rng(0)
    ok = True
    workloads = {
        "eval grid n=64": (np.full(pairs, 64), rng.integers(0, 65, pairs), rng.choice([1, 4, 16, 64], pairs)),
    }
    n = rng.integers(1, 1025, pairs)
    workloads["wide n<=1024"] = (n, rng.integers(0, n + 1), np.minimum(rng.integers(1, 1025, pairs), n))
    for name, (nn, cc, kk) in workloads.items():
        pass_at_k(nn[:1000], cc[:1000], kk[:1000])  # warm-up
        t = time.perf_counter()
        got = pass_at_k(nn, cc, kk)
        dt = time.perf_counter() - t
        idx = rng.choice(pairs, 2000, replace=False)
        exact = np.array(
            [1 - math.comb(int(nn[i] - cc[i]), int(kk[i])) / math.comb(int(nn[i]), int(kk[i])) for i in idx]
        )
        err = float(np.max(np.abs(got[idx] - exact) / np.maximum(exact, 1e-300)))
        good = dt < 1.0 and err < 1e-9
        ok &= good
        out[f"pass_at_k_{name}"] = {"pairs": pairs, "seconds": dt, "max_rel_err": err, "target_s": 1.0}
        print(
            f"pass_at_k {name}: {pairs:,} pairs in {dt:.3f} s, max rel err vs exact {err:.1e} "
            f"-> {'PASS' if good else 'FAIL'} (< 1 s)"
        )
    return ok


def bench_report(runs: int, steps: int, out: dict) -> bool:
    arms = ["none", "k3_0.001", "k3_0.01", "k3_0.05"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "multirun"
        t = time.perf_counter()
        for i in range(runs):
            write_run(
                root / str(i),
                steps=steps,
                seed=i // len(arms),
                overrides=[f"kl={arms[i % len(arms)]}"],
                acc_gain=0.2 + 0.05 * (i % len(arms)),
                dump_every=100,
            )
        t_write = time.perf_counter() - t
        cfg = load("analysis", "report", [f"sweep={root}", "publish=none"])
        t = time.perf_counter()
        doc, files = report.run(cfg)
        dt = time.perf_counter() - t
        n_png = len(list((root / "report").glob("*.png")))
    good = dt < 30
    out["report"] = {
        "runs": runs,
        "steps": steps,
        "arms": len(arms),
        "seconds": dt,
        "pngs": n_png,
        "target_s": 30.0,
    }
    print(
        f"report: {runs} runs x {steps} steps ({len(arms)} arms) in {dt:.2f} s "
        f"({n_png} PNGs; writing the runs took {t_write:.1f} s) -> {'PASS' if good else 'FAIL'} (< 30 s)"
    )
    return good


def command(args: DictConfig) -> int:
    out: dict = {}
    ok = bench_pass_at_k(int(args.pairs), out)
    ok &= bench_report(int(args.runs), int(args.steps), out)
    print(f"wrote {write_table('bench_analysis', 'latest', out)}")
    return 0 if ok else 1


main = hydra_main("command", "bench_analysis", command)


if __name__ == "__main__":
    main()
