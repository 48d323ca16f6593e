"""``make results NAME=numerics_trace``: does the base model's pretraining compute the same floats on another processor?

Runs the first ``steps`` steps of the laptop base model's pretraining (``scale=laptop_base``: its
corpus, tokenizer, initial weights, batches and :func:`recipes.local.pretrain.lm_step`) on this
processor and, under QEMU's user-mode emulator (``qemu-x86_64 -cpu <model>``), as the x86-64
processors in ``cpus`` (an Intel Haswell and an AMD EPYC Rome by default: AVX2, no AVX-512), once
per optimizer of :data:`OPTIMIZERS` (the project's, :func:`core.numerics.adamw`, and torch's
default AdamW), and natively at the other thread counts of ``threads`` (``local.threads``; the
project's optimizer). It records a sha256 of the weights after every step, the first step at which each
processor's weights part from this one's, and on each processor the share of float32 square roots
``torch.sqrt`` does not round correctly (against numpy's IEEE square root).

Why emulation stands in for a second machine: QEMU computes every IEEE operation (add, multiply,
FMA, divide, square root) with the same rounding as hardware, and differs from hardware only where
the instruction set leaves the result to the implementation (the ``rsqrtps``/``rcpps``
approximations, which Intel and AMD also implement differently). So code whose floats depend on the
processor shows up as a difference here; code that uses only IEEE operations cannot.

``part=windows`` traces the rest of the build the same way, a window at a time: it runs the whole
build natively once (the build's own code: :func:`recipes.local.pretrain.setup` and its step), saving
the build's whole state (weights, optimizer state, lr schedule, the batch sampler's random state)
before each step of ``window_at``, then runs ``steps`` steps from each saved state natively and on
each processor of ``cpus`` and compares each step's weights with the uninterrupted build's. The
default windows end at the build's last step, so the last one compares the base model's final
weights. A window shows that a step computes the same floats from that state; it is not the
uninterrupted build run emulated (that would take ~10 h).

``part=rl`` runs the ``r1_zero`` recipe (``scale=laptop_base``, seed 0) from the base model in
``RLVR_CACHE`` (built natively first): for each step ``k`` of ``rl_from``, the run natively and
uninterrupted through step ``k + rl_steps`` (a checkpoint at ``k``), then steps ``k + 1 ..
k + rl_steps`` resumed from that checkpoint, natively and on each of ``rl_cpus`` (``k = 0``: the
run from its start, no resume). Each is compared with the uninterrupted run: the last checkpoint by
every value it holds (weights, optimizer state, random states), the rollouts and validation samples
of those steps byte for byte, and its logged metrics of those steps key by key (timings aside).

Not covered: a real second processor (the emulated ones stand in), the 1,400-step build run
uninterrupted under emulation (its windows only: ~25 s a step emulated), an RL run uninterrupted
under emulation (its windows only: ~10 min a step emulated), GPUs. ``record=true`` writes ``results/numerics_trace/latest.json`` (``part=windows``:
``windows.json``; ``part=rl``: ``rl.json``), which ``docs/provenance.md`` renders.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from hashlib import sha256
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from analysis.render import Table
from core import model as models
from core import numerics, results
from core.cli import UsageError, hydra_main
from core.compose import compose
from core.registry import Registry
from recipes.local import pretrain

#: optimizers compared: (params, lr, betas) -> a torch optimizer, weight decay 0 as in pretraining
OPTIMIZERS: Registry[Callable[..., Any]] = Registry("optimizer")
OPTIMIZERS.add("project", numerics.adamw)


def _torch_default(params: Any, lr: float, betas: tuple[float, float]) -> Any:
    return torch.optim.AdamW(params, lr=lr, betas=betas, weight_decay=0.0)


OPTIMIZERS.add("torch_default", _torch_default)
EMULATOR = "qemu-x86_64"
#: the build traced: the laptop base model's (its corpus, model and pretraining settings)
BUILD = ("recipe=r1_zero", "scale=laptop_base")


def digest(tensors: Any) -> str:
    """sha256 (first 16 hex digits) of the bytes of a sequence of tensors."""
    h = sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def sqrt_misrounded(n: int = 200_003) -> float:
    """Share of ``n`` float32 values whose ``torch.sqrt`` differs from numpy's IEEE square root."""

    x = torch.rand(n, generator=torch.Generator().manual_seed(0)) * 1e-5
    return float((x.sqrt() != torch.from_numpy(np.sqrt(x.numpy()))).float().mean())


