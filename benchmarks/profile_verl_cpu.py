"""Where a veRL CPU run spends its time: CPU and wall seconds per process (by role) and per phase.

Runs each arm of ``arms`` (by default the r1_zero laptop profile and grpo on SmolLM2-135M) once as a
user launches it (``python -m recipes.run engine=verl ...``), with two instruments:

- **from inside** (:mod:`verl_cpu.probe`, ``VERL_CPU_PROFILE``): wall start/end and the process's CPU
  of veRL's phases in every process -- ``ray.init``, ``transfer_queue.init``, the worker group, each
  model load (``init_model``), the rollout servers, the reward loop, the first validation, and inside
  the workers each log-prob pass (``infer_batch``), each update (``train_mini_batch``) and each
  batched decode of the rollout server;
- **from outside** (:class:`ProcessSampler`): every ``interval_s`` the CPU seconds, niceness and
  resident memory of every process of the launch (its process tree and what carries the launch's
  mark: Ray's GCS, raylet, dashboard and agents, and each worker, named by its Ray role).

From the two: start-up split into Ray, the TaskRunner, TransferQueue, the workers and their model
loads, the rollout servers, the agent loop and the first validation; CPU per role in each window
(start-up, validations, training, shutdown); per step, veRL's own phase times (``timing_s/*``) beside
the workers' compute inside them (the rest is dispatch: serialization, transfer and polls between
Ray processes); and the rollout server's CPU outside its decodes (idle polling).

Recorded in ``results/profile_verl_cpu/latest.json`` (``core.results``), rendered into
docs/engines.md by ``make docs``. A Hydra app (``conf/command/profile_verl_cpu.yaml``)::

    python -m benchmarks.profile_verl_cpu [arms=[r1_zero,smollm2]] [interval_s=0.2]

Not measured: a GPU; the CPU a process spends after its last sample (a lower bound, < interval_s each).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import results
from core.cli import hydra_main

#: The windows of a run: (name, the probe phase that opens it or None, ...); see :func:`windows`.
WINDOWS = ("startup", "validation", "training", "shutdown")


def role_of(cmdline: list[str]) -> str:
    """A process's role from its command line: a Ray worker's actor (``ray::WorkerDict.update`` ->
    ``WorkerDict``), Ray's own daemons, the trainer's driver, the launch's shell and ``recipes.run``."""
    if not cmdline:
        return "?"
    head = cmdline[0]
    if head.startswith("ray::"):
        return head[5:].split(".")[0].split(" ")[0].split(":")[0] or "ray"
    text = " ".join(cmdline)
    for needle, name in (
        ("gcs_server", "ray: gcs_server"),
        ("raylet", "ray: raylet"),
        ("dashboard/dashboard.py", "ray: dashboard"),
        ("autoscaler", "ray: monitor"),
        ("log_monitor", "ray: log_monitor"),
        ("verl.trainer.main_ppo", "driver (main_ppo)"),
        ("recipes.run", "recipes.run"),
        ("launch.sh", "launch.sh"),
    ):
        if needle in text:
            return name
    return Path(head).name


