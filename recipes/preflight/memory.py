"""Memory plan and throughput of a veRL run: per-GPU memory of the actor, reference, critic and the
rollout engine under the configured FSDP sharding, offload and tensor parallelism, against the
GPU's memory; tokens per step and the step's generation time from :mod:`analysis.estimate`.

The model (per GPU, bytes; P parameters, S = FSDP shard size, ``fsdp_size`` or all GPUs), in veRL
0.9.1's semantics (``verl/workers/engine/fsdp/transformer_impl.py``):

- actor and critic: parameters and gradients at ``fsdp_config.model_dtype`` (veRL 0.9.1: fp32)
  plus AdamW's two fp32 moments, each / S. ``param_offload`` and ``optimizer_offload`` move them to
  the CPU *between* updates (veRL loads them back for its own forward, backward and optimizer
  step), so they lower the generating phase and the other role's update, never the role's own
  update. ``use_no_sync_for_gradient_accumulation`` keeps the gradients unsharded until the last
  micro-batch: P x dtype bytes more while training.
- reference: a forward-only engine, which veRL 0.9.1 always runs with its parameters on the CPU
  (FSDP ``CPUOffload``/``CPUOffloadPolicy``, ``forward_only``): ~0 resident; parameters / S when
  neither ``forward_only`` nor ``param_offload`` is set.
- rollout (vLLM/SGLang): ``gpu_memory_utilization`` x GPU memory while generating (released
  during training when ``free_cache_engine``); inside it the weights (bf16, / tensor parallel
  size), ``settings.rollout_overhead_gb`` of activations and CUDA graphs, and the KV cache:
  2 (K, V) x layers x KV heads x head dim x 2 bytes per token (KV heads split over the tensor
  parallel ranks, at least one per rank).
- activations of one training micro-batch on one GPU: T tokens = ``ppo_max_token_len_per_gpu``
  with dynamic batch size (veRL packs budget x Ulysses size tokens and splits them over the
  Ulysses group), else micro-batch x (prompt + response) / Ulysses size. With gradient
  checkpointing one bf16 hidden state per layer plus one layer's working set (34 bytes per token
  and hidden unit, Korthikanti et al. 2022, arXiv:2205.05198, without the attention-score term that
  FlashAttention does not store); without it 34 bytes per layer; plus, for the actor, the logits in
  fp32 (8 bytes per token and vocabulary entry: logits and log-softmax); the critic's value head
  has no vocabulary term.

Phases (each summed separately): generating (every role's idle state plus the rollout's
reservation) and one update per trained role (that role's whole state and activations, the other
roles' idle state, and the rollout's reservation unless ``free_cache_engine``). A plan fails when a
phase exceeds the GPU, or the rollout's weights or one full-length sequence do not fit its share;
it warns when a phase passes ``settings.memory_warn`` of the GPU. Not covered: the forward-only
log-prob passes (smaller than an update), Megatron's tensor/pipeline sharding (approximated as
FSDP over all GPUs), LoRA, a distillation teacher's own GPUs, fragmentation, the CPU run of veRL's
trainer (``trainer.device=cpu``: no GPU memory to plan). These are estimates for planning, never
measured GPU numbers.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from analysis.estimate import estimate
from core.cli import load
from recipes.preflight.context import Context, sel
from recipes.preflight.models import Shape, model_shape

GB = 1024**3
DTYPE_BYTES = {"fp32": 4, "float32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2}


def _dtype(fsdp: Any) -> int:
    return DTYPE_BYTES.get(str((fsdp or {}).get("model_dtype") or "fp32"), 4)


def trained_state(p: float, fsdp: Any, shard: int) -> dict[str, float]:
    """Per-GPU bytes of a trained model's parameters, gradients and AdamW moments under FSDP that stay
    on the GPU between its updates (offloaded parts are on the CPU then; see :func:`update_state`)."""
    fsdp = fsdp or {}
    w = 0.0 if fsdp.get("param_offload") else p * _dtype(fsdp) / shard
    return {"params": w, "grads": w, "optimizer": 0.0 if fsdp.get("optimizer_offload") else p * 8 / shard}


def update_state(p: float, fsdp: Any, shard: int) -> float:
    """Per-GPU bytes of a trained model during its own update: veRL loads offloaded parameters,
    gradients and moments back for it; unsharded gradients while accumulating under ``no_sync``."""
    fsdp = fsdp or {}
    w = p * _dtype(fsdp)
    full = 2 * w / shard + p * 8 / shard
    return full + (w if fsdp.get("use_no_sync_for_gradient_accumulation") else 0.0)


def activations(shape: Shape, tokens: int, checkpointing: bool, logits: bool = True) -> float:
    """Per-GPU bytes of one micro-batch's activations (see the module docstring)."""
    if not (shape.layers and shape.hidden and shape.vocab):
        return 0.0
    per_layer = 34 * tokens * shape.hidden
    stored = (
        tokens * shape.hidden * 2 * shape.layers + per_layer if checkpointing else per_layer * shape.layers
    )
    return float(stored + (8 * tokens * shape.vocab if logits else 0))


