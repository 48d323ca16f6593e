"""Memory plan and throughput of a veRL run: per-GPU memory of the actor, reference, critic and the
rollout engine under the configured FSDP sharding, offload and tensor parallelism, against the
GPU's memory; tokens per step and the step's generation time from :mod:`analysis.estimate`.

The model (per GPU, bytes; P parameters, S = FSDP shard size, ``fsdp_size`` or all GPUs):

- actor and critic: parameters and gradients at ``fsdp_config.model_dtype`` (veRL 0.9.1: fp32)
  plus AdamW's two fp32 moments, each / S; ``param_offload`` moves parameters and gradients to
  the CPU, ``optimizer_offload`` the moments. Reference: parameters only.
- rollout (vLLM/SGLang): ``gpu_memory_utilization`` x GPU memory while generating (released
  during training when ``free_cache_engine``); inside it the weights (bf16, / tensor parallel
  size), ``settings.rollout_overhead_gb`` of activations and CUDA graphs, and the KV cache:
  2 (K, V) x layers x KV heads x head dim x 2 bytes per token (KV heads split over the tensor
  parallel ranks, at least one per rank).
- activations of one training micro-batch (tokens T = micro-batch x (prompt + response), or
  ``ppo_max_token_len_per_gpu`` with dynamic batch size, / Ulysses size): with gradient
  checkpointing one bf16 hidden state per layer plus one layer's working set (34 bytes per token
  and hidden unit, Korthikanti et al. 2022, arXiv:2205.05198, without the attention-score term that
  FlashAttention does not store); without it 34 bytes per layer; plus the logits in fp32 (8 bytes
  per token and vocabulary entry: logits and log-softmax).

Two phases are summed separately: generating (training state resident, gradients freed, plus the
rollout's reservation) and training (rollout asleep). A plan whose resident state alone exceeds the
GPU, or whose rollout weights or one full-length sequence do not fit the rollout's share, fails;
a plan whose estimated peak with activations passes ``settings.memory_warn`` of the GPU warns.
Not covered: Megatron's tensor/pipeline sharding (approximated as FSDP over all GPUs), LoRA,
fragmentation. These are estimates for planning, never measured GPU numbers.
"""

from __future__ import annotations

from typing import Any

from omegaconf import OmegaConf

from analysis.estimate import estimate
from core.cli import load
from recipes.preflight.context import Context, sel
from recipes.preflight.models import Shape, model_shape

GB = 1024**3
DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}


def _dtype(fsdp: Any) -> int:
    return DTYPE_BYTES.get(str((fsdp or {}).get("model_dtype") or "fp32"), 4)


def trained_state(p: float, fsdp: Any, shard: int) -> dict[str, float]:
    """Per-GPU bytes of a trained model's parameters, gradients and AdamW moments under FSDP."""
    fsdp = fsdp or {}
    w = 0.0 if fsdp.get("param_offload") else p * _dtype(fsdp) / shard
    return {"params": w, "grads": w, "optimizer": 0.0 if fsdp.get("optimizer_offload") else p * 8 / shard}


def activations(shape: Shape, tokens: int, checkpointing: bool) -> float:
    """Per-GPU bytes of one micro-batch's activations (see the module docstring)."""
    if not (shape.layers and shape.hidden and shape.vocab):
        return 0.0
    per_layer = 34 * tokens * shape.hidden
    stored = (
        tokens * shape.hidden * 2 * shape.layers + per_layer if checkpointing else per_layer * shape.layers
    )
    return float(stored + 8 * tokens * shape.vocab)