def trace(optimizer: str, steps: int, threads: int = 1) -> dict[str, Any]:
    """Weights digest after each of the first ``steps`` pretraining steps of ``scale=laptop_base``
    (at ``threads`` torch threads: ``local.threads``)."""

    cfg = compose([*BUILD, f"local.threads={threads}"])
    p = cfg.local.pretrain
    b = pretrain.setup(cfg, OPTIMIZERS.get(optimizer))
    out: dict[str, Any] = {
        "corpus": sha256(json.dumps(b.seqs).encode()).hexdigest()[:16],
        "init": digest(b.model.state_dict().values()),
        "weights": [],
        "loss": [],
    }
    b.model.train()
    for _ in range(steps):
        loss = b.step(int(p.batch_size), int(p.chunks))
        out["weights"].append(digest(b.model.state_dict().values()))
        out["loss"].append(float(loss).hex())
    out["sqrt_misrounded"] = sqrt_misrounded()
    out["aten"] = numerics.numerics()["aten_cpu_capability"]
    return out


def _build() -> tuple[Any, Any]:
    """The base model's build at step 0 (``scale=laptop_base``, the project's optimizer) and its config."""
    cfg = compose(list(BUILD))
    b = pretrain.setup(cfg)
    b.model.train()
    return cfg, b


def save_state(b: pretrain.Build, path: Path) -> None:
    """Everything a build's next steps depend on: weights, optimizer state, lr schedule, sampler state."""
    state = {
        "model": b.model.state_dict(),
        "opt": b.opt.state_dict(),
        "sched": b.sched.state_dict(),
        "rng": b.rng.getstate(),
    }
    torch.save(state, path)


def load_state(b: pretrain.Build, path: Path) -> None:
    """Put a build at the state :func:`save_state` wrote."""
    state = torch.load(path, weights_only=False)
    b.model.load_state_dict(state["model"])
    b.opt.load_state_dict(state["opt"])
    b.sched.load_state_dict(state["sched"])
    b.rng.setstate(state["rng"])


def build_through(at: list[int], steps: int, root: Path) -> tuple[dict[str, list[str]], str | None]:
    """The build run uninterrupted for ``max(at) + steps`` steps: saves its state to ``root/<k>.pt``
    before step ``k + 1`` for each ``k`` in ``at``; returns, per ``k``, the weights digest after each of
    the ``steps`` steps that follow, and when the last window ends at the build's last step, the
    sha256 of the weights saved as the build saves them (:func:`core.model.weights_sha256`, what a
    base model's ``rlvr_meta.json`` and every results file name it by), else None."""
    cfg, b = _build()
    p = cfg.local.pretrain
    out: dict[str, list[str]] = {str(k): [] for k in at}
    for done in range(max(at) + steps):
        if done in at:
            save_state(b, root / f"{done}.pt")
        b.step(int(p.batch_size), int(p.chunks))
        for k in at:
            if k < done + 1 <= k + steps:
                out[str(k)].append(digest(b.model.state_dict().values()))
    if max(at) + steps != int(p.steps):
        return out, None
    models.save(b.model.eval(), b.tok, root / "final")
    return out, models.weights_sha256(root / "final")


def window(path: Path, steps: int) -> dict[str, Any]:
    """Weights digest after each of ``steps`` build steps from the state saved at ``path``."""
    cfg, b = _build()
    p = cfg.local.pretrain
    load_state(b, path)
    weights = []
    for _ in range(steps):
        b.step(int(p.batch_size), int(p.chunks))
        weights.append(digest(b.model.state_dict().values()))
    return {"weights": weights, "aten": numerics.numerics()["aten_cpu_capability"]}


#: what an RL run's files are compared by: byte for byte (relative paths under the run dir)
RL_FILES = ("checkpoints/global_step_{steps}/state.pt", "rollouts/*.jsonl", "validation/*.jsonl")
#: logged metrics that measure time or memory, not the computation (not compared)
CLOCKS = ("time", "timing", "sec", "perf/", "throughput", "memory", "_mem")


