"""What the CPU arithmetic pins cost: the base model's pretraining steps and decoding, pinned and not.

:mod:`core.numerics` pins ATen's kernels to AVX2 (``ATEN_CPU_CAPABILITY=avx2``) and oneMKL to its
reproducible SSE2 branch (``MKL_CBWR=COMPATIBLE``) so a build computes the same floats on every
x86-64 processor; the processor's own kernels (AVX-512 where it has them, oneMKL's own dispatch) are
expected to be faster. This measures by how much, on this machine, in four arms that differ only in
those two variables:

- ``pinned``: both pins (what every command of the project runs under);
- ``aten_pin``: ATen pinned, oneMKL on its own dispatch (``MKL_CBWR=AUTO``);
- ``mkl_pin``: ATen on the processor's own choice, oneMKL pinned;
- ``own``: neither -- the processor's own choice, which torch reports in a process that never
  imported :mod:`core` (so ``own`` is what torch picks here, not a guess).

The pins are read when torch first computes, so each arm runs in its own process
(``python -m benchmarks.bench_numerics --worker``), with one torch thread, the work a first run does:
``steps`` steps of the laptop base model's pretraining (``scale=laptop_base``:
:func:`recipes.local.pretrain.setup` and ``Build.step``, the build's own corpus, model, optimizer and
batches) after one warm-up step, and ``decodes`` calls of the engine's sampler
(:func:`core.sampler.generate`: 8 prompts x 8 samples, 64 new tokens) from the weights it reached.
Rounds alternate the arms (the order rotates each round) so load changes hit all of them; reported
are medians on both clocks -- wall and CPU of the worker process -- and each arm's ratio to ``own``
(the pins' cost: > 1 is slower). Each arm also reports a sha256 of its weights after the steps: arms
under other kernels reach other weights (the reason for the pins), and one arm's rounds agree.

Not measured: RL steps (their generation is the decoding above, their update the steps above; the
engine's full step would need a base model built under each arm's kernels), more than one thread,
other processors. Records ``results/bench_numerics/latest.json`` (``core.results``), which
``docs/first_run.md`` renders. A Hydra app (``conf/command/bench_numerics.yaml``)::

    python -m benchmarks.bench_numerics [rounds=3] [steps=20] [decodes=4]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from hashlib import sha256
from typing import Any

import torch
from omegaconf import DictConfig

from analysis.render import Table
from core import numerics, results
from core.cli import UsageError, hydra_main
from core.compose import compose
from core.numerics import PINS
from core.sampler import generate
from recipes.local import pretrain

#: the arms, in the order they are reported: name -> (ATen's kernels, oneMKL's branch); ``None`` is
#: the processor's own choice
ARMS: dict[str, tuple[str | None, str | None]] = {
    "pinned": (PINS["ATEN_CPU_CAPABILITY"], PINS["MKL_CBWR"]),
    "aten_pin": (PINS["ATEN_CPU_CAPABILITY"], None),
    "mkl_pin": (None, PINS["MKL_CBWR"]),
    "own": (None, None),
}
#: the workloads each worker times
WORKLOADS = ("pretrain step", "decode")


def own_capability() -> str:
    """The ATen kernels torch picks on this processor when nothing pins them (asked in a process that
    imports torch alone, with ``ATEN_CPU_CAPABILITY`` unset), lower-cased as the variable takes it."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip().lower()


