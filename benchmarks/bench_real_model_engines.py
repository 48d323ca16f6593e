"""Which engine runs the real-model experiment faster: the same run, a few steps, on each engine side by side.

``python -m benchmarks.bench_real_model_engines overrides=[...]`` (``make results
NAME=bench_real_model_engines``, which passes the overrides ``make results NAME=real_model_rl`` runs
with) runs ``recipes.run recipe=<recipe> scale=laptop_smollm2 <overrides>`` for ``steps`` steps on the
local engine and on veRL's own trainer (on this CPU through ``verl_cpu``), ``rounds`` rounds with the
order alternating, one run at a time. Per run:

- the wall seconds of the command, and the CPU seconds of its processes
  (:class:`benchmarks.bench_cpu_engines.CpuSampler`: veRL's trainer spreads over Ray's processes);
- the seconds inside its training steps (``timing_s/step``, the engines' own clocks) per step, and
  the held-out accuracy it logged at the start.

Recorded in ``results/<results>/latest.json`` with the ratios veRL / local; ``docs/real_model.md``
renders it. Not measured: a run's later steps (the steps here are the first ones), a GPU, a machine
without other load (the provenance records the load average).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from benchmarks.bench_cpu_engines import ENGINES, timed
from core import results
from core.cli import hydra_main, route_argv


def step_seconds(run_dir: Path) -> list[float]:
    """``timing_s/step`` of every training step in a run's ``metrics.jsonl``, in order."""
    out = []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        data = json.loads(line).get("data", {})
        if "timing_s/step" in data:
            out.append(float(data["timing_s/step"]))
    return out


def run_engine(engine: str, a: DictConfig, run_dir: Path) -> dict[str, Any]:
    """``a.steps`` steps of the run on ``engine``: wall and CPU seconds, seconds per training step."""
    from recipes.launch_local import local_command  # the run's command line (recipes: only when measuring)

    args = [f"trainer.total_training_steps={a.steps}", f"trainer.test_freq={a.steps}", *a.overrides]
    args += [f"rlvr.seed={a.seed}", "local.progress=false", "trainer.logger=[file]"]
    cmd = local_command(str(a.recipe), run_dir, *args, scale=str(a.scale), engine=engine)
    t = timed(engine, cmd, run_dir, float(a.interval_s))
    wall, cpu = t["wall"], max(t["cpu"], t["reaped"])
    steps = step_seconds(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "step_s": steps,
        "step_s_median": statistics.median(steps),
        "start_acc": summary.get("start_acc"),
        "command": " ".join(cmd[2:]),
    }


def command(a: DictConfig) -> int:
    """Both engines' runs, printed and recorded."""
    work = Path(str(a.work)).resolve()
    work.mkdir(parents=True, exist_ok=True)  # each run's log sits beside its run directory
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for r in range(int(a.rounds)):
        for engine in ENGINES if r % 2 == 0 else ENGINES[::-1]:
            run_dir = work / f"{engine}-{r}"
            shutil.rmtree(run_dir, ignore_errors=True)  # every round from its first step
            res = run_engine(engine, a, run_dir)
            runs[engine].append(res)
            print(
                f"[bench] round {r} {engine}: {res['wall_s']:.0f} s wall, {res['cpu_s']:.0f} s CPU, "
                f"steps {[round(s) for s in res['step_s']]} s",
                flush=True,
            )
    keys = ("wall_s", "cpu_s", "step_s_median")
    med = {e: {k: statistics.median(x[k] for x in rs) for k in keys} for e, rs in runs.items()}
    ratios = {f"verl/local {k}": med["verl"][k] / med["local"][k] for k in keys}
    faster = "local" if ratios["verl/local step_s_median"] > 1 else "verl"
    print(f"[bench] medians {med}; ratios {ratios}; faster per step: {faster}")
    if a.results:
        settings = OmegaConf.to_container(a, resolve=True)
        out = {"settings": settings, "runs": runs, "median": med, "ratios": ratios, "faster": faster}
        print(f"recorded {results.write_table(str(a.results), 'latest', out)}")
    return 0


main = hydra_main("command", "bench_real_model_engines", command)


if __name__ == "__main__":
    route_argv("command", "bench_real_model_engines")  # the run's overrides may come bare: key=value
    main()