def rl_command(cpu: str | None, run_dir: Path, steps: int, save_freq: int = -1) -> list[str]:
    """A ``r1_zero`` run at ``laptop_base`` through step ``steps`` (checkpoints every ``save_freq`` steps
    and at the end; it resumes from ``run_dir``'s last checkpoint), natively or emulated."""
    cmd = [
        sys.executable,
        "-m",
        "recipes.run",
        "recipe=r1_zero",
        "engine=local",
        "scale=laptop_base",
        f"run_dir={run_dir}",
        "rlvr.seed=0",
        "++local.progress=false",
        "trainer.logger=[file]",
        f"trainer.total_training_steps={steps}",
        "trainer.test_freq=-1",
        f"trainer.save_freq={save_freq}",
    ]
    return cmd if cpu is None else [EMULATOR, "-cpu", cpu, *cmd]


def _after(name: str, step: int) -> bool:
    """Whether a per-step file (``<step>.jsonl``) is of a step after ``step`` (other names: always)."""
    stem = Path(name).stem
    return not stem.isdigit() or int(stem) > step


def content_digest(obj: Any) -> str:
    """sha256 (first 16 hex digits) of what a loaded checkpoint holds: every tensor's dtype, shape and
    bytes and every other value's repr, dict keys in order. A checkpoint is compared by this, not by
    its file: the same values pickle to other bytes when Python shares objects differently (a resumed
    run's floats were unpickled, an uninterrupted run's were computed).

    >>> a = {"lr": 0.1, "w": torch.ones(2), "rng": (3, [1, 2])}
    >>> content_digest(a) == content_digest({"lr": 0.1, "w": torch.ones(2), "rng": (3, [1, 2])})
    True
    >>> content_digest(a) == content_digest({**a, "w": torch.tensor([1.0, 1.0 + 2**-23])})
    False
    """
    h = sha256()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            h.update(b"{")
            for k, v in x.items():
                h.update(repr(k).encode())
                walk(v)
            h.update(b"}")
        elif isinstance(x, list | tuple):
            h.update(b"[")
            for v in x:
                walk(v)
            h.update(b"]")
        elif isinstance(x, torch.Tensor):
            t = x.detach().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(x).encode())

    walk(obj)
    return h.hexdigest()[:16]


def run_files(run_dir: Path, steps: int, after: int = -1) -> dict[str, str]:
    """sha256 of each file of :data:`RL_FILES` in a run dir (rollouts and validation samples of the
    steps after ``after`` only; by default all, step 0's validation too); the checkpoint by
    :func:`content_digest`."""
    out = {}
    for pattern in RL_FILES:
        for f in sorted(run_dir.glob(pattern.format(steps=steps))):
            if f.suffix == ".pt":
                out[str(f.relative_to(run_dir))] = content_digest(torch.load(f, weights_only=False))
            elif _after(f.name, after):
                out[str(f.relative_to(run_dir))] = sha256(f.read_bytes()).hexdigest()[:16]
    return out


def run_metrics(run_dir: Path, after: int = -1) -> dict[str, float]:
    """Every logged metric of a run's steps after ``after`` as ``<step>/<key>``, clocks
    (:data:`CLOCKS`) aside."""
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["step"] <= after:
            continue
        for k, v in rec["data"].items():
            if not any(c in k for c in CLOCKS):
                out[f"{rec['step']}/{k}"] = v
    return out


def resume_point(src: Path, dst: Path, step: int) -> None:
    """A run dir holding only what ``src`` held when it had finished step ``step``: its checkpoint
    there and its run state (no rollouts, samples or metrics), so a run in ``dst`` resumes from it."""
    ckpt = dst / "checkpoints"
    shutil.copytree(src / "checkpoints" / f"global_step_{step}", ckpt / f"global_step_{step}")
    (ckpt / "latest_checkpointed_iteration.txt").write_text(str(step))
    shutil.copy2(src / "local_state.json", dst / "local_state.json")


def _run(cmd: list[str], name: str) -> None:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"RL run on {name}: exit {out.returncode}\n{out.stderr[-2000:]}")


