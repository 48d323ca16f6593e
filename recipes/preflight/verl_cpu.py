"""What veRL 0.9.1's actor engine needs to run on a CPU, in one process, and nothing more.

:func:`install_cpu_platform` registers a CPU platform with veRL (it has none and falls back to
NVIDIA), sets ``VERL_ENGINE_DEVICE=cuda`` (the FSDP engine is registered for cuda/npu only), lets
FSDP2's CPU offload policy of the forward-only reference skip pinned memory (which needs CUDA) and
starts a one-process gloo group -- each once per process; an existing group is kept, so repeated
calls in one pytest process are safe. :func:`cpu_section` applies the config changes to a copy of
an actor/ref section; :func:`worker` builds a ``TrainingWorker`` as
``ActorRolloutRefWorker.init_model`` does. Every change is listed in :data:`CPU_CHANGES` (the
rehearsal prints it). Not covered: several processes, any accelerator, CUDA memory numbers (the
device module answers 0 for allocated/reserved and the host's RAM for ``mem_get_info``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil
import torch
from omegaconf import DictConfig, OmegaConf
from torch.distributed.fsdp import CPUOffloadPolicy
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import set_platform
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.engine.fsdp import transformer_impl
from verl.workers.engine_workers import TrainingWorker, TrainingWorkerConfig

#: What the rehearsal changes in the recipe's config, and why (a CPU needs it). Printed with the result.
CPU_CHANGES: dict[str, str] = {
    "platform": "a CPU platform registered with veRL (verl.plugin.platform.set_platform): veRL has none and "
    "falls back to NVIDIA",
    "VERL_ENGINE_DEVICE": "cuda: veRL registers the FSDP engine for cuda/npu only (verl/workers/engine/base.py)",
    "actor_rollout_ref.model.override_config.attn_implementation": "sdpa (flash-attention 2 needs a GPU)",
    "actor_rollout_ref.actor.strategy": "fsdp2 (FSDP1's sync_module_states needs GPU parameters)",
    "actor_rollout_ref.{actor,ref}.fsdp_config.mixed_precision": "param/reduce/buffer dtype fp32 (bf16 autocast "
    "would put log-probs 2e-2 off)",
    "ref CPUOffloadPolicy": "pin_memory=False: veRL holds the forward-only reference in FSDP2's "
    "CPUOffloadPolicy(pin_memory=True) (transformer_impl.py), and pinned memory needs CUDA",
    "actor_rollout_ref.{actor,ref}.use_torch_compile": "false: compiling veRL's entropy kernel costs ~20 s on CPU "
    "(the same numbers)",
    "actor_rollout_ref.actor.optim.lr_warmup_steps(_ratio)": "0: the one update runs at the recipe's lr (the "
    "first warmup step has lr 0, which would hide whether the update moves the weights)",
    "actor_rollout_ref.{actor,ref}.fsdp_config.{param,optimizer}_offload": "false: everything already lives in "
    "CPU memory",
    "world_size": "1, one process with gloo (the GPU run shards over trainer.n_gpus_per_node x nnodes)",
}

_CPU_ATTRS = ("max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved")


def _cpu_device_module() -> ModuleType:
    """``torch.cpu`` with the calls veRL makes of a device module (memory numbers from psutil)."""
    mod = ModuleType("rlvr_cpu_device")
    for name in dir(torch.cpu):
        if not name.startswith("_"):
            setattr(mod, name, getattr(torch.cpu, name))
    for name in _CPU_ATTRS:
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
    return mod


class PlatformCPU(PlatformBase):
    """veRL's platform interface answered for the CPU: every abstract method a no-op or the CPU's answer."""

    device_name = "cpu"
    vendor_name = "cpu"
    device_module = _cpu_device_module()

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
        return "CPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def _unpinned(pin_memory: bool = True) -> CPUOffloadPolicy:
    """FSDP2's CPU offload policy without pinned memory (veRL asks ``pin_memory=True``; it needs CUDA)."""
    return CPUOffloadPolicy(pin_memory=False)


