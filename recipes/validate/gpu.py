"""Rules for veRL's run-time checks that only a GPU run would reach (``engine=verl``).

veRL 0.9.1 asserts several things about sizes only when a batch reaches a worker: hours into a
rented node, after its own ``validate_config`` has passed. Each rule here refuses one of them before
launch, with the full key, the values and the fix; ``docs/verl_checks.md`` maps every ``assert``
and ``raise`` of veRL's trainer, workers and ``utils/seqlen_balancing.py`` to the rule that covers
it (or why no configuration reaches it). Covered here:

- token budgets: with dynamic batch size, budget x Ulysses size must hold one prompt + response
  (``seqlen_balancing.rearrange_micro_batches``); the rollout's log-prob pass must batch the same
  way as the actor (``engine_workers``);
- the batch sizes the workers split over GPUs (balance, mini-batches over data-parallel ranks,
  micro-batches of a mini-batch), the rollout's tensor parallelism over the GPUs;
- the critic and distillation sections, which the validation layer does not hand to veRL's
  dataclasses (:mod:`recipes.validate`): here they are, without the critic's model files;
- gradient clipping that veRL's FSDP engine requires, checkpoint resumption keys.

Not covered: data-dependent checks (empty files, over-long prompts: the pre-flight's data checks),
backends no recipe uses (Megatron, VeOmni, TorchTitan, AutoModel, TensorRT-LLM).
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from recipes.validate.registry import is_number, rule, sel

A, R, F, C = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref", "critic"


def _sp(cfg: DictConfig, role: str) -> int:
    """A role's Ulysses size as veRL 0.9.1 reads it (the actor and reference forward the deprecated
    role key into their engine config; the critic reads only ``critic.fsdp``)."""
    if role == C:
        return int(sel(cfg, f"{C}.fsdp.ulysses_sequence_parallel_size") or 1)
    engine = "fsdp_config"
    return max(
        int(sel(cfg, f"{role}.ulysses_sequence_parallel_size") or 1),
        int(sel(cfg, f"{role}.{engine}.ulysses_sequence_parallel_size") or 1),
    )


def _uses_ref(cfg: DictConfig) -> bool:
    return bool(sel(cfg, f"{A}.use_kl_loss") or sel(cfg, "algorithm.use_kl_in_reward"))


def _uses_critic(cfg: DictConfig) -> bool:
    enable = sel(cfg, f"{C}.enable")
    return bool(enable) if enable is not None else sel(cfg, "algorithm.adv_estimator") == "gae"


def budgets(cfg: DictConfig) -> list[tuple[str, str, str]]:
    """(budget key, dynamic-batch switch key, role whose Ulysses size applies) of every budget in use."""
    out = [(f"{A}.ppo_max_token_len_per_gpu", f"{A}.use_dynamic_bsz", A)]
    out.append((f"{R}.log_prob_max_token_len_per_gpu", f"{R}.log_prob_use_dynamic_bsz", A))
    if _uses_ref(cfg):
        out.append((f"{F}.log_prob_max_token_len_per_gpu", f"{F}.log_prob_use_dynamic_bsz", F))
    if _uses_critic(cfg):
        out.append((f"{C}.ppo_max_token_len_per_gpu", f"{C}.use_dynamic_bsz", C))
        out.append((f"{C}.forward_max_token_len_per_gpu", f"{C}.use_dynamic_bsz", C))
    return out


@rule("token_budgets", engines=("verl",))
def token_budgets(cfg: DictConfig) -> list[str]:
    """With dynamic batch size, budget x Ulysses size >= prompt + response (veRL asserts it per batch)."""
    p, r = sel(cfg, "data.max_prompt_length"), sel(cfg, "data.max_response_length")
    if not (is_number(p) and is_number(r)):
        return []
    seq, errs = int(p) + int(r), []
    for key, switch, role in budgets(cfg):
        if not sel(cfg, switch):
            continue
        v, sp = sel(cfg, key), _sp(cfg, role)
        if not is_number(v) or v * sp < seq:
            sp_txt = f" x ulysses_sequence_parallel_size {sp}" if sp > 1 else ""
            errs.append(
                f"[{key}] {v!r}{sp_txt} tokens per micro-batch < data.max_prompt_length + data.max_response_length "
                f"= {p} + {r} = {seq}: veRL asserts max_token_len >= the longest sequence "
                f"(utils/seqlen_balancing.py) at the first batch holding a long response; fix: "
                f"{key}=${{rlvr.token_budget:${{data.max_prompt_length}},${{data.max_response_length}},{sp}}} "
                f"(= {-(-seq // sp)}; the scale profiles gpu_node/multi_node derive it) or larger"
            )
    return errs


@rule("log_prob_batching", engines=("verl",))
def log_prob_batching(cfg: DictConfig) -> list[str]:
    """veRL's actor computes the rollout's log-probs with the actor's batching mode (engine_workers)."""
    a, r = sel(cfg, f"{A}.use_dynamic_bsz"), sel(cfg, f"{R}.log_prob_use_dynamic_bsz")
    if bool(a) == bool(r):
        return []
    return [
        f"[{R}.log_prob_use_dynamic_bsz] {r} but {A}.use_dynamic_bsz is {a}: veRL 0.9.1 asserts they are equal "
        f"when it builds the actor (workers/engine_workers.py); fix: leave {R}.log_prob_use_dynamic_bsz at "
        f"its default (${{oc.select:{A}.use_dynamic_bsz,false}})"
    ]