def kv_bytes_per_token(shape: Shape, tp: int) -> float | None:
    """KV-cache bytes per token on one tensor-parallel rank (bf16)."""
    if not (shape.layers and shape.kv_heads and shape.head_dim):
        return None
    heads = max(1, -(-shape.kv_heads // tp))
    return 2.0 * shape.layers * heads * shape.head_dim * 2


def _container(c: DictConfig, key: str) -> dict[str, Any]:
    node = sel(c, key)
    return (OmegaConf.to_container(node, resolve=True) or {}) if node is not None else {}


def ulysses(section: Any, engine: dict[str, Any]) -> int:
    """A role's Ulysses size: its engine config's, or the deprecated role key veRL forwards to it."""
    return max(
        int(engine.get("ulysses_sequence_parallel_size") or 1),
        int(section.get("ulysses_sequence_parallel_size") or 1),
    )


def micro_tokens(section: Any, seq: int, sp: int, budget_key: str = "ppo_max_token_len_per_gpu") -> int:
    """Tokens of one training micro-batch on one GPU (see the module docstring)."""
    if section.get("use_dynamic_bsz"):
        return int(section.get(budget_key))
    return int(section.get("ppo_micro_batch_size_per_gpu") or 1) * seq // max(1, sp)


def plan(ctx: Context, shape: Shape) -> dict[str, Any]:
    """The per-GPU memory plan (bytes) of the configured veRL run."""
    c = ctx.cfg
    world = int(c.trainer.n_gpus_per_node) * int(c.trainer.nnodes)
    a = _container(c, "actor_rollout_ref.actor.fsdp_config")
    shard = int(a.get("fsdp_size") or -1)
    shard = world if shard <= 0 else min(shard, world)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy  # veRL: seconds; only this check

    from recipes.validate import quiet  # veRL's helpers print and warn

    seq = int(c.data.max_prompt_length) + int(c.data.max_response_length)
    actor = c.actor_rollout_ref.actor
    sp = ulysses(actor, a)
    tokens = micro_tokens(actor, seq, sp)
    ckpt = bool(sel(c, "actor_rollout_ref.model.enable_gradient_checkpointing", True))
    parts: dict[str, dict[str, float]] = {"actor": trained_state(shape.params, a, shard)}
    parts["actor"]["update"] = update_state(shape.params, a, shard)
    parts["actor"]["activations"] = activations(shape, tokens, ckpt)
    levers = {"actor_ulysses": sp, "actor_micro_batch_tokens": tokens, "gradient_checkpointing": ckpt}
    levers.update({f"actor_{k}": bool(a.get(k)) for k in ("param_offload", "optimizer_offload")})
    if quiet(need_reference_policy, c):
        ref = _container(c, "actor_rollout_ref.ref.fsdp_config")
        on_cpu = bool(ref.get("forward_only") or ref.get("param_offload"))
        parts["reference"] = {"params": 0.0 if on_cpu else shape.params * _dtype(ref) / shard}
        levers["reference_on_cpu"] = on_cpu
    if quiet(need_critic, c):
        cf = _container(c, "critic.fsdp")
        csp = ulysses(
            {}, cf
        )  # veRL 0.9.1 reads only critic.fsdp's (the deprecated critic key is not forwarded)
        ctokens = micro_tokens(c.critic, seq, csp)
        ckpt_c = bool(sel(c, "critic.model.enable_gradient_checkpointing", True))
        parts["critic"] = trained_state(shape.params, cf, shard)
        parts["critic"]["update"] = update_state(shape.params, cf, shard)
        parts["critic"]["activations"] = activations(shape, ctokens, ckpt_c, logits=False)
        levers.update({"critic_ulysses": csp, "critic_micro_batch_tokens": ctokens})
        levers.update({f"critic_{k}": bool(cf.get(k)) for k in ("param_offload", "optimizer_offload")})
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
    levers.update({"rollout_tensor_parallel": tp, "rollout_gpu_memory_utilization": util})
    return {
        "world": world,
        "shard": shard,
        "seq_len": seq,
        "micro_batch_tokens": tokens,
        "levers": levers,
        "parts": parts,
        "rollout": rollout,
    }


def _idle(v: dict[str, float]) -> float:
    return v.get("params", 0.0) + v.get("optimizer", 0.0)


def phases(p: dict[str, Any], free_cache: bool) -> dict[str, float]:
    """Peak bytes of the generating phase and of each trained role's update (``train_<role>``),
    with ``train_static`` / ``train_peak`` the largest update without / with its activations."""
    parts, reserved = p["parts"], p["rollout"].get("reserved", 0.0)
    out = {"generate": sum(_idle(v) for v in parts.values()) + reserved}
    static, peak = 0.0, 0.0
    for role, v in parts.items():
        if "update" not in v:
            continue
        others = sum(_idle(w) for k, w in parts.items() if k != role)
        base = v["update"] + others + (0.0 if free_cache else reserved)
        out[f"train_{role}"] = base + v.get("activations", 0.0)
        static, peak = max(static, base), max(peak, out[f"train_{role}"])
    out["train_static"], out["train_peak"] = static, peak
    return out


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
    """Throughput (every engine) and, for engine=verl on GPUs, the per-GPU memory plan against the GPU
    (the CPU run of veRL's trainer has none: an ``info`` says so)."""
    check_throughput(ctx)
    if ctx.engine != "verl":
        ctx.report.add(
            "memory", "info", "engine", f"engine={ctx.engine}: the GPU memory plan is for engine=verl runs"
        )
        return {}
    if sel(ctx.cfg, "trainer.device") == "cpu":  # make run's CPU changes applied (recipes.preflight.target)
        ctx.report.add(
            "memory",
            "info",
            "trainer.device=cpu",
            "the CPU run of veRL's trainer holds every role in this machine's RAM: no GPU memory to plan",
            "to plan the GPU run's memory, pre-flight it: scale=gpu_node (or target=gpu) gpu_memory_gb=80",
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
    ctx.report.facts["memory_plan_gb"] = _in_gb({k: v for k, v in p.items() if k != "levers"})
    ctx.report.facts["memory_levers"] = p["levers"]
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
    for role in (
        k[len("train_") :] for k in ph if k.startswith("train_") and k not in ("train_static", "train_peak")
    ):
        v, key = ph[f"train_{role}"], "actor_rollout_ref.actor" if role == "actor" else "critic"
        act = p["parts"][role].get("activations", 0.0)
        if v - act > gpu:
            own = p["parts"][role]["update"]
            fails.append(
                (
                    f"the {role}'s training state alone needs {(v - act) / GB:.1f} GB per GPU during its update "
                    f"({own / GB:.1f} GB of its parameters, gradients and AdamW moments over {p['shard']} GPUs, which "
                    f"offload does not move during its own update; {(v - act - own) / GB:.1f} GB of the other roles)",
                    "more GPUs (trainer.nnodes), offload of the other roles, or a smaller model",
                )
            )
        elif v > gpu:
            fails.append(
                (
                    f"the {role}'s update needs {v / GB:.1f} GB per GPU with a {p['levers'].get(role + '_micro_batch_tokens', 0):,}-token "
                    f"micro-batch ({act / GB:.1f} GB of activations)",
                    f"raise {key}.ulysses_sequence_parallel_size (critic: critic.fsdp.ulysses_sequence_parallel_size) and "
                    f"derive the budget with ${{rlvr.token_budget:...}} (smaller micro-batches), or more GPUs",
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
    top = max(ph["train_peak"], ph["generate"])
    msg = (
        f"peak ~{top / GB:.1f} of {gpu_gb:g} GB per GPU (generating {ph['generate'] / GB:.1f}, training "
        f"{ph['train_peak'] / GB:.1f} with ~{p['micro_batch_tokens']:,}-token micro-batches; levers: {_levers(p)})"
    )
    if top / gpu > float(ctx.settings.memory_warn):
        ctx.report.add(
            "memory",
            "warn",
            where,
            msg + f": above {float(ctx.settings.memory_warn):.0%}",
            "lower the micro-batch (ppo_max_token_len_per_gpu via a larger ulysses_sequence_parallel_size) or offload",
        )
    else:
        ctx.report.add("memory", "info", where, msg)
    _kv_note(ctx, p, shape)


def _levers(p: dict[str, Any]) -> str:
    lv = p["levers"]
    on = [k for k, v in lv.items() if v is True]
    nums = [f"{k}={v}" for k, v in lv.items() if not isinstance(v, bool)]
    return ", ".join(nums + on)


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
