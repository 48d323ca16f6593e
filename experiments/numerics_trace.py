"""``make results NAME=numerics_trace``: does the base model's pretraining compute the same floats on another processor?

Runs the first ``steps`` steps of the laptop base model's pretraining (``scale=laptop_base``: its
corpus, tokenizer, initial weights, batches and :func:`recipes.local.pretrain.lm_step`) on this
processor and, under QEMU's user-mode emulator (``qemu-x86_64 -cpu <model>``), as the x86-64
processors in ``cpus`` (an Intel Haswell and an AMD EPYC Rome by default: AVX2, no AVX-512), once
per optimizer of :data:`OPTIMIZERS` (the project's, :func:`core.numerics.adamw`, and torch's
default AdamW). It records a sha256 of the weights after every step, the first step at which each
processor's weights part from this one's, and on each processor the share of float32 square roots
``torch.sqrt`` does not round correctly (against numpy's IEEE square root).

Why emulation stands in for a second machine: QEMU computes every IEEE operation (add, multiply,
FMA, divide, square root) with the same rounding as hardware, and differs from hardware only where
the instruction set leaves the result to the implementation (the ``rsqrtps``/``rcpps``
approximations, which Intel and AMD also implement differently). So code whose floats depend on the
processor shows up as a difference here; code that uses only IEEE operations cannot.

With ``rl_steps`` > 0 it also runs ``rl_steps`` steps of the ``r1_zero`` recipe (``scale=laptop_base``,
seed 0) from the base model in ``RLVR_CACHE`` (built natively first), natively and on each of
``rl_cpus``, and compares the runs' files byte for byte -- the checkpoint (weights and optimizer
state), the rollouts, the validation samples -- and their logged metrics key by key (timings aside).

Not covered: a real second processor (the emulated ones stand in), the whole 1,400-step build (the
first steps only: ~25 s a step emulated), RL beyond its first steps, GPUs. ``record=true`` writes
``results/numerics_trace/latest.json`` (``part=rl``: ``rl.json``), which ``docs/provenance.md``
renders.
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


def trace(optimizer: str, steps: int) -> dict[str, Any]:
    """Weights digest after each of the first ``steps`` pretraining steps of ``scale=laptop_base``."""

    cfg = compose(["recipe=r1_zero", "scale=laptop_base"])
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


#: what an RL run's files are compared by: byte for byte (relative paths under the run dir)
RL_FILES = ("checkpoints/global_step_{steps}/state.pt", "rollouts/*.jsonl", "validation/*.jsonl")
#: logged metrics that measure time or memory, not the computation (not compared)
CLOCKS = ("time", "timing", "sec", "perf/", "throughput", "memory", "_mem")


def rl_command(cpu: str | None, run_dir: Path, steps: int) -> list[str]:
    """A ``steps``-step ``r1_zero`` run at ``laptop_base`` (no checkpoint but the last), natively or emulated."""
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
        "trainer.save_freq=-1",
    ]
    return cmd if cpu is None else [EMULATOR, "-cpu", cpu, *cmd]


def run_files(run_dir: Path, steps: int) -> dict[str, str]:
    """sha256 of each file of :data:`RL_FILES` in a run dir."""
    out = {}
    for pattern in RL_FILES:
        for f in sorted(run_dir.glob(pattern.format(steps=steps))):
            out[str(f.relative_to(run_dir))] = sha256(f.read_bytes()).hexdigest()[:16]
    return out


def run_metrics(run_dir: Path) -> dict[str, float]:
    """Every logged metric of a run as ``<step>/<key>``, clocks (:data:`CLOCKS`) aside."""
    out = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for k, v in rec["data"].items():
            if not any(c in k for c in CLOCKS):
                out[f"{rec['step']}/{k}"] = v
    return out


def rl_trace(cpus: list[str], steps: int, root: Path) -> dict[str, Any]:
    """RL runs natively (first: it builds the base model if the cache lacks it) and on ``cpus``,
    compared with the native one: files that differ, metrics that differ."""
    runs = {}
    for cpu in [None, *cpus]:
        name = cpu or "native"
        print(f"[numerics_trace] RL, {steps} steps, {name}", flush=True)
        out = subprocess.run(rl_command(cpu, root / name, steps), capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"RL run on {name}: exit {out.returncode}\n{out.stderr[-2000:]}")
        runs[name] = {"files": run_files(root / name, steps), "metrics": run_metrics(root / name)}
    ref = runs["native"]
    rows = []
    for name, r in runs.items():
        rows.append(
            {
                "processor": name,
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
    return {"steps": steps, "rows": rows, "runs": runs}


def worker_command(cpu: str | None, optimizer: str, steps: int) -> list[str]:
    """The command that prints one :func:`trace` as JSON, natively (``cpu=None``) or emulated."""
    cmd = [sys.executable, "-m", "experiments.numerics_trace", "--worker", optimizer, str(steps)]
    return cmd if cpu is None else [EMULATOR, "-cpu", cpu, *cmd]


def run_worker(cpu: str | None, optimizer: str, steps: int) -> dict[str, Any]:
    """One :func:`trace` in a fresh process (the kernels are chosen when torch first computes)."""
    out = subprocess.run(
        worker_command(cpu, optimizer, steps), capture_output=True, text=True, env=os.environ.copy()
    )
    if out.returncode != 0:
        raise RuntimeError(f"{cpu or 'native'} {optimizer}: exit {out.returncode}\n{out.stderr[-2000:]}")
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
    if part not in ("all", "pretrain", "rl"):
        raise UsageError(f"[part] {part!r}: one of all, pretrain, rl")
    if part in ("all", "pretrain"):
        pretrain_part(cfg)
    if part in ("all", "rl"):
        rl_part(cfg)
    return 0


def rl_part(cfg: DictConfig) -> None:
    """The RL runs natively and on ``rl_cpus``, compared; recorded as ``rl.json``."""
    steps, cpus = int(cfg.rl_steps), [str(c) for c in cfg.rl_cpus]
    if steps < 1 or not cpus:
        raise UsageError("[rl_steps] at least 1 and [rl_cpus] at least one QEMU model")
    with tempfile.TemporaryDirectory(prefix="rlvr-numerics-rl-") as tmp:
        rl = rl_trace(cpus, steps, Path(tmp))
    rows = [
        [
            r["processor"],
            f"{r['files'] - len(r['files_differing'])} of {r['files']}",
            f"{r['metrics'] - len(r['metrics_differing'])} of {r['metrics']}",
            ", ".join(f"`{k}`" for k in r["metrics_differing"]) or "none",
        ]
        for r in rl["rows"]
    ]
    print(Table(["processor", "files identical", "metrics identical", "metrics differing"], rows).markdown())
    if cfg.record:
        summary = {**rl, "native": results.cpu(), "emulator": emulator_version(), "cpus": cpus}
        print(f"written {results.write_table('numerics_trace', 'rl', summary)}")


def pretrain_part(cfg: DictConfig) -> None:
    """The pretraining traces natively and on ``cpus``, per optimizer; recorded as ``latest.json``."""
    steps, cpus = int(cfg.steps), [str(c) for c in cfg.cpus]
    if steps < 1 or not cpus:
        raise UsageError("[steps] at least 1 and [cpus] at least one QEMU model (qemu-x86_64 -cpu help)")
    jobs = [(cpu, opt) for opt in OPTIMIZERS.names() for cpu in [None, *cpus]]
    print(
        f"[numerics_trace] {len(jobs)} traces of {steps} steps ({len(cpus)} emulated processors)", flush=True
    )
    with ThreadPoolExecutor(max_workers=int(cfg.jobs)) as pool:
        done = list(pool.map(lambda j: run_worker(j[0], j[1], steps), jobs))
    traces = {f"{cpu or 'native'}/{opt}": t for (cpu, opt), t in zip(jobs, done, strict=True)}
    rows = []
    for cpu, opt in jobs:
        t, ref = traces[f"{cpu or 'native'}/{opt}"], traces[f"native/{opt}"]
        part = first_difference(ref["weights"], t["weights"])
        rows.append(
            {
                "processor": cpu or "native",
                "optimizer": opt,
                "corpus_same": t["corpus"] == ref["corpus"],
                "init_same": t["init"] == ref["init"],
                "first_step_differing": part,
                "sqrt_misrounded": t["sqrt_misrounded"],
            }
        )
    header = [
        "processor",
        "optimizer",
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
        print(json.dumps(trace(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
