"""Which engine is the default on a CPU, by measurement: one full laptop run of a recipe on each engine.

Runs ``python -m recipes.run recipe=<recipe> engine=<engine> scale=<its laptop profile> rlvr.seed=<seed>``
-- the whole run a user gets from ``make run RECIPE=<recipe> [ENGINE=verl]`` on a machine without a GPU
(``r1_zero``: 80 steps, five held-out evaluations; on veRL's trainer four reference-reset segments joined
by ``verl.model_merger``) -- on the local engine and on veRL's own trainer, ``rounds`` times with the
order alternating, the base model built before the first (so neither run pays for it). Per run:

- the wall time of the command;
- the CPU time of its processes (the local engine is one process; veRL's trainer spreads over Ray's
  driver, workers, rollout server and reward worker, in sessions of their own), sampled every
  ``interval_s`` seconds over the command's process tree and the processes that carry its launch's
  mark (``recipes.supervise``): a lower bound, missing what a process spent after its last sample;
- the time inside its training steps (``timing_s/step``) and its held-out accuracy start -> end.

It also checks, on the local run, the held-out response length veRL's runs are recorded with
(``recipes.verl_summary``: re-tokenized from the validation dumps) against the one the local engine
logs (counted from the sampled tokens), evaluation by evaluation. Recorded in
``results/bench_cpu_engines/latest.json``; ``docs/r1_zero.md`` renders it. A Hydra app
(``conf/command/bench_cpu_engines.yaml``)::

    python -m benchmarks.bench_cpu_engines [recipe=r1_zero] [seed=0] [rounds=1]

Not measured: a GPU, veRL's trainer at world size 2, a machine without other load (the provenance
records the load average when the record is written).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import results
from core.cli import hydra_main

ENGINES = ("local", "verl")


class CpuSampler(threading.Thread):
    """Samples the CPU seconds (user + system) of a process tree and of the processes a launch marks,
    every ``interval`` seconds, until :meth:`stop`; :attr:`seconds` sums each process's last sample."""

    def __init__(self, pid: int, mark: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.mark, self.interval = pid, mark, interval
        self.last: dict[tuple[int, float], float] = {}
        self.done = threading.Event()

    def _procs(self) -> list[Any]:
        import psutil  # process listing: only while a run is measured

        from recipes.supervise import launched  # the processes a launch marks (Ray's included)

        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        return tree + launched(self.mark)

    def sample(self) -> None:
        import psutil  # as above

        for p in self._procs():
            try:
                t = p.cpu_times()
                self.last[(p.pid, p.create_time())] = t.user + t.system
            except psutil.Error:
                continue

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()

    def stop(self) -> float:
        self.done.set()
        self.join()
        return self.seconds

    @property
    def seconds(self) -> float:
        return sum(self.last.values())


def _steps(run_dir: Path) -> dict[str, float | None]:
    """Seconds inside the run's training steps and its evaluations (None: the engine does not log them,
    as the local engine does not), from its ``metrics.jsonl``."""
    step_s, testing = 0.0, []
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        data = json.loads(line).get("data", {})
        step_s += float(data.get("timing_s/step", 0.0))
        testing += [float(data["timing_s/testing"])] if "timing_s/testing" in data else []
    return {"steps_s": step_s, "testing_s": sum(testing) if testing else None}


def timed(engine: str, cmd: list[str], run_dir: Path, interval_s: float) -> dict[str, Any]:
    """Run ``cmd`` (a launch into ``run_dir``) to its end: wall seconds, and CPU seconds of its
    processes both sampled (:class:`CpuSampler`, Ray's included) and reaped; raises naming the log."""
    from recipes.supervise import run_key  # the mark of a launch into run_dir

    log = run_dir.with_name(run_dir.name + ".log")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        sampler = CpuSampler(proc.pid, run_key(run_dir), interval_s)
        sampler.start()
        code = proc.wait()
    wall = time.perf_counter() - t0
    cpu = sampler.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code:
        raise RuntimeError(f"[{engine}] the run failed (exit {code}); its log: {log}")
    reaped = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "reaped": reaped, "processes": len(sampler.last)}