class ProcessSampler(threading.Thread):
    """Samples every process of a launch each ``interval`` s: ``{(pid, start): record}`` with its role
    (the last one other than Ray's ``IDLE``), first/last seen, niceness, peak RSS and its cumulative CPU
    seconds over time (for the CPU inside any window, :meth:`cpu_between`)."""

    def __init__(self, pid: int, mark: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.mark, self.interval = pid, mark, interval
        self.procs: dict[tuple[int, float], dict[str, Any]] = {}
        self.done = threading.Event()

    def _tree(self) -> list[Any]:
        import psutil  # only while a run is measured

        from recipes.supervise import launched  # recipes.* pulls Hydra and veRL: not at --help

        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        seen = {p.pid for p in tree}
        return tree + [p for p in launched(self.mark) if p.pid not in seen]

    def sample(self) -> None:
        import psutil  # only while a run is measured

        now = time.time()
        for p in self._tree():
            try:
                with p.oneshot():
                    key = (p.pid, p.create_time())
                    t, cmd, nice, rss = p.cpu_times(), p.cmdline(), p.nice(), p.memory_info().rss
            except psutil.Error:
                continue
            rec = self.procs.setdefault(key, {"pid": p.pid, "role": "IDLE", "start": key[1], "series": []})
            role = role_of(cmd)
            if role not in ("IDLE", "?") or rec["role"] in ("IDLE", "?"):
                rec["role"] = role
            rec["nice"], rec["last"] = nice, now
            rec["rss_max"] = max(rec.get("rss_max", 0), rss)
            rec["series"].append((now, t.user + t.system))

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self.done.set()
        self.join()

    @staticmethod
    def _at(series: list[tuple[float, float]], t: float) -> float:
        """Cumulative CPU at time ``t`` (linear between samples; 0 before the first, the last after)."""
        if not series or t <= series[0][0]:
            return 0.0 if not series or t < series[0][0] else series[0][1]
        for (t0, c0), (t1, c1) in zip(series, series[1:], strict=False):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / max(t1 - t0, 1e-9)
        return series[-1][1]

    def cpu_between(self, t0: float, t1: float) -> dict[str, float]:
        """CPU seconds per role between ``t0`` and ``t1``."""
        out: dict[str, float] = {}
        for rec in self.procs.values():
            c = self._at(rec["series"], t1) - self._at(rec["series"], t0)
            if c > 0:
                out[rec["role"]] = out.get(rec["role"], 0.0) + c
        return out

    def starts(self, t0: float) -> dict[str, float]:
        """Seconds from ``t0`` to the start of each role's first process (Ray's idle workers are
        named by the actor they became)."""
        out: dict[str, float] = {}
        for rec in self.procs.values():
            out[rec["role"]] = min(out.get(rec["role"], float("inf")), rec["start"] - t0)
        return dict(sorted(out.items(), key=lambda kv: kv[1]))

    def by_role(self) -> list[dict[str, Any]]:
        """Per role: processes, CPU seconds, seconds alive, niceness seen, peak RSS (MB) of one."""
        roles: dict[str, dict[str, Any]] = {}
        for rec in self.procs.values():
            r = roles.setdefault(
                rec["role"],
                {"role": rec["role"], "processes": 0, "cpu_s": 0.0, "alive_s": 0.0, "nice": set()},
            )
            r["processes"] += 1
            r["cpu_s"] += rec["series"][-1][1] if rec["series"] else 0.0
            r["alive_s"] = max(r["alive_s"], rec["last"] - max(rec["start"], rec["series"][0][0]))
            r["nice"].add(rec["nice"])
            r["rss_mb"] = max(r.get("rss_mb", 0.0), rec["rss_max"] / 2**20)
        out = [{**r, "nice": sorted(r["nice"])} for r in roles.values()]
        return sorted(out, key=lambda r: -r["cpu_s"])


def startup(rows: list[dict[str, Any]], t_launch: float) -> list[dict[str, Any]]:
    """The start-up, in order: each probe phase up to the first validation's end, as seconds from the
    launch (start, wall, the process's CPU), plus the gaps that are process starts (the TaskRunner's
    and the workers' imports) named by what follows them."""
    first_val = min((r["end"] for r in rows if r["phase"] == "validate"), default=float("inf"))
    keep = [r for r in rows if r["start"] <= first_val and not r["phase"].startswith("server.")]
    out = []
    for r in sorted(keep, key=lambda r: r["start"]):
        out.append(
            {
                "phase": r["phase"],
                "role": r["role"],
                "from_launch_s": r["start"] - t_launch,
                "wall_s": r["end"] - r["start"],
                "cpu_s": r["cpu_s"],
            }
        )
    return out


def windows(
    rows: list[dict[str, Any]], t_launch: float, t_end: float
) -> dict[str, list[tuple[float, float]]]:
    """The run's windows in wall time: start-up (launch -> ``fit``), each validation, training (``fit``
    minus validations and checkpoints), shutdown (``fit``'s end -> the command's end)."""
    fit = [r for r in rows if r["phase"] == "fit"]
    if not fit:
        return {"startup": [(t_launch, t_end)]}
    f0, f1 = min(r["start"] for r in fit), max(r["end"] for r in fit)
    vals = sorted((r["start"], r["end"]) for r in rows if r["phase"] in ("validate", "save_checkpoint"))
    train, cur = [], f0
    for a, b in vals:
        if a > cur and a < f1:
            train.append((cur, a))
        cur = max(cur, b)
    if cur < f1:
        train.append((cur, f1))
    return {
        "startup": [(t_launch, f0)],
        "validation": [(a, b) for a, b in vals if a >= f0 - 1],
        "training": train,
        "shutdown": [(f1, t_end)],
    }


def step_phases(run_dir: Path, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per training step (medians over steps 2..): veRL's phase times, and the workers' compute inside
    them from the probe (the rest is dispatch between Ray processes)."""
    steps: dict[int, dict[str, float]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        steps.setdefault(int(row["step"]), {}).update(
            {k: float(v) for k, v in row["data"].items() if k.startswith("timing_s/")}
        )
    sizes: dict[int, dict[str, float]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        sizes.setdefault(int(row["step"]), {}).update(
            {
                k: float(row["data"][k])
                for k in ("response_length/mean", "prompt_length/mean")
                if k in row["data"]
            }
        )
    trained = [s for s in sorted(steps) if s > 0 and "timing_s/step" in steps[s]]
    later = trained[1:] or trained
    keys = sorted({k for s in later for k in steps[s]})
    med = {k.removeprefix("timing_s/"): statistics.median(steps[s].get(k, 0.0) for s in later) for k in keys}
    n = max(len(trained), 1)

    def per_step(phase: str) -> dict[str, float]:
        rs = [r for r in rows if r["phase"] == phase]
        fit = [r for r in rows if r["phase"] == "fit"]
        if fit:  # only inside training steps (not validations)
            f0 = min(r["start"] for r in fit)
            rs = [r for r in rs if r["start"] >= f0]
        return {
            "wall_s": sum(r["end"] - r["start"] for r in rs) / n,
            "cpu_s": sum(r["cpu_s"] for r in rs) / n,
        }

    cfg = OmegaConf.load(run_dir / "config.yaml")
    size = {
        k: statistics.median(sizes[s][k] for s in later if k in sizes.get(s, {}))
        for k in ("response_length/mean", "prompt_length/mean")
        if any(k in sizes.get(s, {}) for s in later)
    }
    return {
        "steps": len(trained),
        "median_s": med,
        "responses": int(cfg.data.train_batch_size) * int(cfg.actor_rollout_ref.rollout.n),
        "ppo_epochs": int(cfg.actor_rollout_ref.actor.ppo_epochs),
        "uses_reference": bool(OmegaConf.select(cfg, "actor_rollout_ref.actor.use_kl_loss", default=False))
        or bool(OmegaConf.select(cfg, "algorithm.use_kl_in_reward", default=False)),
        "model": str(cfg.actor_rollout_ref.model.path),
        "threads": int(OmegaConf.select(cfg, "local.threads", default=1) or 1),
        "lengths": size,
        "inside": {
            p: per_step(p) for p in ("worker.infer_batch", "worker.train_mini_batch", "server.decode")
        },
    }


def busy(n: int) -> list[subprocess.Popen]:
    """``n`` CPU-bound processes at niceness 0 (a competing load), stopped by the caller."""
    code = "while True: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def profile_arm(
    name: str, overrides: list[str], work: Path, interval: float, compete: int = 0
) -> dict[str, Any]:
    """One launch of an arm under both instruments (and ``compete`` busy processes beside it); its
    record (see the module docstring)."""
    from recipes.supervise import run_key  # recipes.* pulls Hydra and veRL: not at --help
    from verl_cpu.probe import PROFILE_ENV, read  # the probe imports veRL's modules it wraps

    run_dir, probe = work / name, work / f"{name}.probe.jsonl"
    engine = [] if any(o.startswith("engine=") for o in overrides) else ["engine=verl"]
    cmd = [sys.executable, "-m", "recipes.run", *engine, f"run_dir={run_dir}", *overrides]
    env = {**os.environ, PROFILE_ENV: str(probe)}
    log = work / f"{name}.log"
    load, load_before = busy(compete), os.getloadavg()
    t_launch = time.time()
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
            sampler = ProcessSampler(proc.pid, run_key(run_dir), interval)
            sampler.start()
            code = proc.wait()
    finally:
        for p in load:
            p.kill()
            p.wait()
    t_end = time.time()
    sampler.stop()
    if code:
        raise RuntimeError(f"[{name}] the run failed (exit {code}); its log: {log}")
    rows = read(probe)
    win = windows(rows, t_launch, t_end)
    cpu_in = {}
    for w, spans in win.items():
        acc: dict[str, float] = {}
        for a, b in spans:
            for role, c in sampler.cpu_between(a, b).items():
                acc[role] = acc.get(role, 0.0) + c
        cpu_in[w] = {"wall_s": sum(b - a for a, b in spans), "cpu_s": acc}
    roles = sampler.by_role()
    server_cpu = sum(r["cpu_s"] for r in roles if r["role"] == "CPURolloutServer")
    decode_cpu = sum(r["cpu_s"] for r in rows if r["phase"] == "server.decode")
    return {
        "command": " ".join(["python", "-m", "recipes.run", *engine, *overrides]),
        "competing_processes": compete,
        "load_avg": {"before": list(load_before), "after": list(os.getloadavg())},
        "process_starts_s": sampler.starts(t_launch),
        "wall_s": t_end - t_launch,
        "cpu_s": sum(r["cpu_s"] for r in roles),
        "roles": roles,
        "startup": startup(rows, t_launch),
        "first_step_from_launch_s": (
            (win["startup"][0][1] - t_launch) if any(r["phase"] == "fit" for r in rows) else None
        ),
        "windows": cpu_in,
        "per_step": step_phases(run_dir, rows),
        "rollout_server_cpu_outside_decode_s": server_cpu - decode_cpu,
        "nice": {r["role"]: r["nice"] for r in roles},
    }


def matmul_gflops(threads: int, m: int, k: int, n: int, seconds: float = 1.5) -> float:
    """torch's fp32 ``(m, k) @ (k, n)`` on ``threads`` threads: GFLOP/s over ``seconds``."""
    import torch  # ~3 s: only the limit arm needs it

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        reps, t0 = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - t0) < seconds:
            a @ b
            reps += 1
        return 2 * m * k * n * reps / elapsed / 1e9
    finally:
        torch.set_num_threads(before)


def matmul_params(model_path: str) -> dict[str, int]:
    """The model's weights that are matmuls (every ``nn.Linear``, the LM head included), its width and
    its MLP width, from its config (built on the meta device: no weights read)."""
    import torch  # ~3 s with transformers: only the limit arm needs them
    from transformers import AutoConfig, AutoModelForCausalLM  # see above

    cfg = AutoConfig.from_pretrained(model_path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    n = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    return {"matmul_params": n, "hidden": int(cfg.hidden_size), "mlp": int(cfg.intermediate_size)}


def limit(records: dict[str, dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """The arms' step phases against torch's matmul on this machine, at 1 and 2 threads.

    FLOPs per step from the run's own sizes (B responses of P prompt + R response tokens, N matmul
    weights; attention's own products, ~5% at these lengths, are left out): generation 2N·B(P+R) against
    the matmul of one decode step (B rows); each log-prob pass 2N·B(P+R) and the update 6N·B(P+R) per
    epoch (the local engine's ``update_actor`` phase also holds its reference pass) against a
    training-sized matmul. ``x_limit`` is how many times slower than the matmul rate a phase ran."""
    out: dict[str, Any] = {"arms": {}, "matmul_gflops": {}}
    shapes: dict[str, tuple[int, int, int]] = {}
    for name in names:
        rec = records[name]
        ps = rec["per_step"]
        size = matmul_params(ps["model"])
        b, p, r = ps["responses"], ps["lengths"]["prompt_length/mean"], ps["lengths"]["response_length/mean"]
        n, tokens = size["matmul_params"], b * (p + r)
        shapes = {
            "decode": (b, size["hidden"], size["mlp"]),
            "train": (min(int(tokens), 4096), size["hidden"], size["mlp"]),
        }
        local = "engine=local" in rec["command"]
        ref = 2 * n * tokens if (local and ps["uses_reference"]) else 0
        flops = {
            "gen": (2 * n * tokens, "decode"),
            "old_log_prob": (2 * n * tokens, "train"),
            "ref": (2 * n * tokens, "train"),
            "update_actor": (6 * n * tokens * ps["ppo_epochs"] + ref, "train"),
        }
        out["arms"][name] = {
            "threads": ps["threads"],
            "sizes": {"responses": b, "prompt": p, "response": r, **size},
            "phases": {
                ph: {
                    "flops": f,
                    "seconds": ps["median_s"][ph],
                    "gflops": f / ps["median_s"][ph] / 1e9,
                    "shape": shp,
                }
                for ph, (f, shp) in flops.items()
                if ps["median_s"].get(ph)
            },
        }
    for threads in (1, 2):
        out["matmul_gflops"][str(threads)] = {k: matmul_gflops(threads, *v) for k, v in shapes.items()}
    out["shapes"] = {k: list(v) for k, v in shapes.items()}
    for arm in out["arms"].values():
        for ph in arm["phases"].values():
            for threads in ("1", "2"):
                ph[f"x_limit_{threads}thread"] = out["matmul_gflops"][threads][ph["shape"]] / ph["gflops"]
    return out


def warm(overrides: list[str]) -> None:
    """Build what an arm reads (its base model, the task files) before it is timed."""
    from core import real_model  # a registry model (SmolLM2) is converted once into the run cache
    from recipes.local import ensure_inputs  # the builders (torch)
    from recipes.run import prepare_config  # Hydra and veRL's schema: only when an arm is warmed

    keep = [o for o in overrides if "ray_kwargs" not in o and not o.startswith("engine=")]
    cfg, _, _, _ = prepare_config([*keep, "engine=local"], changes=False)
    name = real_model.name_of(str(cfg.actor_rollout_ref.model.path))
    if name is not None:
        real_model.ensure(name)
    ensure_inputs(cfg)


def command(a: DictConfig) -> int:
    """Profile each arm, print a summary, record the results."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    experiment = "profile_verl_cpu"
    arms = {str(k): [str(x) for x in v] for k, v in OmegaConf.to_container(a.arm_overrides).items()}
    chosen = [str(x) for x in a.arms]
    if a.record:
        results.write_experiment(experiment, design={"arms": {k: arms[k] for k in chosen}})
    for name in chosen:
        warm(arms[name])
    load0 = os.getloadavg()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="profile_verl_cpu-") as tmp:
        work = Path(str(a.work)) if a.work else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in chosen:
            done = work / f"{name}.profile.json"
            if done.exists():  # a given work directory resumes: an arm profiled there is kept
                out[name] = json.loads(done.read_text())
                print(f"[{name}] kept from {done}")
                continue
            rec = profile_arm(name, arms[name], work, float(a.interval_s), int(a.competing.get(name, 0)))
            out[name] = rec
            done.write_text(json.dumps(rec, indent=1, default=list))
            top = ", ".join(f"{r['role']} {r['cpu_s']:.0f}" for r in rec["roles"][:6])
            first = rec["first_step_from_launch_s"]
            print(f"[{name}] wall {rec['wall_s']:.0f} s, CPU {rec['cpu_s']:.0f} s ({top}); "
                  f"first step at {first if first is None else round(first)} s")  # fmt: skip
    lim = [str(x) for x in a.limit_arms if str(x) in out]
    if lim:
        out_limit = limit(out, lim)
        for name, arm in out_limit["arms"].items():
            worst = ", ".join(f"{k} {v['x_limit_1thread']:.1f}x" for k, v in arm["phases"].items())
            print(f"[limit] {name}: times slower than the 1-thread matmul: {worst}")
    payload = {"limit": out_limit if lim else None, "arms": out, "settings": {"interval_s": float(a.interval_s)}, "load_avg_before": list(load0),
               "load_avg_after": list(os.getloadavg())}  # fmt: skip
    if a.record:
        path = results.write_table(experiment, "latest", payload)
        print(f"recorded {path}")
    return 0


main = hydra_main("command", "profile_verl_cpu", command)

if __name__ == "__main__":
    main()