@rule("critic_ulysses_key", engines=("verl",))
def critic_ulysses_key(cfg: DictConfig) -> list[str]:
    """veRL 0.9.1 does not forward the deprecated ``critic.ulysses_sequence_parallel_size`` to the engine."""
    old, new = sel(cfg, f"{C}.ulysses_sequence_parallel_size"), _sp(cfg, C)
    if not _uses_critic(cfg) or not is_number(old) or old <= 1 or old == new:
        return []
    return [
        f"[{C}.ulysses_sequence_parallel_size] {old} is not read by veRL 0.9.1's critic engine, which uses "
        f"{C}.fsdp.ulysses_sequence_parallel_size ({new}); fix: set {C}.fsdp.ulysses_sequence_parallel_size={old}"
    ]


def _world(cfg: DictConfig) -> int:
    return int(sel(cfg, "trainer.n_gpus_per_node") or 1) * int(sel(cfg, "trainer.nnodes") or 1)


@rule("gpu_batch_split", engines=("verl",))
def gpu_batch_split(cfg: DictConfig) -> list[str]:
    """The batch splits evenly over the GPUs, mini-batches over data-parallel ranks, micro-batches within."""
    world, n, tb = _world(cfg), sel(cfg, f"{R}.n"), sel(cfg, "data.train_batch_size")
    if not all(isinstance(x, int) and x > 0 for x in (world, n, tb)):
        return []
    errs = []
    if (tb * n) % world:
        errs.append(
            f"[data.train_batch_size] {tb} prompts x {R}.n {n} = {tb * n} responses do not split over {world} GPUs "
            "(trainer.n_gpus_per_node x trainer.nnodes): veRL balances and dispatches the batch in equal parts "
            f"(utils/seqlen_balancing.py, equal_size); fix: a batch whose responses are a multiple of {world}"
        )
    for key, switch in (
        (f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.use_dynamic_bsz"),
        (f"{R}.log_prob_micro_batch_size_per_gpu", f"{R}.log_prob_use_dynamic_bsz"),
    ):
        v = sel(cfg, key)
        if not sel(cfg, switch) and not (isinstance(v, int) and v > 0):
            errs.append(
                f"[{key}] {v!r}: without dynamic batch size veRL's actor asserts a per-GPU micro-batch "
                f"(workers/engine_workers.py); fix: a positive number (e.g. 4), or {switch}=true"
            )
    roles = [(A, A)] + ([(C, C)] if _uses_critic(cfg) else [])
    for section, sp_role in roles:
        mini, sp = sel(cfg, f"{section}.ppo_mini_batch_size"), _sp(cfg, sp_role)
        if not isinstance(mini, int) or mini <= 0 or world % sp:
            if world % sp:
                errs.append(
                    f"[{section}.ulysses_sequence_parallel_size] {sp} does not divide the {world} GPUs; "
                    "fix: a Ulysses size that divides trainer.n_gpus_per_node x trainer.nnodes"
                )
            continue
        dp = world // sp
        if (mini * n) % dp:
            errs.append(
                f"[{section}.ppo_mini_batch_size] {mini} prompts x {R}.n {n} = {mini * n} responses do not split over "
                f"{dp} data-parallel ranks ({world} GPUs / Ulysses {sp}): veRL asserts it per update "
                f"(workers/engine_workers.py); fix: a mini-batch whose responses are a multiple of {dp}"
            )
            continue
        micro = sel(cfg, f"{section}.ppo_micro_batch_size_per_gpu")
        if not sel(cfg, f"{section}.use_dynamic_bsz") and isinstance(micro, int) and micro > 0:
            per_rank = mini * n // dp
            if per_rank % micro:
                errs.append(
                    f"[{section}.ppo_micro_batch_size_per_gpu] {micro} does not divide the {per_rank} responses a rank "
                    f"gets per mini-batch: veRL asserts it (workers/engine/utils.py); fix: a divisor of {per_rank}, "
                    f"or {section}.use_dynamic_bsz=true"
                )
    return errs


@rule("rollout_parallel", engines=("verl",))
def rollout_parallel(cfg: DictConfig) -> list[str]:
    """The rollout's tensor x data x pipeline parallel size divides the GPUs (engine_workers asserts it);
    tensor parallelism alone is refused by the pre-flight's memory check unless ``preflight=false``."""
    world = _world(cfg)
    sizes = [sel(cfg, f"{R}.{k}_parallel_size") or 1 for k in ("tensor_model", "data", "pipeline_model")]
    if not all(isinstance(s, int) and s > 0 for s in sizes):
        return []
    infer = sizes[0] * sizes[1] * sizes[2]
    # tensor parallelism alone is the pre-flight memory check's to refuse (with the per-GPU plan);
    # this rule covers what it does not see: preflight=false, and data/pipeline parallel sizes
    if world % infer == 0 or (sel(cfg, "preflight") is not False and infer == sizes[0]):
        return []
    return [
        f"[{R}.tensor_model_parallel_size] tensor_model_parallel_size={sizes[0]} x data_parallel_size={sizes[1]} x "
        f"pipeline_model_parallel_size={sizes[2]} = {infer} does not divide the {world} GPUs (trainer.n_gpus_per_node x trainer.nnodes): veRL "
        "asserts it when it builds the rollout (workers/engine_workers.py); fix: a tensor-parallel size that divides "
        f"{world}"
    ]


@rule("grad_clip_set", engines=("verl",))
def grad_clip_set(cfg: DictConfig) -> list[str]:
    """veRL's FSDP engine asserts ``optim.clip_grad`` is not null before every optimizer step."""
    roles = [A] + ([C] if _uses_critic(cfg) else [])
    return [
        f"[{role}.optim.clip_grad] null: veRL's FSDP engine asserts a gradient-clipping norm at every optimizer "
        f"step (workers/engine/fsdp/transformer_impl.py); fix: {role}.optim.clip_grad=1.0 (veRL's default)"
        for role in roles
        if sel(cfg, f"{role}.optim.clip_grad") is None
    ]


@rule("resume_keys", engines=("verl",))
def resume_keys(cfg: DictConfig) -> list[str]:
    """Checkpoint resumption keys veRL's trainer asserts on at start-up (trainer/ppo/ray_trainer.py)."""
    mode, errs = sel(cfg, "trainer.resume_mode"), []
    if mode != "disable" and sel(cfg, "trainer.default_hdfs_dir") is not None:
        errs.append(
            f"[trainer.default_hdfs_dir] {sel(cfg, 'trainer.default_hdfs_dir')!r} with trainer.resume_mode={mode}: veRL "
            "0.9.1 raises NotImplementedError (load from hdfs) at start-up; fix: trainer.default_hdfs_dir=null"
        )
    path = sel(cfg, "trainer.resume_from_path")
    if mode == "resume_path" and not (isinstance(path, str) and "global_step_" in path):
        errs.append(
            f"[trainer.resume_from_path] {path!r} with trainer.resume_mode=resume_path: veRL asserts a "
            "<checkpoints>/global_step_<n> directory; fix: point it at one, or trainer.resume_mode=auto"
        )
    return errs


def _dataclass_errors(node: Any, key: str, drop: tuple[str, ...] = ()) -> list[str]:
    from verl.utils.config import omega_conf_to_dataclass  # veRL: seconds; not at --help

    from recipes.validate.verl_checks import quiet  # veRL's helpers print and warn

    plain = OmegaConf.create(OmegaConf.to_container(node, resolve=True))
    with open_dict(plain):
        for k in drop:
            plain.pop(k, None)
    try:
        return [quiet(omega_conf_to_dataclass, plain)]
    except Exception as e:  # noqa: BLE001 - veRL raises TypeError/ValueError/AssertionError
        return [f"[{key}] {type(e).__name__}: {e}"]


@rule("verl_critic_config", engines=("verl",))
def verl_critic_config(cfg: DictConfig) -> list[str]:
    """veRL's critic dataclass (``__post_init__`` and ``validate``) on the critic section, without its
    model (whose config.json a dry run may not have); Ulysses needs ``critic.model.use_remove_padding``."""
    if not _uses_critic(cfg):
        return []
    out = _dataclass_errors(cfg.critic, C, drop=("model",))
    if isinstance(out[0], str):
        return out
    errs = []
    try:
        out[0].validate(_world(cfg), int(cfg.data.train_batch_size))
    except Exception as e:  # noqa: BLE001
        errs.append(f"[{C}] {type(e).__name__}: {e}")
    if _sp(cfg, C) > 1 and not sel(cfg, f"{C}.model.use_remove_padding"):
        errs.append(
            f"[{C}.model.use_remove_padding] false with {C}.fsdp.ulysses_sequence_parallel_size {_sp(cfg, C)}: veRL's "
            "FSDP engine raises ValueError at init (workers/engine/fsdp/transformer_impl.py); fix: "
            f"{C}.model.use_remove_padding=true"
        )
    return errs


@rule("verl_distillation_config", engines=("verl",))
def verl_distillation_config(cfg: DictConfig) -> list[str]:
    """veRL's distillation dataclass (its ``__post_init__`` checks) when distillation is enabled."""
    node = sel(cfg, "distillation")
    if node is None or not node.get("enabled"):
        return []
    out = _dataclass_errors(node, "distillation")
    return [e for e in out if isinstance(e, str)]