def kv_bytes_per_token(shape: Shape, tp: int) -> float | None:
    """KV-cache bytes per token on one tensor-parallel rank (bf16)."""
    if not (shape.layers and shape.kv_heads and shape.head_dim):
        return None
    heads = max(1, -(-shape.kv_heads // tp))
    return 2.0 * shape.layers * heads * shape.head_dim * 2


def plan(ctx: Context, shape: Shape) -> dict[str, Any]:
    """The per-GPU memory plan (bytes) of the configured veRL run."""
    c = ctx.cfg
    world = int(c.trainer.n_gpus_per_node) * int(c.trainer.nnodes)
    a = OmegaConf.to_container(c.actor_rollout_ref.actor.fsdp_config, resolve=True) or {}
    shard = int(a.get("fsdp_size") or -1)
    shard = world if shard <= 0 else min(shard, world)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy  # veRL: seconds; only this check

    from recipes.validate import quiet  # veRL's helpers print and warn

    seq = int(c.data.max_prompt_length) + int(c.data.max_response_length)
    actor = c.actor_rollout_ref.actor
    tokens = (
        int(actor.ppo_max_token_len_per_gpu)
        if actor.use_dynamic_bsz
        else int(actor.ppo_micro_batch_size_per_gpu or 1) * seq
    )
    tokens //= max(1, int(a.get("ulysses_sequence_parallel_size") or 1))
    ckpt = bool(sel(c, "actor_rollout_ref.model.enable_gradient_checkpointing", True))
    parts = {"actor": trained_state(shape.params, a, shard)}
    parts["actor"]["activations"] = activations(shape, tokens, ckpt)
    if quiet(need_reference_policy, c):
        ref = OmegaConf.to_container(c.actor_rollout_ref.ref.fsdp_config, resolve=True) or {}
        parts["reference"] = {
            "params": 0.0 if ref.get("param_offload") else shape.params * _dtype(ref) / shard
        }
    if quiet(need_critic, c):
        cf = OmegaConf.to_container(c.critic.fsdp, resolve=True) if sel(c, "critic.fsdp") else {}
        parts["critic"] = trained_state(shape.params, cf, shard)
    r = c.actor_rollout_ref.rollout
    tp = int(r.tensor_model_parallel_size or 1)
    gpu = ctx.report.facts.get("gpu_memory_gb")
    util = float(r.gpu_memory_utilization)
    rollout = {"tensor_parallel": tp, "gpu_memory_utilization": util, "weights": shape.params * 2 / tp}
    if gpu:
        budget = util * gpu * GB
        rollout["reserved"] = budget
        rollout["kv_cache"] = budget - rollout["weights"] - float(ctx.settings.rollout_overhead_gb) * GB
        per_tok = kv_bytes_per_token(shape, tp)
        if per_tok:
            rollout["kv_tokens"] = max(0.0, rollout["kv_cache"]) / per_tok
    return {
        "world": world,
        "shard": shard,
        "seq_len": seq,
        "micro_batch_tokens": tokens,
        "parts": parts,
        "rollout": rollout,
    }


def phases(p: dict[str, Any], free_cache: bool) -> dict[str, float]:
    """Resident and peak bytes of the generating and the training phase."""
    resident_gen = sum(v.get("params", 0) + v.get("optimizer", 0) for v in p["parts"].values())
    resident_train = sum(
        v.get("params", 0) + v.get("grads", 0) + v.get("optimizer", 0) for v in p["parts"].values()
    )
    reserved = p["rollout"].get("reserved", 0.0)
    act = max(v.get("activations", 0) for v in p["parts"].values())
    train_static = resident_train + (0.0 if free_cache else reserved)
    return {
        "generate": resident_gen + reserved,
        "train_static": train_static,
        "train_peak": train_static + act,
    }


def _gpu_memory_gb(ctx: Context) -> float | None:
    if ctx.settings.gpu_memory_gb:
        return float(ctx.settings.gpu_memory_gb)
    try:
        import torch  # ~3 s; only to detect GPUs

        if torch.cuda.is_available():
            return (
                min(
                    torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())
                )
                / GB
            )
    except Exception:  # noqa: BLE001 - no usable CUDA: the comparison is skipped
        pass
    return None


def check_memory(ctx: Context) -> dict[str, float]:
    """Throughput (every engine) and, for engine=verl, the per-GPU memory plan against the GPU."""
    check_throughput(ctx)
    if ctx.engine != "verl":
        ctx.report.add(
            "memory", "info", "engine", f"engine={ctx.engine}: the GPU memory plan is for engine=verl runs"
        )
        return {}
    world = int(ctx.cfg.trainer.n_gpus_per_node) * int(ctx.cfg.trainer.nnodes)
    tp = int(sel(ctx.cfg, "actor_rollout_ref.rollout.tensor_model_parallel_size") or 1)
    if world <= 0 or world % tp:
        ctx.report.add(
            "memory",
            "fail",
            "actor_rollout_ref.rollout.tensor_model_parallel_size",
            f"tensor_model_parallel_size={tp} does not divide the {world} GPUs (trainer.n_gpus_per_node x trainer.nnodes)",
            "use a tensor-parallel size that divides the number of GPUs",
        )
        return {}
    path = str(ctx.cfg.actor_rollout_ref.model.path)
    shape, how = model_shape(path, ctx.settings.model_params_b)
    if shape is None:
        ctx.report.add(
            "memory",
            "warn",
            f"actor_rollout_ref.model.path={path}",
            f"memory not checked: cannot size the model ({how})",
            "pass model_params_b=<billions>, or put the model's config.json on disk",
        )
        return {}
    ctx.report.facts["model"] = {"params_b": shape.params / 1e9, "source": shape.source, "from": how}
    gpu = _gpu_memory_gb(ctx)
    ctx.report.facts["gpu_memory_gb"] = gpu
    p = plan(ctx, shape)
    ctx.report.facts["memory_plan_gb"] = _in_gb(p)
    if gpu is None:
        ctx.report.add(
            "memory",
            "info",
            "gpu_memory_gb",
            f"no GPU here and none given: per-GPU needs {_summary(p)}; not compared",
            "pass gpu_memory_gb=80 (A100/H100 80GB) to compare",
        )
        return {}
    judge(ctx, p, gpu, shape)
    return {}


def judge(ctx: Context, p: dict[str, Any], gpu_gb: float, shape: Shape) -> None:
    """Compare the plan with the GPU: refuse what cannot fit, warn near the limit."""
    c, gpu = ctx.cfg, gpu_gb * GB
    r = p["rollout"]
    ph = phases(p, bool(sel(c, "actor_rollout_ref.rollout.free_cache_engine", True)))
    ctx.report.facts["memory_phases_gb"] = _in_gb(ph)
    where = f"{p['world']} GPUs x {gpu_gb:g} GB"
    offload = "actor_rollout_ref.actor.fsdp_config.param_offload/optimizer_offload=true"
    fails = []
    if ph["generate"] > gpu:
        fails.append(
            (
                f"while generating, the resident training state ({(ph['generate'] - r['reserved']) / GB:.1f} GB) plus the "
                f"rollout's gpu_memory_utilization={r['gpu_memory_utilization']} ({r['reserved'] / GB:.1f} GB) need "
                f"{ph['generate'] / GB:.1f} GB per GPU",
                f"{offload}, lower actor_rollout_ref.rollout.gpu_memory_utilization, or more GPUs",
            )
        )
    if ph["train_static"] > gpu:
        fails.append(
            (
                f"training state alone needs {ph['train_static'] / GB:.1f} GB per GPU",
                f"{offload}, or more GPUs (trainer.nnodes)",
            )
        )
    if r["kv_cache"] <= 0:
        fails.append(
            (
                f"the rollout's share ({r['reserved'] / GB:.1f} GB) does not hold its weights ({r['weights'] / GB:.1f} GB at "
                f"tensor_model_parallel_size={r['tensor_parallel']}) and ~{ctx.settings.rollout_overhead_gb} GB of overhead",
                "raise actor_rollout_ref.rollout.tensor_model_parallel_size or gpu_memory_utilization",
            )
        )
    elif r.get("kv_tokens") is not None and r["kv_tokens"] < p["seq_len"]:
        fails.append(
            (
                f"the KV cache holds {r['kv_tokens']:,.0f} tokens, less than one full sequence ({p['seq_len']:,} = "
                "max_prompt_length + max_response_length); vLLM refuses to start",
                "raise gpu_memory_utilization or tensor_model_parallel_size",
            )
        )
    for msg, fix in fails:
        ctx.report.add("memory", "fail", where, msg, fix)
    if fails:
        return
    share = ph["train_peak"] / gpu
    msg = (
        f"peak ~{max(ph['train_peak'], ph['generate']) / GB:.1f} of {gpu_gb:g} GB per GPU (generating "
        f"{ph['generate'] / GB:.1f}, training {ph['train_peak'] / GB:.1f} with ~{p['micro_batch_tokens']:,}-token micro-batches)"
    )
    if max(share, ph["generate"] / gpu) > float(ctx.settings.memory_warn):
        ctx.report.add(
            "memory",
            "warn",
            where,
            msg + f": above {float(ctx.settings.memory_warn):.0%}",
            "lower the micro-batch (ppo_micro_batch_size_per_gpu / ppo_max_token_len_per_gpu) or offload",
        )
    else:
        ctx.report.add("memory", "info", where, msg)
    _kv_note(ctx, p, shape)


def _kv_note(ctx: Context, p: dict[str, Any], shape: Shape) -> None:
    r, c = p["rollout"], ctx.cfg
    if r.get("kv_tokens") is None:
        return
    replicas = max(1, p["world"] // r["tensor_parallel"])
    seqs = int(c.data.train_batch_size) * int(c.actor_rollout_ref.rollout.n) / replicas
    fit = r["kv_tokens"] / p["seq_len"]
    ctx.report.add(
        "memory",
        "info",
        "actor_rollout_ref.rollout",
        f"KV cache ~{r['kv_cache'] / GB:.1f} GB = {r['kv_tokens']:,.0f} tokens per replica: {fit:,.1f} full-length "
        f"sequences at once, against {seqs:,.0f} sequences per replica per step",
    )


def _in_gb(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _in_gb(v) for k, v in x.items()}
    return round(x / GB, 2) if isinstance(x, float) else x


def _summary(p: dict[str, Any]) -> str:
    parts = "; ".join(
        f"{k} " + ", ".join(f"{n} {v / GB:.1f}" for n, v in d.items()) for k, d in p["parts"].items()
    )
    return f"{parts}; rollout weights {p['rollout']['weights'] / GB:.1f} GB (tp={p['rollout']['tensor_parallel']})"


def check_throughput(ctx: Context) -> None:
    """Tokens per step and the step's generation time (analysis.estimate's throughput assumption)."""
    over = [f"throughput={ctx.settings.throughput}"] if ctx.settings.throughput else []
    est_cfg = load("analysis", "estimate", [f"recipe={ctx.cfg.rlvr.recipe}", *over])
    rows = sum(
        t.num_rows
        for k, t in ((k, ctx.tables.get(p)) for k, p in ctx.files() if k == "data.train_files")
        if t is not None
    )
    # without the training file, one batch stands in: per-step numbers hold, per-run ones are not shown
    est_cfg.prompts = rows or int(ctx.cfg.data.train_batch_size)
    try:
        e = estimate(est_cfg, ctx.cfg, {})
    except ValueError as err:
        ctx.report.add("memory", "info", "throughput", f"not estimated: {err}")
        return
    gpus = (
        max(1, int(ctx.cfg.trainer.n_gpus_per_node) * int(ctx.cfg.trainer.nnodes))
        if ctx.engine == "verl"
        else 1
    )
    tput = float(e["throughput_tokens_per_s_per_gpu"])
    gen_s = e["generated_tokens_per_step"] / (tput * gpus)
    ctx.report.facts["estimate"] = e
    if ctx.engine == "verl":
        ctx.report.facts["generation_s_per_step"] = gen_s
    ctx.report.add(
        "memory",
        "info",
        "throughput",
        f"{e['generated_tokens_per_step']:,.0f} generated tokens per step (upper bound: data.max_response_length); "
        + (
            f"~{gen_s:.0f} s of generation per step on {gpus} GPUs at an assumed {tput:,.0f} tokens/s per GPU"
            + (f"; {e['gpu_hours_per_run']:,.1f} GPU-hours per run (analysis.estimate)" if rows else "")
            if ctx.engine == "verl"
            else "GPU time not estimated for engine=local"
        ),
    )
