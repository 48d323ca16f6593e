"""Where a local-engine RL step's time goes: decoding vs the update, dense arithmetic vs per-call overhead.

The profile issue 15 item 7 asks for before any speed-up: ``steps`` train steps of ``recipe`` at its
laptop profile (default ``r1_zero`` at ``laptop_base``, the setting of the seed ablations) under
``torch.profiler`` (CPU, one torch thread). Each step runs inside a ``rlvr/step`` range and the
engine's sampling (``Engine.collect``: generation plus reward scoring) inside ``rlvr/gen``; the
update phase is the rest of the step (log-probs, advantages, the loss, backward, optimizer). Per
phase, the profiled CPU time splits into

- **dense arithmetic**: self time of the matrix-product, attention and (log-)softmax kernels
  (:data:`DENSE`), forward and backward;
- **other torch ops**: self time of every other ``aten::`` op (elementwise, indexing, copies,
  reductions: small kernels called many times);
- **outside ops**: the phase's time in no torch op -- Python, the autograd engine's bookkeeping,
  dispatch, the profiler's own cost.

Wall and CPU time per step without the profiler are reported next to it (the engine's
``timing_s/*``), so the profiler's inflation is visible: ``compare_steps`` steps of the engine
(``local.fast=true``, the default) interleaved, step for step, with as many of the same run with
``local.fast=false`` (the plain path: the engine before its fast path; same seed, same model), so
their ratio (before/engine, medians, both clocks) is the fast path's speed-up on this step shape --
many updates per rollout, unlike ``make bench-engine``'s one. Then ``steps`` steps of the engine are
profiled. Records ``results/profile_engine/latest.json``. A Hydra app
(``conf/command/profile_engine.yaml``)::

    python -m benchmarks.profile_engine [recipe=r1_zero] [steps=4] [warmup=1] [compare_steps=8]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig
from torch.profiler import ProfilerActivity, profile, record_function

from core import results
from core.cli import hydra_main
from recipes.local import build_engine
from recipes.run import prepare_config

# kernels counted as dense arithmetic (self time; forward and backward)
DENSE = (
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::_softmax",
    "aten::_log_softmax",
    "aten::_softmax_backward_data",
    "aten::_log_softmax_backward_data",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
)
PHASES = ("gen", "update")


def _timed(fn: Callable[[], Any], name: str) -> Callable[[], Any]:
    def run() -> Any:
        with record_function(name):
            return fn()

    return run


def split(events: Any) -> dict[str, dict[str, float]]:
    """Seconds per phase: total, dense arithmetic, other torch ops, outside ops (from profiler events)."""
    ranges = {"step": [], "gen": []}
    for e in events:
        if e.name in ("rlvr/step", "rlvr/gen"):
            ranges[e.name[5:]].append((e.time_range.start, e.time_range.end))
    out = {p: {"total": 0.0, "dense": 0.0, "other_ops": 0.0} for p in PHASES}
    out["gen"]["total"] = sum(b - a for a, b in ranges["gen"]) / 1e6
    out["update"]["total"] = sum(b - a for a, b in ranges["step"]) / 1e6 - out["gen"]["total"]
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        t = e.time_range.start
        if not any(a <= t <= b for a, b in ranges["step"]):
            continue
        phase = "gen" if any(a <= t <= b for a, b in ranges["gen"]) else "update"
        out[phase]["dense" if e.name in DENSE else "other_ops"] += e.self_cpu_time_total / 1e6
    for v in out.values():
        v["outside_ops"] = max(0.0, v["total"] - v["dense"] - v["other_ops"])
    return out


def _clocked(eng: Any) -> dict[str, float]:
    """One step without the profiler: the engine's own wall clocks and this process's CPU time."""
    c0 = time.process_time()
    m, _ = eng.train_step()
    return {"gen": m["timing_s/gen"], "step": m["timing_s/step"], "cpu": time.process_time() - c0}


def _medians(xs: list[dict[str, float]]) -> dict[str, float]:
    return {
        "wall_s_median": statistics.median(x["step"] for x in xs),
        "gen_wall_s_median": statistics.median(x["gen"] for x in xs),
        "cpu_s_median": statistics.median(x["cpu"] for x in xs),
    }


def command(a: DictConfig) -> int:
    """Time the engine against its plain path, profile ``steps`` steps, print and record the split."""
    args = [f"recipe={a.recipe}", "engine=local", "local.progress=false", *a.overrides]
    eng, _, _ = build_engine(prepare_config(args)[0])
    before, _, _ = build_engine(prepare_config([*args, "local.fast=false"])[0])
    cfg = eng.cfg
    torch.set_num_threads(int(a.threads))
    for _ in range(int(a.warmup)):
        eng.train_step()
        before.train_step()
    plain: list[dict[str, float]] = []
    plain_before: list[dict[str, float]] = []
    for _ in range(int(a.compare_steps)):  # without the profiler, step for step
        plain.append(_clocked(eng))
        plain_before.append(_clocked(before))
    del before
    eng.collect = _timed(eng.collect, "rlvr/gen")  # the real method, inside a named range
    step = _timed(eng.train_step, "rlvr/step")
    c0 = time.process_time()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(int(a.steps)):
            step()
    profiled_cpu = time.process_time() - c0
    parts = split(prof.events())
    n = int(a.steps)
    per_step = {p: {k: v / n for k, v in d.items()} for p, d in parts.items()}
    out = {
        "recipe": str(a.recipe),
        "scale": str(cfg.rlvr.scale),
        "steps": n,
        "threads": int(a.threads),
        "compare_steps": int(a.compare_steps),
        "unprofiled": _medians(plain),
        "unprofiled_before": _medians(plain_before),
        "speedup": {
            "wall": _medians(plain_before)["wall_s_median"] / _medians(plain)["wall_s_median"],
            "cpu": _medians(plain_before)["cpu_s_median"] / _medians(plain)["cpu_s_median"],
        },
        "steps_s": {"engine": plain, "before": plain_before},
        "profiled_cpu_s_per_step": profiled_cpu / n,
        "per_step": per_step,
        "dense": list(DENSE),
    }
    print("before/engine: " + "  ".join(f"{k} {v:.2f}" for k, v in out["speedup"].items()))
    for p, d in per_step.items():
        shares = "  ".join(f"{k} {d[k] / d['total']:.0%}" for k in ("dense", "other_ops", "outside_ops"))
        print(f"{p}: {d['total']:.3f} s/step profiled  {shares}")
    print(f"recorded {results.write_table('profile_engine', 'latest', out)}")
    return 0


main = hydra_main("command", "profile_engine", command)


if __name__ == "__main__":
    main()