def rl_trace(cpus: list[str], steps: int, root: Path, start: int = 0, jobs: int = 1) -> dict[str, Any]:
    """RL steps ``start + 1 .. start + steps``: the run uninterrupted natively (first: it builds the
    base model if the cache lacks it), then (``start`` > 0) resumed from its checkpoint at ``start``
    natively and on ``cpus``, or (``start`` = 0) from the start on ``cpus``; each compared with the
    uninterrupted run: files that differ, metrics that differ."""
    end = start + steps
    after = start if start else -1  # from the start: step 0's validation samples and metrics too
    print(f"[numerics_trace] RL through step {end}, native, uninterrupted", flush=True)
    _run(rl_command(None, root / "uninterrupted", end, save_freq=start if start else -1), "native")
    names = ["native", *cpus] if start else cpus

    def one(name: str) -> dict[str, Any]:
        d = root / name
        if start:
            resume_point(root / "uninterrupted", d, start)
        print(f"[numerics_trace] RL steps {start + 1}-{end}, {name}", flush=True)
        _run(rl_command(None if name == "native" else name, d, end), name)
        return {"files": run_files(d, end, after), "metrics": run_metrics(d, after)}

    ref_dir = root / "uninterrupted"
    ref = {"files": run_files(ref_dir, end, after), "metrics": run_metrics(ref_dir, after)}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = {"uninterrupted": ref, **dict(zip(names, pool.map(one, names), strict=True))}
    rows = []
    for name, r in runs.items():
        if name == "uninterrupted" and start:
            continue
        rows.append(
            {
                "from_step": start,
                "processor": "native" if name == "uninterrupted" else name,
                "resumed": bool(start),
                "files": len(r["files"]),
                "files_differing": sorted(k for k in ref["files"] if r["files"].get(k) != ref["files"][k]),
                "metrics": len(r["metrics"]),
                "metrics_differing": {
                    k: [ref["metrics"][k], r["metrics"].get(k)]
                    for k in ref["metrics"]
                    if r["metrics"].get(k) != ref["metrics"][k]
                },
            }
        )
    return {"from_step": start, "steps": steps, "rows": rows, "runs": runs}


def worker_command(cpu: str | None, *args: Any) -> list[str]:
    """The command that prints one worker's JSON, natively (``cpu=None``) or emulated: ``(optimizer,
    steps, threads)`` for :func:`trace`, ``("--window", state_path, steps)`` for :func:`window`."""
    head = [] if args[:1] == ("--window",) else ["--worker"]
    cmd = [sys.executable, "-m", "experiments.numerics_trace", *head, *map(str, args)]
    return cmd if cpu is None else [EMULATOR, "-cpu", cpu, *cmd]


