"""veRL's platform interface answered for the CPU, registered as ``cpu`` with veRL's ``PlatformRegistry``.

veRL 0.9.1 ships platforms for NVIDIA, Ascend and others, none for a CPU: its detection falls back to
NVIDIA (``verl/plugin/platform/platform_manager.py:114``) and every ``get_device_name()`` answers
``cuda``. :class:`PlatformCPU` answers ``cpu`` for the device, ``gloo`` for collectives, the host's
RAM for ``mem_get_info`` and no-ops for the rest. Selected by ``VERL_PLATFORM=cpu``
(``platform_manager.py:92``) or :func:`use` in one process.

Ray: veRL's resource pools always ask for accelerators (``verl/single_controller/ray/base.py:146-148,210``),
so the platform's Ray resource is ``GPU`` and a CPU run declares *logical* GPUs
(``ray_kwargs.ray_init.num_gpus``): Ray hands out that many slots, each a process on the CPU.
Not covered: memory accounting (allocated/reserved answer 0), device profiling.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import psutil
import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry, set_platform

_ZERO = ("max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved")


#: The checkpoint engine the async trainer modes sync standalone replicas with over gloo
#: (:mod:`verl_cpu.checkpoint_engine`; ``actor_rollout_ref.rollout.checkpoint_engine.backend``).
CHECKPOINT_ENGINE = "cpu_gloo"


def device_module() -> ModuleType:
    """``torch.cpu`` plus the calls veRL makes of a device module (memory numbers from psutil;
    ``get/set_rng_state`` are the CPU generator's, which veRL's checkpoints save and restore under
    the device name, ``verl/utils/checkpoint/checkpoint_manager.py:219``)."""
    mod = ModuleType("verl_cpu_device")
    for name in dir(torch.cpu):
        if not name.startswith("_"):
            setattr(mod, name, getattr(torch.cpu, name))
    for name in _ZERO:
        setattr(mod, name, lambda *a, **k: 0)
    mod.mem_get_info = lambda *a, **k: (psutil.virtual_memory().available, psutil.virtual_memory().total)
    mod.get_device_name = lambda *a, **k: "cpu"
    mod.reset_peak_memory_stats = lambda *a, **k: None
    mod.empty_cache = lambda *a, **k: None
    mod.is_available = lambda: True
    mod.device_count = lambda: 1
    mod.current_device = lambda: "cpu"
    mod.set_device = lambda *a, **k: None
    mod.synchronize = lambda *a, **k: None
    mod.manual_seed = torch.manual_seed
    mod.manual_seed_all = torch.manual_seed
    mod.get_rng_state = lambda *a, **k: torch.get_rng_state()
    mod.set_rng_state = lambda state, *a, **k: torch.set_rng_state(state)
    return mod


@PlatformRegistry.register(platform="cpu")
class PlatformCPU(PlatformBase):
    """The CPU as a veRL platform: device ``cpu``, collectives over gloo, logical Ray ``GPU`` slots."""

    device_name = "cpu"
    vendor_name = "cpu"
    device_module = device_module()

    def is_available(self) -> bool:
        return True

    def current_device(self) -> Any:  # veRL passes it to .to() and torch.device(): "cpu", not 0 (= cuda:0)
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return (None, None)

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Iterator[None]:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # logical GPUs: ray_init.num_gpus declares them on a CPU machine

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def use() -> None:
    """Make the CPU veRL's platform in this process (what ``VERL_PLATFORM=cpu`` does at first use)."""
    set_platform(PlatformCPU())
