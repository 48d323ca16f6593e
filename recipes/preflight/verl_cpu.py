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

import functools
import os
import socket
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.engine_workers import TrainingWorker, TrainingWorkerConfig

from verl_cpu import patches
from verl_cpu.platform import use as use_cpu_platform

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


@functools.cache
def install_cpu_platform() -> None:
    """The CPU platform and the patches of :mod:`verl_cpu` (the reference's unpinned offload among
    them), ``VERL_ENGINE_DEVICE=cuda`` and a one-process gloo group (once per process; a process group
    that already exists is kept)."""
    os.environ["VERL_ENGINE_DEVICE"] = "cuda"
    use_cpu_platform()
    patches.apply()
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