def run_worker(cpu: str | None, *args: Any) -> dict[str, Any]:
    """One worker (:func:`worker_command`) in a fresh process (the kernels are chosen when torch
    first computes); its JSON."""
    out = subprocess.run(worker_command(cpu, *args), capture_output=True, text=True, env=os.environ.copy())
    if out.returncode != 0:
        raise RuntimeError(f"{cpu or 'native'} {args}: exit {out.returncode}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def first_difference(a: list[str], b: list[str]) -> int | None:
    """The first step (1-based) at which two weight traces differ, or None.

    >>> first_difference(["x", "y"], ["x", "z"]), first_difference(["x"], ["x"])
    (2, None)
    """
    return next((i + 1 for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), None)


def emulator_version() -> str:
    """``qemu-x86_64 --version``'s first line."""
    return subprocess.run([EMULATOR, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def check_emulator() -> None:
    """Refuse with the fix when QEMU's user-mode emulator is missing or the machine is not x86-64."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise UsageError(f"numerics_trace emulates x86-64 processors; this machine is {platform.machine()}")
    if shutil.which(EMULATOR) is None:
        raise UsageError(
            f"{EMULATOR} not found (fix: `apt-get install qemu-user`; `make setup` installs it on Debian/Ubuntu as root)"
        )


def command(cfg: DictConfig) -> int:
    check_emulator()
    part = str(cfg.part)
    if part not in ("all", "pretrain", "windows", "rl"):
        raise UsageError(f"[part] {part!r}: one of all, pretrain, windows, rl")
    if part in ("all", "pretrain"):
        pretrain_part(cfg)
    if part in ("all", "windows"):
        windows_part(cfg)
    if part in ("all", "rl"):
        rl_part(cfg)
    return 0


def rl_part(cfg: DictConfig) -> None:
    """RL steps from each step of ``rl_from``, natively and on ``rl_cpus``, compared with the run
    uninterrupted; recorded as ``rl.json``."""
    steps, cpus = int(cfg.rl_steps), [str(c) for c in cfg.rl_cpus]
    starts = sorted({int(k) for k in cfg.rl_from})
    if steps < 1 or not cpus or not starts or min(starts) < 0:
        raise UsageError("[rl_steps] at least 1, [rl_cpus] at least one QEMU model, [rl_from] steps >= 0")
    traces = []
    for start in starts:
        with tempfile.TemporaryDirectory(prefix="rlvr-numerics-rl-") as tmp:
            traces.append(rl_trace(cpus, steps, Path(tmp), start, int(cfg.jobs)))
    rows = [
        [
            f"{r['from_step'] + 1}–{r['from_step'] + steps}",
            r["processor"] + (" (resumed)" if r["resumed"] else ""),
            f"{r['files'] - len(r['files_differing'])} of {r['files']}",
            f"{r['metrics'] - len(r['metrics_differing'])} of {r['metrics']}",
            ", ".join(f"`{k}`" for k in r["metrics_differing"]) or "none",
        ]
        for t in traces
        for r in t["rows"]
    ]
    head = ["steps", "processor", "files identical", "metrics identical", "metrics differing"]
    print(Table(head, rows).markdown())
    if cfg.record:
        summary = {
            "steps": steps,
            "rl_from": starts,
            "rows": [r for t in traces for r in t["rows"]],
            "runs": {str(t["from_step"]): t["runs"] for t in traces},
            "native": results.cpu(),
            "emulator": emulator_version(),
            "cpus": cpus,
        }
        print(f"written {results.write_table('numerics_trace', 'rl', summary)}")


def check_windows(at: list[int], steps: int, total: int) -> None:
    """Refuse windows that do not lie inside a build of ``total`` steps.

    >>> check_windows([700, 1394], 6, 1400)
    >>> check_windows([1398], 6, 1400)
    Traceback (most recent call last):
    ...
    core.cli.UsageError: [window_at] 1398 + steps=6 runs past the build's 1400 steps (local.pretrain.steps); fix: start it at 1394 or earlier
    """
    if not at or steps < 1:
        raise UsageError("[window_at] at least one step and [steps] at least 1")
    for k in at:
        if k < 0 or k + steps > total:
            raise UsageError(
                f"[window_at] {k} + steps={steps} runs past the build's {total} steps (local.pretrain.steps); "
                f"fix: start it at {total - steps} or earlier"
            )


def compare_windows(
    through: dict[str, list[str]], done: dict[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row per (window, processor): the first step of the window whose weights differ from the
    uninterrupted build's (``None``: none).

    >>> compare_windows({"700": ["a", "b"]}, {("700", "native"): {"weights": ["a", "b"]},
    ...                                        ("700", "Haswell-v4"): {"weights": ["a", "c"]}})
    [{'window_at': 700, 'processor': 'native', 'steps': 2, 'first_step_differing': None}, \
{'window_at': 700, 'processor': 'Haswell-v4', 'steps': 2, 'first_step_differing': 702}]
    """
    rows = []
    for (k, cpu), t in done.items():
        part = first_difference(through[k], t["weights"])
        rows.append(
            {
                "window_at": int(k),
                "processor": cpu,
                "steps": len(t["weights"]),
                "first_step_differing": None if part is None else int(k) + part,
            }
        )
    return rows


def windows_part(cfg: DictConfig) -> None:
    """The build's later steps, a window at a time, natively and on ``cpus``; recorded as ``windows.json``."""
    steps, cpus = int(cfg.steps), [str(c) for c in cfg.cpus]
    at = sorted({int(k) for k in cfg.window_at})
    total = int(compose(list(BUILD)).local.pretrain.steps)
    check_windows(at, steps, total)
    with tempfile.TemporaryDirectory(prefix="rlvr-numerics-windows-") as tmp:
        root = Path(tmp)
        print(
            f"[numerics_trace] the build natively through step {max(at) + steps}, saving its state at {at}",
            flush=True,
        )
        through, final = build_through(at, steps, root)
        jobs = [(str(k), cpu) for k in at for cpu in ["native", *cpus]]
        print(
            f"[numerics_trace] {len(jobs)} windows of {steps} steps ({len(cpus)} emulated processors)",
            flush=True,
        )

        def one(job: tuple[str, str]) -> dict[str, Any]:
            k, cpu = job
            return run_worker(None if cpu == "native" else cpu, "--window", root / f"{k}.pt", steps)

        with ThreadPoolExecutor(max_workers=int(cfg.jobs)) as pool:
            done = dict(zip(jobs, pool.map(one, jobs), strict=True))
    rows = compare_windows(through, done)
    table = Table(["window from step", "processor", "weights part at step"], [])
    for r in rows:
        part = r["first_step_differing"]
        table.rows.append([str(r["window_at"]), r["processor"], "never" if part is None else str(part)])
    print(table.markdown())
    if cfg.record:
        summary = {
            "steps": steps,
            "build_steps": total,
            "window_at": at,
            "native": results.cpu(),
            "emulator": emulator_version(),
            "cpus": cpus,
            "rows": rows,
            "through": through,
            "final_weights_sha256": final,
            "windows": {f"{k}/{cpu}": t for (k, cpu), t in done.items()},
        }
        print(f"written {results.write_table('numerics_trace', 'windows', summary)}")


def pretrain_part(cfg: DictConfig) -> None:
    """The pretraining traces natively and on ``cpus``, per optimizer, and natively at the other thread
    counts of ``threads``; recorded as ``latest.json``."""
    steps, cpus = int(cfg.steps), [str(c) for c in cfg.cpus]
    if steps < 1 or not cpus:
        raise UsageError("[steps] at least 1 and [cpus] at least one QEMU model (qemu-x86_64 -cpu help)")
    threads = sorted({int(t) for t in cfg.threads if int(t) != 1})
    # (processor, optimizer, threads): both optimizers on every processor at one thread, then the
    # project's optimizer natively at each other thread count
    jobs = [(cpu, opt, 1) for opt in OPTIMIZERS.names() for cpu in [None, *cpus]]
    jobs += [(None, "project", t) for t in threads]
    print(
        f"[numerics_trace] {len(jobs)} traces of {steps} steps ({len(cpus)} emulated processors)", flush=True
    )
    with ThreadPoolExecutor(max_workers=int(cfg.jobs)) as pool:
        done = list(pool.map(lambda j: run_worker(j[0], j[1], steps, j[2]), jobs))

    def name(cpu: str | None, opt: str, t: int) -> str:
        return f"{cpu or 'native'}/{opt}" + (f"/{t}threads" if t != 1 else "")

    traces = {name(*j): t for j, t in zip(jobs, done, strict=True)}
    rows = []
    for cpu, opt, n in jobs:
        t, ref = traces[name(cpu, opt, n)], traces[f"native/{opt}"]
        part = first_difference(ref["weights"], t["weights"])
        rows.append(
            {
                "processor": cpu or "native",
                "optimizer": opt,
                "threads": n,
                "corpus_same": t["corpus"] == ref["corpus"],
                "init_same": t["init"] == ref["init"],
                "first_step_differing": part,
                "sqrt_misrounded": t["sqrt_misrounded"],
            }
        )
    header = [
        "processor",
        "optimizer",
        "threads",
        "same corpus and initial weights",
        "weights part at step",
        "sqrt misrounded",
    ]
    table = Table(header, [])
    for r in rows:
        table.rows.append(
            [
                r["processor"],
                r["optimizer"],
                str(r["threads"]),
                "yes" if r["corpus_same"] and r["init_same"] else "no",
                "never" if r["first_step_differing"] is None else str(r["first_step_differing"]),
                f"{r['sqrt_misrounded']:.2%}",
            ]
        )
    print(table.markdown())
    summary = {
        "steps": steps,
        "native": results.cpu(),
        "emulator": emulator_version(),
        "cpus": cpus,
        "rows": rows,
        "traces": traces,
    }
    if cfg.record:
        print(f"written {results.write_table('numerics_trace', 'latest', summary)}")


main = hydra_main("command", "numerics_trace", command)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        print(json.dumps(trace(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    elif sys.argv[1:2] == ["--window"]:
        print(json.dumps(window(Path(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
