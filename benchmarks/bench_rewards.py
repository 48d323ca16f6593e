"""Verifier benchmark: FN/FP rates and latency of our ``math`` verifier vs math-verify and veRL's scorers.

Run: ``python -m benchmarks.bench_rewards`` (``make bench-rewards``). Scores every row of the labelled
table ``tests/rewards/math_table.jsonl`` with each scorer, single-threaded, after one warm-up call,
and prints the false-negative rate (right answers scored 0), false-positive rate (wrong or hacking
answers credited), adversarial rows credited, p50/p99/max latency per call and throughput.

Scorers: ours (``rewards.compute_score``); math-verify 0.9 used as its README shows (gold parsed
from ``\\boxed{gold}``, prediction from the whole response, ``verify``); veRL 0.9.1's
``math_reward``, ``math_dapo`` and ``math_verify`` wrapper. The baselines get the bare gold answer
(our ``gold_answer`` strips MATH solutions / GSM8K ``####`` lines for them). veRL's ``prime_math``
is never called: it runs ``eval()`` on model text.

What it does not do: assert anything (it is a benchmark, not a test) or measure multi-threaded
throughput.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "tests" / "rewards" / "math_table.jsonl"


def _scorers() -> dict[str, Callable[[str, str, str], bool]]:
    import rewards
    from rewards.sources.math import gold_answer

    rewards.warmup()  # start the SymPy worker, as the training engines do before scoring

    def ours(ds: str, resp: str, gold: str) -> bool:
        return bool(rewards.compute_score(ds, resp, gold)["acc"])

    def math_verify(ds: str, resp: str, gold: str) -> bool:
        from math_verify import parse, verify

        g = parse("\\boxed{" + gold_answer(gold) + "}")
        p = parse(resp)
        return bool(g and p and verify(g, p))

    def verl_math_reward(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_reward

        return math_reward.compute_score(resp, gold_answer(gold)) == 1.0

    def verl_math_dapo(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_dapo

        return bool(math_dapo.compute_score(resp, gold_answer(gold))["acc"])

    def verl_math_verify(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_verify as mv

        return mv.compute_score(resp, gold_answer(gold)) == 1.0

    return {
        "ours (rewards.compute_score)": ours,
        "math-verify 0.9 (parse+verify)": math_verify,
        "veRL math_reward": verl_math_reward,
        "veRL math_dapo": verl_math_dapo,
        "veRL math_verify wrapper": verl_math_verify,
    }


def _bench(fn: Callable[[str, str, str], bool], rows: list[dict]) -> dict[str, float]:
    fn("math", r"\boxed{1}", "1")  # warm-up (imports, worker start-up)
    lat: list[float] = []
    fn_n = fp_n = adv_n = 0
    t_all = time.perf_counter()
    for r in rows:
        t = time.perf_counter()
        try:
            got = fn(r["data_source"], r["response"], r["gold"])
        except Exception:  # noqa: BLE001 - a scorer that raises scores 0
            got = False
        lat.append(time.perf_counter() - t)
        if r["label"] and not got:
            fn_n += 1
        if not r["label"] and got:
            fp_n += 1
            adv_n += bool(r["adversarial"])
    total = time.perf_counter() - t_all
    lat.sort()
    pos = sum(r["label"] for r in rows)
    return {
        "FN %": 100 * fn_n / pos,
        "FP %": 100 * fp_n / (len(rows) - pos),
        "adv credited": adv_n,
        "p50 ms": 1000 * statistics.median(lat),
        "p99 ms": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "max ms": 1000 * lat[-1],
        "calls/s": len(rows) / total,
    }


def _arithmetic_hot_path(n: int = 20000) -> dict[str, float]:
    import rewards

    rng = random.Random(0)
    cases = []
    for _ in range(n):
        a, b = rng.randint(0, 9999), rng.randint(0, 9999)
        ans = a + b + (rng.random() < 0.3)
        cases.append((f"<think>{a}+{b}</think><answer>{ans}</answer>", str(a + b)))
    t = time.perf_counter()
    for resp, gold in cases:
        rewards.compute_score("arithmetic", resp, gold)
    per = (time.perf_counter() - t) / n
    return {"us/call": per * 1e6, "calls/s": 1 / per}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="substring: run only scorers whose name contains it")
    args = ap.parse_args()
    rows = [json.loads(line) for line in TABLE.read_text().splitlines()]
    pos = sum(r["label"] for r in rows)
    print(
        f"table: {TABLE.name}: {len(rows)} rows, {pos} correct, {len(rows) - pos} wrong "
        f"({sum(r['adversarial'] for r in rows)} adversarial)\n"
    )
    cols = ["FN %", "FP %", "adv credited", "p50 ms", "p99 ms", "max ms", "calls/s"]
    print(f"| {'scorer':32s} | " + " | ".join(f"{c:>12s}" for c in cols) + " |")
    print("|" + "-" * 34 + "|" + "|".join("-" * 14 for _ in cols) + "|")
    for name, fn in _scorers().items():
        if args.only and args.only not in name:
            continue
        res = _bench(fn, rows)
        cells = [f"{res[c]:12.1f}" if isinstance(res[c], float) else f"{res[c]:12d}" for c in cols]
        print(f"| {name:32s} | " + " | ".join(cells) + " |", flush=True)
    hot = _arithmetic_hot_path()
    print(
        f"\narithmetic hot path (compute_score('arithmetic', ...)): {hot['us/call']:.1f} us/call, {hot['calls/s']:.0f} calls/s"
    )


if __name__ == "__main__":
    main()