def run_engine(engine: str, a: DictConfig, run_dir: Path, scale: str) -> dict[str, Any]:
    """One full run of ``a.recipe`` on ``engine``: wall and sampled CPU seconds, step time, accuracies."""
    from recipes.launch_local import local_command  # the run's command line

    args = [f"rlvr.seed={int(a.seed)}", "local.progress=false", "trainer.logger=[file]"]
    cmd = local_command(str(a.recipe), run_dir, *args, scale=scale, engine=engine)
    t = timed(engine, cmd, run_dir, float(a.interval_s))
    wall, cpu, reaped = t["wall"], t["cpu"], t["reaped"]
    summary = json.loads((run_dir / "summary.json").read_text())
    return {
        "wall_s": wall,
        "cpu_s": max(cpu, reaped),
        "cpu_sampled_s": cpu,
        "cpu_reaped_s": reaped,
        "processes": t["processes"],
        **_steps(run_dir),
        "start_acc": summary["start_acc"],
        "end_acc": summary["end_acc"],
        "steps": summary["steps"],
        "run_dir": str(run_dir),
    }


def length_check(run_dir: Path) -> dict[str, Any]:
    """Per held-out evaluation of a local run: the accuracy and length it logged (from its tokens) and
    the ones ``recipes.verl_summary`` derives from its validation dumps (re-tokenized text)."""
    from omegaconf import OmegaConf  # the run's config

    from core.model import load_tokenizer  # the run's tokenizer
    from core.runs import Run  # the run's metrics
    from recipes.verl_summary import ACC, LEN, val_metrics  # the veRL runs' definitions

    cfg = OmegaConf.load(run_dir / "config.yaml")
    tok = load_tokenizer(str(cfg.actor_rollout_ref.model.path))
    derived = val_metrics(run_dir, tok, int(cfg.data.max_response_length))
    run = Run(run_dir)
    rows = []
    for key in (ACC, LEN):
        s = run.series(key)
        logged = dict(zip(s.steps.tolist(), s.values.tolist(), strict=True)) if s is not None else {}
        rows += [
            {"metric": key, "step": st, "logged": logged[st], "derived": derived[st][key]}
            for st in sorted(derived)
            if st in logged
        ]
    worst = {
        k: max((abs(r["logged"] - r["derived"]) for r in rows if r["metric"] == k), default=None)
        for k in (ACC, LEN)
    }
    return {"rows": rows, "max_abs_diff": worst}


def _warm_inputs(recipe: str) -> str:
    """Build what the recipe's laptop profile reads (the base model first of all); returns the profile."""
    from recipes.local import ensure_inputs  # the builders (torch)
    from recipes.run import prepare_config  # the laptop profile the local engine picks

    cfg, _, _, _ = prepare_config([f"recipe={recipe}", "engine=local"], changes=False)
    ensure_inputs(cfg)
    return str(cfg.rlvr.scale)


def command(a: DictConfig) -> int:
    """Both engines' runs, printed and recorded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    experiment = "bench_cpu_engines"
    if a.record:
        results.write_experiment(experiment, design={"recipe": str(a.recipe), "engines": list(ENGINES)})
    scale = _warm_inputs(str(a.recipe))
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    with tempfile.TemporaryDirectory(prefix="bench_cpu_engines-") as tmp:
        work = Path(str(a.work)) if a.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for r in range(int(a.rounds)):
            for engine in ENGINES if r % 2 == 0 else ENGINES[::-1]:
                res = run_engine(engine, a, work / f"{engine}-{r}", scale)
                runs[engine].append(res)
                print(
                    f"[bench] round {r} {engine}: {res['wall_s'] / 60:.1f} min wall, {res['cpu_s'] / 60:.1f} min CPU, "
                    f"held-out acc {res['start_acc']:.3f} -> {res['end_acc']:.3f}",
                    flush=True,
                )
        check = length_check(work / "local-0")
    med = {
        e: {k: statistics.median(x[k] for x in rs) for k in ("wall_s", "cpu_s", "steps_s")}
        for e, rs in runs.items()
    }
    ratios = {f"verl/local {k}": med["verl"][k] / med["local"][k] for k in ("wall_s", "cpu_s", "steps_s")}
    print(f"[bench] medians {med}; ratios {ratios}; length check {check['max_abs_diff']}")
    out = {
        "settings": {k: a[k] for k in ("recipe", "seed", "rounds", "interval_s")} | {"scale": scale},
        "runs": runs,
        "median": med,
        "ratios": ratios,
        "length_check": check,
    }
    if a.record:
        print(f"recorded {results.write_table(experiment, 'latest', out)}")
    return 0


main = hydra_main("command", "bench_cpu_engines", command)


if __name__ == "__main__":
    main()
