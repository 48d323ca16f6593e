"""A CPU backend for veRL 0.9.1: its own trainer (``python -m verl.trainer.main_ppo``) on a machine without a GPU.

An extension of veRL through its registries, not a fork. Importing this package (veRL does, in
every Ray process, when ``VERL_USE_EXTERNAL_MODULES=verl_cpu``: ``verl/__init__.py:49``):

- registers the ``cpu`` platform (:mod:`verl_cpu.platform`; selected by ``VERL_PLATFORM=cpu``);
- registers the ``cpu`` rollout backend (:mod:`verl_cpu.rollout`, :mod:`verl_cpu.server`:
  batched KV-cache sampling with the project's sampler; ``actor_rollout_ref.rollout.name=cpu``);
- registers the ``cpu_gloo`` checkpoint engine (:mod:`verl_cpu.checkpoint_engine`: the async
  trainers' weight sync to standalone replicas over gloo; ``...checkpoint_engine.backend=cpu_gloo``);
- applies the patches of veRL internals that no config reaches (:mod:`verl_cpu.patches`), each
  pinned to the veRL version and source it was written for;
- sets torch's thread count from ``VERL_CPU_THREADS``;
- with ``VERL_CPU_PROFILE=<file>``, times veRL's phases in every process (:mod:`verl_cpu.probe`).

The config changes a CPU run needs (FSDP2, fp32, SDPA, logical GPUs for Ray, ...) and the
environment are not here: :mod:`recipes.launch_verl` applies and prints them. With
``VERL_PLATFORM`` unset or not ``cpu`` importing this package registers the platform and the
backend (harmless) and patches nothing. What still needs a GPU: vLLM/SGLang rollouts, NCCL,
Ulysses sequence parallelism (its all-to-all is patched into flash-attention 2 only), tensor
parallelism.
"""

from __future__ import annotations

import os

import core  # noqa: F401 - first: pins the CPU arithmetic before veRL imports torch (core.numerics)
from verl_cpu import patches, probe
from verl_cpu.platform import CHECKPOINT_ENGINE, PlatformCPU

__all__ = ["CHECKPOINT_ENGINE", "ENV", "PlatformCPU", "active", "install"]


#: The environment a process of a CPU run needs (forwarded to every Ray process by the launch).
ENV = {
    "VERL_USE_EXTERNAL_MODULES": "verl_cpu",
    "VERL_PLATFORM": "cpu",
    # the FSDP engine is registered for cuda/npu only (verl/workers/engine/base.py:405); the engine
    # itself then runs on the platform's device, the CPU
    "VERL_ENGINE_DEVICE": "cuda",
}


def active() -> bool:
    """Whether this process runs on the CPU platform (``VERL_PLATFORM=cpu``)."""
    return os.environ.get("VERL_PLATFORM", "").strip().lower() == "cpu"


def install() -> list[str]:
    """Register the rollout backend and the checkpoint engine (when veRL imports its replica and
    checkpoint-engine modules), and on the CPU platform apply the patches and the thread count;
    returns the patches' names. Idempotent."""

    def _register(_mod: object) -> None:
        from verl_cpu.rollout import register  # ray and veRL's replica module: once veRL imports it

        register()

    def _register_engine(_mod: object) -> None:
        import verl_cpu.checkpoint_engine  # noqa: F401 - registers cpu_gloo with veRL's CheckpointEngineRegistry

    patches.when_imported("verl.workers.rollout.replica", _register)
    patches.when_imported("verl.checkpoint_engine.base", _register_engine)
    if not active():
        return []
    from verl_cpu.server import set_threads  # torch: on the CPU platform only

    set_threads()
    probe.install()
    return patches.apply()


install()