def arm_env(arm: str, own: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of ``arm``'s worker: ``base`` (default ``os.environ``) with both variables set.

    >>> e = arm_env("mkl_pin", "avx512", {"PATH": "/bin"})
    >>> e["ATEN_CPU_CAPABILITY"], e["MKL_CBWR"], e["PATH"]
    ('avx512', 'COMPATIBLE', '/bin')
    >>> arm_env("own", "avx2", {})["MKL_CBWR"]
    'AUTO'
    """
    if arm not in ARMS:
        raise UsageError(f"[arm] {arm!r} is not one of {', '.join(ARMS)}")
    aten, mkl = ARMS[arm]
    env = dict(os.environ if base is None else base)
    env["ATEN_CPU_CAPABILITY"] = aten or own
    env["MKL_CBWR"] = mkl or "AUTO"  # oneMKL's default: its own dispatch per processor
    return env


def work(steps: int, decodes: int) -> dict[str, Any]:
    """The worker: time ``steps`` pretraining steps and ``decodes`` sampler calls under the kernels
    this process was started with; the per-call times, the weights' hash and the arithmetic in force."""
    cfg = compose(["recipe=r1_zero", "scale=laptop_base"])
    p = cfg.local.pretrain
    b = pretrain.setup(cfg)
    b.model.train()
    out: dict[str, Any] = {w: {"cpu": [], "wall": []} for w in WORKLOADS}

    def timed(workload: str, fn: Any) -> None:
        c, w = time.process_time(), time.perf_counter()
        fn()
        out[workload]["cpu"].append(time.process_time() - c)
        out[workload]["wall"].append(time.perf_counter() - w)

    b.step(int(p.batch_size), int(p.chunks))  # warm-up: first-call allocations, lazy kernel loads
    for _ in range(steps):
        timed("pretrain step", lambda: b.step(int(p.batch_size), int(p.chunks)))
    weights = sha256(
        b"".join(t.detach().contiguous().numpy().tobytes() for t in b.model.state_dict().values())
    )
    b.model.eval()
    prompts = [s[:16] for s in b.seqs[:8]]
    gen = torch.Generator().manual_seed(0)

    def decode() -> None:
        with torch.no_grad():
            generate(b.model, prompts, 8, 64, b.tok.eos_token_id, b.tok.pad_token_id, generator=gen)

    decode()  # warm-up
    for _ in range(decodes):
        timed("decode", decode)
    return {**out, "weights_sha256": weights.hexdigest(), "numerics": numerics.numerics()}


def run_worker(arm: str, own: str, steps: int, decodes: int) -> dict[str, Any]:
    """One :func:`work` in a fresh process under ``arm``'s kernels."""
    cmd = [sys.executable, "-m", "benchmarks.bench_numerics", "--worker", str(steps), str(decodes)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=arm_env(arm, own))
    if out.returncode != 0:
        raise RuntimeError(f"[bench_numerics] arm {arm}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians per workload, clock and arm over every round's calls; each arm's ratio to ``own``;
    per arm, the arithmetic it ran under and whether its rounds reached the same weights.

    >>> r = {"own": [{"decode": {"cpu": [1.0, 3.0], "wall": [2.0]}, "weights_sha256": "a", "numerics": {}}],
    ...      "pinned": [{"decode": {"cpu": [3.0], "wall": [4.0]}, "weights_sha256": "b", "numerics": {}}]}
    >>> s = summarise(r)
    >>> s["median_s"]["decode"]["cpu"], s["ratio_to_own"]["decode"]["cpu"]["pinned"]
    ({'own': 2.0, 'pinned': 3.0}, 1.5)
    """
    med: dict[str, Any] = {}
    ratio: dict[str, Any] = {}
    workloads = [w for w in WORKLOADS if any(w in r for rs in runs.values() for r in rs)]
    for w in workloads:
        med[w], ratio[w] = {}, {}
        for clock in ("cpu", "wall"):
            med[w][clock] = {
                a: statistics.median([x for r in rs for x in r[w][clock]]) for a, rs in runs.items()
            }
            own = med[w][clock].get("own")
            ratio[w][clock] = {a: m / own for a, m in med[w][clock].items() if own}
    arms = {
        a: {
            "numerics": rs[0]["numerics"],
            "weights_sha256": sorted({r["weights_sha256"] for r in rs}),
        }
        for a, rs in runs.items()
    }
    return {"median_s": med, "ratio_to_own": ratio, "arms": arms}


def report(summary: dict[str, Any]) -> Table:
    """One row per workload and clock: each arm's median seconds per call and its ratio to ``own``."""
    names = [a for a in ARMS if a in summary["arms"]]  # the declared order (a record's keys are sorted)
    head = ["workload", "clock", *[f"{a} s" for a in names], *[f"{a}/own" for a in names if a != "own"]]
    rows = []
    for w in [w for w in WORKLOADS if w in summary["median_s"]]:
        for clock in ("cpu", "wall"):
            med = summary["median_s"][w][clock]
            r = summary["ratio_to_own"][w][clock]
            rows.append(
                [w, clock, *[f"{med[a]:.4f}" for a in names], *[f"{r[a]:.2f}" for a in names if a != "own"]]
            )
    return Table(head, rows)


def command(cfg: DictConfig) -> int:
    rounds, steps, decodes = int(cfg.rounds), int(cfg.steps), int(cfg.decodes)
    if rounds < 1 or steps < 1 or decodes < 1:
        raise UsageError("[rounds] [steps] [decodes] each at least 1, e.g. rounds=3 steps=20 decodes=4")
    own = own_capability()
    arms = list(ARMS)
    print(
        f"[bench_numerics] {rounds} rounds x {len(arms)} arms ({', '.join(arms)}); the processor's own ATen "
        f"kernels: {own}",
        flush=True,
    )
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    for i in range(rounds):
        for arm in arms[i % len(arms) :] + arms[: i % len(arms)]:
            runs[arm].append(run_worker(arm, own, steps, decodes))
            print(f"[bench_numerics] round {i + 1}/{rounds}: {arm} done", flush=True)
    summary = summarise(runs)
    print(report(summary).markdown())
    for arm, a in summary["arms"].items():
        print(
            f"[bench_numerics] {arm}: {a['numerics']}, weights {', '.join(x[:12] for x in a['weights_sha256'])}"
        )
    out = {
        "rounds": rounds,
        "steps": steps,
        "decodes": decodes,
        "threads": 1,
        "own_capability": own,
        "runs": runs,
        **summary,
        "machine": results.cpu(),
    }
    if cfg.record:
        print(f"recorded {results.write_table('bench_numerics', 'latest', out)}")
    return 0


main = hydra_main("command", "bench_numerics", command)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(work(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