@functools.cache
def install_cpu_platform() -> None:
    """The CPU platform, ``VERL_ENGINE_DEVICE=cuda``, unpinned offload and a one-process gloo group
    (once per process; a process group that already exists is kept)."""
    os.environ["VERL_ENGINE_DEVICE"] = "cuda"
    set_platform(PlatformCPU())
    transformer_impl.CPUOffloadPolicy = _unpinned  # the forward-only reference's offload policy
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")):
        os.environ.setdefault(key, value)
    if not torch.distributed.is_initialized():
        if "MASTER_PORT" not in os.environ:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        torch.distributed.init_process_group("gloo", rank=0, world_size=1)


def cpu_section(section: DictConfig) -> DictConfig:
    """A resolved copy of an actor/ref section with the CPU changes (strategy, fp32)."""
    s = OmegaConf.create(OmegaConf.to_container(section, resolve=True))
    s.strategy = "fsdp2"
    s.use_torch_compile = False
    s.fsdp_config.use_torch_compile = False
    mp = {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}
    s.fsdp_config.mixed_precision = mp
    if "optim" in s and s.optim is not None:
        s.optim.lr_warmup_steps = 0
        s.optim.lr_warmup_steps_ratio = 0.0
    s.fsdp_config.param_offload = False
    s.fsdp_config.optimizer_offload = False
    s.fsdp_config.offload_policy = False
    if "ulysses_sequence_parallel_size" in s:
        s.ulysses_sequence_parallel_size = 1
    s.fsdp_config.ulysses_sequence_parallel_size = 1
    return s


def sp_size(section: DictConfig) -> int:
    """The Ulysses sequence-parallel size an actor/ref section gives its engine (veRL's
    ``FSDPActorConfig.__post_init__`` copies the section's own key into ``fsdp_config`` when > 1)."""
    own = int(section.get("ulysses_sequence_parallel_size") or 1)
    return max(own, int(section.fsdp_config.get("ulysses_sequence_parallel_size") or 1))


def model_config(cfg: DictConfig, checkpoint: str | Path) -> Any:
    """veRL's ``HFModelConfig`` of ``actor_rollout_ref.model`` on ``checkpoint``, with SDPA attention."""

    m = OmegaConf.create(OmegaConf.to_container(cfg.actor_rollout_ref.model, resolve=True))
    m.path = str(checkpoint)
    m.tokenizer_path = None
    m.override_config = {**(m.get("override_config") or {}), "attn_implementation": "sdpa"}
    m.use_fused_kernels = False
    return omega_conf_to_dataclass(m)


def worker(
    section: DictConfig,
    model_config: Any,
    dyn: bool,
    infer_budget: Any,
    infer_micro: Any,
    train_budget: Any = None,
    train_micro: Any = None,
) -> tuple[Any, Any]:
    """A ``TrainingWorker`` built as ``ActorRolloutRefWorker.init_model`` builds the actor's and ref's;
    returns it and the section's veRL dataclass (the loss reads it)."""

    conf = omega_conf_to_dataclass(section)
    conf.model_config = model_config
    twc = TrainingWorkerConfig(
        model_type="language_model",
        model_config=model_config,
        engine_config=conf.engine,
        optimizer_config=conf.optim,
        checkpoint_config=conf.checkpoint,
    )
    e = twc.engine_config
    e.use_dynamic_bsz = dyn
    e.infer_max_token_len_per_gpu = infer_budget
    e.infer_micro_batch_size_per_gpu = infer_micro
    e.max_token_len_per_gpu = train_budget
    e.micro_batch_size_per_gpu = train_micro
    e.use_remove_padding = model_config.get("use_remove_padding", False)
    w = TrainingWorker(config=twc)
    w.reset()
    return w, conf
