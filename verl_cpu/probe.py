"""Where a veRL CPU run spends its time: phase timers inside veRL's own processes.

With ``VERL_CPU_PROFILE=<file>`` in the environment of every process of a run (the launch forwards
it like :data:`verl_cpu.ENV`), importing :mod:`verl_cpu` wraps the veRL functions of :data:`PHASES`
with a timer that appends one JSON line per call to ``<file>``: the phase, the process (pid and its
Ray role, e.g. ``TaskRunnerV1``, ``WorkerDict``, ``CPURolloutServer``), wall start and end
(``time.time()``), the process's CPU seconds during the call (``time.process_time()``: every
thread of the process) and its niceness. Lines are appended with one ``write`` each (``O_APPEND``), so the processes
of a run share the file. The wrappers call the wrapped function unchanged: a timer, not a patch.

What it does not do: sample the processes (:mod:`benchmarks.profile_verl_cpu` polls each process's
CPU time from outside, which also sees the time between phases: idle polls, Ray's own threads), or
time anything when the variable is unset (nothing is wrapped).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from verl_cpu import patches

#: The environment variable naming the file the timers append to.
PROFILE_ENV = "VERL_CPU_PROFILE"

#: ``(module, attribute path, phase)``: the veRL functions timed, in the order a run reaches them.
PHASES: tuple[tuple[str, str, str], ...] = (
    ("ray", "init", "ray.init"),
    ("transfer_queue", "init", "transfer_queue.init"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer.__init__", "trainer.__init__"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer._init_dataloader", "setup.dataloader"),
    ("verl.single_controller.ray.base", "RayWorkerGroup.__init__", "setup.worker_group"),
    ("verl.workers.engine_workers", "ActorRolloutRefWorker.init_model", "worker.init_model"),
    ("verl.experimental.reward_loop.reward_loop", "RewardLoopManager.__init__", "setup.reward_loop"),
    ("verl.workers.rollout.llm_server", "LLMServerManager._initialize_llm_servers", "setup.rollout_servers"),
    ("verl.checkpoint_engine.base", "CheckpointEngineManager.__init__", "setup.checkpoint_engine"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer._load_checkpoint", "setup.load_checkpoint"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer.init", "trainer.init"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer._validate", "validate"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer._save_checkpoint", "save_checkpoint"),
    ("verl.trainer.ppo.v1.trainer_base", "PPOTrainer.fit", "fit"),
    ("verl.workers.engine_workers", "TrainingWorker.infer_batch", "worker.infer_batch"),
    ("verl.workers.engine_workers", "TrainingWorker.train_mini_batch", "worker.train_mini_batch"),
    ("verl_cpu.server", "CPURolloutServer._decode", "server.decode"),
    ("verl_cpu.server", "CPURolloutServer.update_weights", "server.update_weights"),
)


def role() -> str:
    """This process's role: the Ray actor class in its title (``ray::WorkerDict.init_model`` ->
    ``WorkerDict``), else ``driver``."""
    try:
        title = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
    except OSError:
        return "driver"
    if title.startswith("ray::"):
        return title[5:].split(".")[0].split(" ")[0] or "ray"
    return "driver"


def _write(path: str, row: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(row) + "\n").encode())
    finally:
        os.close(fd)


def timed(fn: Callable, phase: str, path: str) -> Callable:
    """``fn`` wrapped so each call appends its phase row to ``path`` (coroutines too)."""

    def row(t0: float, c0: float) -> dict[str, Any]:
        return {
            "phase": phase,
            "pid": os.getpid(),
            "role": role(),
            "start": t0,
            "end": time.time(),
            "cpu_s": time.process_time() - c0,
            "nice": os.nice(0),
        }

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            t0, c0 = time.time(), time.process_time()
            try:
                return await fn(*args, **kwargs)
            finally:
                _write(path, row(t0, c0))

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0, c0 = time.time(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            _write(path, row(t0, c0))

    return wrapper


def _wrap(attr: str, phase: str, path: str, module: ModuleType) -> None:
    *owner_path, name = attr.split(".")
    owner: Any = module
    for part in owner_path:
        owner = getattr(owner, part)
    raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    if getattr(raw, "__verl_cpu_probe__", False):
        return
    if isinstance(raw, classmethod | staticmethod):
        wrapped = type(raw)(timed(raw.__func__, phase, path))
        wrapped.__func__.__verl_cpu_probe__ = True
    else:
        wrapped = timed(raw, phase, path)
        wrapped.__verl_cpu_probe__ = True
    setattr(owner, name, wrapped)


def install() -> list[str]:
    """Wrap every :data:`PHASES` function (now, or when its module is imported) when
    :data:`PROFILE_ENV` is set; returns the phases wrapped (none when it is unset)."""
    path = os.environ.get(PROFILE_ENV)
    if not path:
        return []
    for module, attr, phase in PHASES:
        patches.when_imported(module, functools.partial(_wrap, attr, phase, path))
    return [p for _, _, p in PHASES]


def read(path: Path) -> list[dict[str, Any]]:
    """The rows a run's timers wrote (none when it wrote none: the local engine; a line cut short by a
    killed process is skipped)."""
    rows: list[dict[str, Any]] = []
    if not Path(path).is_file():
        return rows
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows
