"""``engine=verl`` on a machine without a GPU: what veRL's own trainer needs changed to run on the CPU.

The composed config is the one a GPU launch gets; :func:`apply` changes only what a CPU needs, and
returns each change (key, before, after, why) for ``recipes.run`` to print once:

- the platform and the rollout backend (:mod:`verl_cpu`: ``rollout.name=cpu``, one process per
  replica, no tensor parallelism), the environment every Ray process needs (:data:`verl_cpu.ENV`,
  forwarded through ``ray_kwargs.ray_init.runtime_env``); the async trainer modes' weight sync to
  standalone replicas (``checkpoint_engine.backend=cpu_gloo``, :mod:`verl_cpu.checkpoint_engine`);
- what only CUDA has: SDPA attention instead of flash-attention 2, FSDP2 (FSDP1 syncs module
  states on the GPU), fp32 (no bf16 autocast), no ``torch.compile`` (~20 s per process on a CPU,
  the same numbers), no Ulysses sequence parallelism (FSDP parameter and optimizer offload run);
- Ray's resources: logical GPUs (veRL's pools always ask for them) and logical CPUs (with the 2
  Ray detects on a 2-core machine the TransferQueue start-up hangs), one agent-loop, reward and
  storage worker (each is a process), no dataloader workers, and the replica buffer's poll
  interval (:mod:`verl_cpu.patches`, ``replay-poll``).

:func:`refusal` names what veRL cannot run here (one line, before Ray starts); :func:`prepare_inputs`
builds what the laptop profile reads (the task files, the base model or cold start, the
distillation teacher) with the local engine's builders and points ``data.val_files`` at the first
``local.eval_samples`` held-out rows, the prompts the local engine evaluates on. Not covered: a
GPU's numerics (bf16), vLLM/SGLang, NCCL, Ulysses, tensor parallelism.

With ``RAY_ADDRESS`` set (:func:`joins_cluster`) the run joins that Ray cluster: ``trainer.nnodes``
stays as given, each node declares its own logical GPUs and CPUs (``ray start`` with
``recipes.cluster.ray_check.node_start_args``; Ray refuses ``num_cpus``/``num_gpus`` when joining),
and ``recipes.run`` checks the cluster first (:mod:`recipes.cluster.ray_check`). Without it,
``trainer.nnodes>1`` is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

import verl_cpu
from recipes.cluster.ray_check import CPU_NODE_CPUS

A, R, F, C = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref", "critic"
T = "distillation.teacher_models.teacher_model"
RM = "reward.reward_model"

#: Logical CPUs declared to Ray (its detected count, 2 here, hangs the TransferQueue start-up); each
#: node of a CPU Ray cluster declares as many (``recipes.cluster.ray_check.node_start_args``).
RAY_CPUS = CPU_NODE_CPUS

#: Ray's setting of the niceness of the worker processes a raylet starts (``ray_config_def.h``).
NICENESS_ENV = "RAY_worker_niceness"


def joins_cluster() -> bool:
    """Whether the run joins an existing Ray cluster: ``RAY_ADDRESS`` is set (veRL's ``ray.init``
    connects to it); its nodes then declare their logical GPUs and CPUs themselves."""
    return bool(os.environ.get("RAY_ADDRESS"))


def _alone(cfg: DictConfig) -> bool:
    return not joins_cluster()


def _joins(cfg: DictConfig) -> bool:
    return joins_cluster()


@dataclass(frozen=True)
class Change:
    """One key a CPU run sets: ``value(cfg)`` when ``when(cfg)``."""

    key: str
    value: Callable[[DictConfig], Any]
    why: str
    when: Callable[[DictConfig], bool] = lambda cfg: True
    #: how the docs show a value computed from the config (None: the value itself)
    shown: str | None = None


def _sel(cfg: DictConfig, key: str) -> Any:
    return OmegaConf.select(cfg, key, default=None)


def world(cfg: DictConfig) -> int:
    """Trainer processes: ``trainer.n_gpus_per_node`` (0, the laptop profile's, means 1) x ``nnodes``."""
    return max(1, int(_sel(cfg, "trainer.n_gpus_per_node") or 0)) * max(
        1, int(_sel(cfg, "trainer.nnodes") or 1)
    )


def _critic(cfg: DictConfig) -> bool:
    enable = _sel(cfg, f"{C}.enable")
    return bool(enable) if enable is not None else _sel(cfg, "algorithm.adv_estimator") == "gae"


def _teacher(cfg: DictConfig) -> bool:
    return bool(_sel(cfg, "distillation.enabled"))


def _mode(cfg: DictConfig) -> str:
    return str(_sel(cfg, "trainer.v1.trainer_mode") or "sync")


def _standalone(cfg: DictConfig) -> int:
    """Logical GPU slots of separate_async's standalone rollout pool (``rollout.nnodes x n_gpus_per_node``)."""
    if _mode(cfg) != "separate_async":
        return 0
    return max(0, int(_sel(cfg, f"{R}.nnodes") or 0)) * max(0, int(_sel(cfg, f"{R}.n_gpus_per_node") or 0))


def _gpus(cfg: DictConfig) -> int:
    return world(cfg) + (1 if _teacher(cfg) else 0) + (1 if _reward_model(cfg) else 0) + _standalone(cfg)


_FP32 = {"param_dtype": "fp32", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}


def _tokens(cfg: DictConfig) -> int:
    """``local.micro_batch_tokens``: padded tokens (prompt + response) per micro-batch of the actor's and
    the reference's passes on a CPU, 0 for the config's own micro-batches. Per micro-batch veRL pays a
    fixed cost (hooks, splitting, the log-prob head) that dwarfs a small model's arithmetic; the
    arithmetic is the same (veRL scales each micro-batch's loss by its share of the mini-batch)."""
    return int(_sel(cfg, "local.micro_batch_tokens") or 0)


def _fixed_micro(cfg: DictConfig) -> bool:
    """Micro-batches by count (not veRL's token-budget ``use_dynamic_bsz``, which ignores them), and a
    budget set (``local.micro_batch_tokens`` > 0)."""
    dynamic = _sel(cfg, f"{A}.use_dynamic_bsz") or _sel(cfg, f"{R}.log_prob_use_dynamic_bsz")
    return not dynamic and _tokens(cfg) > 0


def _micro(cfg: DictConfig, rows: int, given: Any) -> int:
    """The largest divisor of ``rows`` (a rank's responses per pass) holding at most
    ``local.micro_batch_tokens`` padded tokens, never below the config's ``given`` micro-batch."""
    seq = int(_sel(cfg, "data.max_prompt_length") or 1) + int(_sel(cfg, "data.max_response_length") or 1)
    cap = max(1, _tokens(cfg) // seq)
    best = max((d for d in range(1, rows + 1) if rows % d == 0 and d <= cap), default=1)
    return max(best, int(given or 1))


def _rows(cfg: DictConfig, prompts_key: str) -> int:
    n = int(_sel(cfg, f"{R}.n") or 1)
    return max(1, int(_sel(cfg, prompts_key) or 1) * n // world(cfg))


def _micro_batch_changes() -> list[Change]:
    """Bigger micro-batches for the actor's update and the log-prob passes (``local.micro_batch_tokens``),
    padded rather than packed: packed sequences attend over their whole concatenation with SDPA."""
    why = "only with local.micro_batch_tokens > 0 (default 0): micro-batches of up to that many padded tokens"
    return [
        Change(
            f"{A}.ppo_micro_batch_size_per_gpu",
            lambda c: _micro(
                c, _rows(c, f"{A}.ppo_mini_batch_size"), _sel(c, f"{A}.ppo_micro_batch_size_per_gpu")
            ),
            why,
            _fixed_micro,
            shown="the largest divisor of a rank's mini-batch within the budget",
        ),
        *(
            Change(
                f"{sec}.log_prob_micro_batch_size_per_gpu",
                lambda c, sec=sec: _micro(
                    c, _rows(c, "data.train_batch_size"), _sel(c, f"{sec}.log_prob_micro_batch_size_per_gpu")
                ),
                why,
                _fixed_micro,
                shown="the largest divisor of a rank's batch within the budget",
            )
            for sec in (R, F)
        ),
        Change(
            "actor_rollout_ref.model.use_remove_padding",
            lambda c: False,
            "only with local.micro_batch_tokens > 0: padded micro-batches (packed ones attend over all "
            "their sequences at once with SDPA)",
            _fixed_micro,
        ),
    ]


#: What each training engine (actor, reference, critic) changes: (key, value, why); ``{s}`` is the
#: role's section, ``{e}`` its engine section (``fsdp_config``; the critic's ``fsdp``).
_ENGINE: tuple[tuple[str, Any, str], ...] = (
    ("{s}.strategy", "fsdp2", "FSDP1 syncs module states on the GPU (fsdp/transformer_impl.py:444)"),
    ("{e}.strategy", "fsdp2", "the engine's own copy of the strategy"),
    ("{s}.use_torch_compile", False, "compiling costs ~20 s per process on a CPU, same numbers"),
    ("{e}.use_torch_compile", False, "as above, the engine's copy"),
    ("{e}.mixed_precision", _FP32, "fp32: bf16 autocast puts log-probs ~2e-2 off"),
    ("{e}.offload_policy", False, "everything already lives in CPU memory"),
    (
        "{s}.ulysses_sequence_parallel_size",
        1,
        "veRL patches Ulysses' all-to-all into flash-attention 2 only (verl/models/transformers/monkey_patch.py:551); "
        "with SDPA each rank attends within its own slice and the log-probs are wrong (a world-size-2 run)",
    ),
    ("{e}.ulysses_sequence_parallel_size", 1, "as above, the engine's copy"),
)


def _const(value: Any) -> Callable[[DictConfig], Any]:
    return lambda cfg: dict(value) if isinstance(value, dict) else value


def _engine_changes(
    section: str, engine: str, when: Callable[[DictConfig], bool] = lambda c: True, skip: tuple[str, ...] = ()
) -> list[Change]:
    return [
        Change(k.format(s=section, e=engine), _const(v), why, when) for k, v, why in _ENGINE if k not in skip
    ]


def _reward_model(cfg: DictConfig) -> bool:
    return bool(_sel(cfg, f"{RM}.enable"))


def _reward_model_changes() -> list[Change]:
    """The reward model's replica: the CPU backend's reward server (:mod:`verl_cpu.reward_model`) on a pool
    of its own (one logical GPU slot)."""
    why = "a CPU reward-model replica is one process"
    return [
        Change(
            f"{RM}.enable_resource_pool",
            lambda c: True,
            "the colocated reward model hands the reward function no data_source or ground truth "
            "(verl/trainer/ppo/v1/trainer_base.py:1534, KeyError 'data_source'); on its own pool the reward "
            "streams through the agent loop with the whole sample",
            _reward_model,
        ),
        Change(
            f"{RM}.n_gpus_per_node", lambda c: 1, "one logical GPU slot for the reward model", _reward_model
        ),
        Change(f"{RM}.nnodes", lambda c: 1, "one machine", _reward_model),
        Change(
            f"{RM}.rollout.name",
            lambda c: "cpu",
            "vLLM/SGLang need CUDA: the reward model served by the CPU backend (verl_cpu.reward_model)",
            _reward_model,
        ),
        *(Change(f"{RM}.rollout.{k}", lambda c: 1, why, _reward_model) for k in _PARALLEL),
    ]


_PARALLEL = ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")


#: Why a CPU run trains without gradient checkpointing (veRL's default recomputes activations).
_NO_RECOMPUTE = (
    "checkpointing recomputes each layer's forward in the backward to save activation memory, which a CPU "
    "run has to spare; its cost per update is measured by benchmarks/bench_recompute"
)

CHANGES: list[Change] = [
    Change(
        "trainer.device",
        lambda c: "cpu",
        "the worker groups' device (verl/trainer/ppo/v1/trainer_base.py:303)",
    ),
    Change(
        "trainer.n_gpus_per_node",
        lambda c: world(c),
        "trainer processes on this machine",
        _alone,
        shown="its value x trainer.nnodes (0: 1)",
    ),
    Change("trainer.nnodes", lambda c: 1, "one machine", _alone),
    Change(
        "trainer.n_gpus_per_node",
        lambda c: max(1, int(_sel(c, "trainer.n_gpus_per_node") or 0)),
        "trainer processes per node of the Ray cluster (RAY_ADDRESS set; trainer.nnodes as given)",
        _joins,
        shown="its value (0: 1), on a Ray cluster (RAY_ADDRESS)",
    ),
    Change(
        f"{R}.name",
        lambda c: "cpu",
        "vLLM/SGLang need CUDA: the project's batched KV-cache sampler (verl_cpu)",
    ),
    Change(f"{R}.tensor_model_parallel_size", lambda c: 1, "a CPU replica is one process"),
    Change(f"{R}.data_parallel_size", lambda c: 1, "a CPU replica is one process"),
    Change(f"{R}.pipeline_model_parallel_size", lambda c: 1, "a CPU replica is one process"),
    Change(
        f"{R}.checkpoint_engine.backend",
        lambda c: "naive" if _mode(c) == "sync" else verl_cpu.CHECKPOINT_ENGINE,
        "sync: weights pass in-process; the async modes: to standalone replicas over gloo (NCCL/NIXL need GPUs)",
        shown="naive (sync), cpu_gloo (the async modes: verl_cpu.checkpoint_engine)",
    ),
    Change(f"{R}.agent.num_workers", lambda c: 1, "one agent-loop process (the server batches its requests)"),
    Change("reward.num_workers", lambda c: 1, "one reward process"),
    Change("data.dataloader_num_workers", lambda c: 0, "no dataloader processes on 2 cores"),
    Change(
        "actor_rollout_ref.model.override_config.attn_implementation",
        lambda c: "sdpa",
        "flash-attention 2 needs a GPU",
    ),
    Change(
        "actor_rollout_ref.model.enable_gradient_checkpointing",
        lambda c: False,
        _NO_RECOMPUTE,
    ),
    *_engine_changes(A, f"{A}.fsdp_config"),
    *_engine_changes(F, f"{F}.fsdp_config"),
    Change(
        f"{C}.model.override_config.attn_implementation",
        lambda c: "sdpa",
        "flash-attention 2 needs a GPU",
        _critic,
    ),
    Change(f"{C}.model.enable_gradient_checkpointing", lambda c: False, _NO_RECOMPUTE, _critic),
    *_engine_changes(C, f"{C}.fsdp", _critic, skip=("{s}.use_torch_compile",)),
    Change(f"{T}.inference.name", lambda c: "cpu", "the teacher's log-probs from the CPU backend", _teacher),
    Change(
        f"{T}.inference.tensor_model_parallel_size",
        lambda c: 1,
        "a CPU teacher replica is one process",
        _teacher,
    ),
    Change(
        "distillation.n_gpus_per_node", lambda c: 1, "one logical GPU slot for the teacher replica", _teacher
    ),
    Change("distillation.nnodes", lambda c: 1, "one machine", _teacher),
    *_reward_model_changes(),
    Change(
        "ray_kwargs.ray_init.num_gpus",
        _gpus,
        "logical GPUs: veRL's resource pools always ask for GPUs",
        _alone,
        shown="the trainer processes (+1 for a distillation teacher, +1 for a reward model, + separate_async's "
        "standalone rollout slots)",
    ),
    Change(
        "ray_kwargs.ray_init.num_cpus",
        lambda c: RAY_CPUS,
        "logical CPUs: with the 2 Ray detects the start-up hangs",
        _alone,
    ),
    *(
        Change(
            f"ray_kwargs.ray_init.{k}",
            lambda c: None,
            "Ray refuses it when joining a cluster: each node declares its own (node_start_args)",
            _joins,
            shown="unset, on a Ray cluster (RAY_ADDRESS)",
        )
        for k in ("num_gpus", "num_cpus")
    ),
    Change("ray_kwargs.ray_init.include_dashboard", lambda c: False, "no dashboard process"),
    Change(
        "ray_kwargs.ray_init.runtime_env.env_vars",
        lambda c: {**_given_env(c), **env(c)},
        "the CPU platform in every Ray process (added to the config's own)",
        shown="VERL_USE_EXTERNAL_MODULES=verl_cpu, VERL_PLATFORM=cpu, VERL_ENGINE_DEVICE=cuda, "
        "VERL_CPU_THREADS=local.threads, TQ_NUM_THREADS=the cores (8 at most), "
        "RAY_worker_niceness=0 (Ray's workers at the trainer's niceness: its default +15 starves them beside any "
        "other process; a value given is kept)",
    ),
    Change(
        "transfer_queue.backend.SimpleStorage.num_data_storage_units",
        lambda c: 1,
        "one storage process (8: 15 s more start-up)",
    ),
    Change(
        "trainer.v1.sampler.sampler_kwargs.poll_interval",
        lambda c: 0.05,
        "the replay buffer's poll (verl_cpu patch replay-poll; 2 s fixed)",
    ),
    *_micro_batch_changes(),
]


def _given_env(cfg: DictConfig) -> dict[str, str]:
    given = _sel(cfg, "ray_kwargs.ray_init.runtime_env.env_vars")
    return {str(k): str(v) for k, v in (OmegaConf.to_container(given, resolve=True) if given else {}).items()}


#: The niceness Ray adds to its workers' (its own default is 15: beside any competing process at the
#: same niceness the whole trainer waits); a config that sets ``RAY_worker_niceness`` keeps its value.
WORKER_NICENESS = 0


def env(cfg: DictConfig | None = None) -> dict[str, str]:
    """The environment of every process of a CPU run: :data:`verl_cpu.ENV`, the torch thread count
    (``local.threads``: 1 is fastest on a shared 2-core machine) and Ray's worker niceness
    (:data:`WORKER_NICENESS`, read by the raylet the trainer's ``ray.init`` starts)."""
    threads = int(_sel(cfg, "local.threads") or 1) if cfg is not None else 1
    # TransferQueue's thread pools default to 8 threads and warn, once per call, on fewer cores
    tq = min(8, os.cpu_count() or 1)
    nice = (
        _given_env(cfg).get(NICENESS_ENV, str(WORKER_NICENESS)) if cfg is not None else str(WORKER_NICENESS)
    )
    return {
        **verl_cpu.ENV,
        "VERL_CPU_THREADS": str(threads),
        "TQ_NUM_THREADS": str(tq),
        NICENESS_ENV: nice,
    }


def apply(cfg: DictConfig) -> list[tuple[str, Any, Any, str]]:
    """Set every :data:`CHANGES` key that applies, in place; returns (key, before, after, why) of
    each one whose value changed."""
    out = []
    with open_dict(cfg):
        for ch in CHANGES:
            if not ch.when(cfg):
                continue
            before = _sel(cfg, ch.key)
            before = OmegaConf.to_container(before, resolve=True) if OmegaConf.is_config(before) else before
            after = ch.value(cfg)
            if before != after:
                OmegaConf.update(cfg, ch.key, after, force_add=True, merge=False)
                out.append((ch.key, before, after, ch.why))
    return out


#: What veRL's trainer cannot run on a CPU: (key, refused when, reason).
REFUSED: list[tuple[str, Callable[[DictConfig], bool], str]] = [
    (
        "trainer.nnodes",
        lambda c: int(_sel(c, "trainer.nnodes") or 1) > 1 and not joins_cluster(),
        "several nodes need a Ray cluster, and RAY_ADDRESS is not set",
    ),
]

#: The fix a refusal names when it is not the general one (engine=local, or a GPU machine).
FIXES = {
    "trainer.nnodes": "export RAY_ADDRESS=<head>:<port> of a running Ray cluster with that many nodes "
    "(python -m core.clusters.ray_local start makes one on this machine), or set trainer.nnodes=1",
}


#: Rollout backends a config may name; on a CPU every one of them is replaced by ``cpu``.
ROLLOUTS = ("vllm", "sglang", "trtllm", "cpu")


def refusal(cfg: DictConfig) -> str | None:
    """The first feature of ``cfg`` veRL's trainer cannot run on a CPU, as ``[key] why; fix``, or None."""
    name = _sel(cfg, f"{R}.name")
    if name not in ROLLOUTS:
        return (
            f"[{R}.name] {name!r} is not a rollout backend veRL 0.9.1 or this project registers "
            f"(fix: one of {', '.join(ROLLOUTS)}; on a CPU the rollout is cpu, verl_cpu)"
        )
    for key, refused, why in REFUSED:
        if refused(cfg):
            fix = FIXES.get(
                key, "engine=local, or run on a GPU machine; docs/engines.md lists what runs where"
            )
            return f"[{key}] {_sel(cfg, key)!r} cannot run on veRL's trainer on a CPU: {why} (fix: {fix})"
    return None


def prepare_inputs(
    cfg: DictConfig, run_dir: Path, say: Callable[[str], None] = print
) -> list[tuple[str, Any, Any, str]]:
    """Build what the config reads from the run cache (task files, the laptop model, the distillation
    teacher: the local engine's builders, :func:`recipes.local.ensure_inputs`) and point
    ``data.val_files`` at its first ``local.eval_samples`` rows; returns that change, if any."""
    from core.env import in_cache  # launching only
    from recipes.local import ensure_inputs  # torch, the builders: only a CPU launch needs them

    keys = ["actor_rollout_ref.model.path", *([f"{T}.model_path"] if _teacher(cfg) else [])]
    for key in keys:
        path = Path(str(_sel(cfg, key))).expanduser()
        if not in_cache(path) and not (path / "config.json").is_file():
            raise ValueError(
                f"[{key}] {_sel(cfg, key)} is not a checkpoint on disk: veRL's trainer on a CPU runs a model "
                "from disk (nothing is downloaded). Fix: point it at a save_pretrained directory, or drop scale= "
                "to run the recipe's laptop profile, whose model is built here"
            )
    if _reward_model(cfg):
        _check_reward_model(cfg)
    ensure_inputs(cfg, say)
    _check_lora(cfg)
    return _held_out(cfg, run_dir)


def _check_reward_model(cfg: DictConfig) -> None:
    """Refuse (``ValueError``, before Ray starts) a reward model the CPU backend cannot serve: a path that is
    not a reward model written by ``make rm`` (``rlvr_rm.json``), or one it cannot read (a PRM)."""
    from verl_cpu.reward_model import SERVED_KINDS  # torch: only a CPU launch with a reward model

    key = f"{RM}.model_path"
    path = Path(str(_sel(cfg, key))).expanduser()
    meta = path / "rlvr_rm.json"
    if not meta.is_file():
        raise ValueError(
            f"[{key}] {_sel(cfg, key)} is not a reward-model checkpoint (no rlvr_rm.json): the CPU backend serves "
            "a reward model written by this project from disk. Fix: `make rm KIND=orm DATA=<labelled samples> "
            f"MODEL=<policy>` (installs $RLVR_CACHE/rm/orm, where reward_model=orm reads it), or point {key} at "
            "a directory it wrote"
        )
    kind = json.loads(meta.read_text()).get("kind")
    if kind not in SERVED_KINDS:
        raise ValueError(
            f"[{key}] {path} is a {kind}: veRL's reward request (/classify: one text, no step boundaries) gives "
            f"a score at the last token, not a {kind}'s step reading. Fix: reward_model=orm (one of "
            f"{', '.join(SERVED_KINDS)}), or engine=local, whose loop reads a PRM's steps"
        )


def _check_lora(cfg: DictConfig) -> None:
    """A LoRA rank whose ``target_modules`` the model lacks stops here, before Ray starts (peft
    would raise it in the trainer's worker)."""
    model = _sel(cfg, "actor_rollout_ref.model")
    if int(model.get("lora_rank") or 0) <= 0:
        return
    from verl_cpu.lora import target_error  # peft: a LoRA launch only

    lora = OmegaConf.to_container(model, resolve=True)
    err = target_error(str(Path(str(model.path)).expanduser()), lora)
    if err:
        raise ValueError(
            f"[actor_rollout_ref.model.target_modules] {lora.get('target_modules')!r} with lora_rank="
            f"{lora['lora_rank']}: {err} (model {model.path}; fix: name modules the model has, e.g. "
            "actor_rollout_ref.model.target_modules=all-linear, or lora_rank=0 to train every weight)"
        )


def _held_out(cfg: DictConfig, run_dir: Path) -> list[tuple[str, Any, Any, str]]:
    """``data.val_files`` -> one parquet of its first ``local.eval_samples`` rows (veRL's
    ``data.val_max_samples`` draws them at random while ``data.shuffle`` is on)."""
    import pyarrow as pa  # ~0.3 s: only a CPU launch writes the held-out file
    import pyarrow.parquet as pq  # as above

    limit = int(_sel(cfg, "local.eval_samples") or 0)
    files = _sel(cfg, "data.val_files")
    files = [files] if isinstance(files, str) else list(files or [])
    if limit <= 0 or not files:
        return []
    tables, left = [], limit
    for f in files:
        t = pq.read_table(Path(f).expanduser())
        tables.append(t.slice(0, left))
        left -= tables[-1].num_rows
        if left <= 0:
            break
    rows = pa.concat_tables(tables)
    out = run_dir.resolve() / "data" / f"val.first{rows.num_rows}.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows, out)
    before = _sel(cfg, "data.val_files")
    with open_dict(cfg):
        cfg.data.val_files = str(out)
    why = f"its first {rows.num_rows} rows (local.eval_samples): the held-out prompts the local engine scores"
    return [("data.val_files", before, str(out), why)]
