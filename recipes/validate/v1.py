"""Rules for veRL 0.9.1's V1 trainer, the one ``main_ppo`` runs by default (``trainer.use_v1: true``).

The V1 trainer (``verl/trainer/ppo/v1/trainer_base.py``, ``trainer_separate_async.py``) and its
replay buffer (``replay_buffer.py``) check the config when the trainer is built on the cluster, or at
the first step: after Ray, the workers and the model have started on rented GPUs. Each rule here
refuses one of those checks before launch, with the full key and the fix; ``docs/verl_checks.md``
maps every ``assert``/``raise`` of those files to its rule (or says why no config reaches it).

Not here: what the V1 trainer only warns about (``algorithm.filter_groups.max_num_gen_batches`` is
ignored; ``data.gen_batch_size`` becomes 1 under dynamic sampling: the recipe pages say so), and the
checks both trainers share (resumption keys, batch splits: :mod:`recipes.validate.gpu`).
"""

from __future__ import annotations

from omegaconf import DictConfig

from recipes.validate.registry import rule, sel

RM = "reward.reward_model"
V1 = "trainer.v1"
#: the trainer the V1 entry builds when ``trainer.v1.trainer_mode`` is left as veRL's default
DEFAULT_MODE = "sync"


def _v1(cfg: DictConfig) -> bool:
    return bool(sel(cfg, "trainer.use_v1"))


def _mode(cfg: DictConfig) -> str:
    return str(sel(cfg, f"{V1}.trainer_mode") or DEFAULT_MODE)


def _filtering(cfg: DictConfig) -> bool:
    return bool(sel(cfg, "algorithm.filter_groups.enable"))


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


@rule("v1_trainer_mode", engines=("verl",))
def v1_trainer_mode(cfg: DictConfig) -> list[str]:
    """``get_trainer_cls`` (trainer_base.py) knows only the registered trainers."""
    mode = _mode(cfg)
    if not _v1(cfg) or mode == DEFAULT_MODE:
        return []
    from verl.trainer.ppo.v1 import trainer_base  # registers the trainers it imports; ~1 s, so only here

    known = sorted(trainer_base.TRAINER_REGISTRY)
    if mode in known:
        return []
    return [f"[{V1}.trainer_mode] {mode!r} is no V1 trainer; fix: one of {known}"]


@rule("v1_dynamic_sampling", engines=("verl",))
def v1_dynamic_sampling(cfg: DictConfig) -> list[str]:
    """``_resolve_filter_groups_metric`` (trainer_base.py): a metric, and the reward at sampling time."""
    if not (_v1(cfg) and _filtering(cfg)):
        return []
    errs = []
    if not sel(cfg, "algorithm.filter_groups.metric"):
        errs.append(
            "[algorithm.filter_groups.metric] dynamic sampling needs the per-sample reward key that "
            "groups are filtered on; fix: algorithm.filter_groups.metric=acc (or filter=dynamic)"
        )
    if sel(cfg, f"{RM}.enable") and not sel(cfg, f"{RM}.enable_resource_pool"):
        errs.append(
            f"[{RM}.enable_resource_pool] false: dynamic sampling under veRL's V1 trainer filters groups "
            "as they are sampled, but a reward model sharing the actor's GPUs scores only after sampling "
            f"(veRL asserts this when the trainer starts); fix: {RM}.enable_resource_pool=true with its "
            f"own {RM}.n_gpus_per_node and nnodes, or filter=none"
        )
    inflight = sel(cfg, "algorithm.filter_groups.max_inflight_gen_batches")
    if inflight is not None and not (_int(inflight) and inflight > 0):
        errs.append(
            f"[algorithm.filter_groups.max_inflight_gen_batches] {inflight!r}: the V1 replay buffer needs "
            "a positive integer; fix: algorithm.filter_groups.max_inflight_gen_batches=1"
        )
    return errs


@rule("v1_sampler", engines=("verl",))
def v1_sampler(cfg: DictConfig) -> list[str]:
    """The replay buffer's own checks (replay_buffer.py ``ReplayBuffer.__init__``)."""
    if not _v1(cfg):
        return []
    errs = []
    key = f"{V1}.sampler.max_off_policy_threshold"
    threshold = sel(cfg, key)
    if threshold is not None and not (_int(threshold) and threshold > 0):
        errs.append(f"[{key}] {threshold!r}: an integer above 0, or null to turn staleness control off")
    key = f"{V1}.sampler.max_off_policy_strategy"
    if (strategy := sel(cfg, key)) not in ("drop", "wait"):
        errs.append(f"[{key}] {strategy!r}; fix: drop or wait")
    return errs


@rule("v1_batch_fetch", engines=("verl",))
def v1_batch_fetch(cfg: DictConfig) -> list[str]:
    """``_next_train_batch`` (trainer_base.py): the sync trainer fetches ``data.train_batch_size``
    prompts in whole ``data.gen_batch_size`` chunks (V1 sets the chunk to 1 itself under dynamic
    sampling, failed-group refill or an async mode)."""
    exact = _filtering(cfg) or sel(cfg, f"{V1}.sampler.sync_refill_failed_groups") or _mode(cfg) != "sync"
    gen, train = sel(cfg, "data.gen_batch_size"), sel(cfg, "data.train_batch_size")
    if not _v1(cfg) or exact or not (_int(gen) and _int(train)) or gen <= 0:
        return []
    if train % gen == 0:
        return []
    return [
        f"[data.gen_batch_size] {gen} does not divide data.train_batch_size={train}: veRL's V1 trainer "
        "fetches each step's prompts in whole gen_batch_size chunks and raises at the first step; fix: "
        f"a divisor of {train}, or data.gen_batch_size=null"
    ]


@rule("v1_parameter_sync", engines=("verl",))
def v1_parameter_sync(cfg: DictConfig) -> list[str]:
    """``step`` (trainer_base.py) splits a batch over ``parameter_sync_step``; the separate-async
    trainer also needs the batch to be that many mini-batches (trainer_separate_async.py)."""
    if not _v1(cfg):
        return []
    mode = _mode(cfg)
    key = f"{V1}.{mode}.parameter_sync_step"
    step, train = sel(cfg, key) or 1, sel(cfg, "data.train_batch_size")
    if not (_int(step) and _int(train)) or step <= 0:
        return []
    if train % step:
        return [
            f"[{key}] {step} does not divide data.train_batch_size={train} (veRL asserts it at the first "
            f"step); fix: a divisor of {train}"
        ]
    mini = sel(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size")
    if mode == "separate_async" and _int(mini) and train != step * mini:
        return [
            f"[{key}] separate_async needs data.train_batch_size = parameter_sync_step x "
            f"actor_rollout_ref.actor.ppo_mini_batch_size, got {train} != {step} x {mini}; fix: "
            f"{key}={train // mini if mini and train % mini == 0 else '<train/mini>'}"
        ]
    return []


@rule("v1_separate_async", engines=("verl",))
def v1_separate_async(cfg: DictConfig) -> list[str]:
    """``PPOTrainerSeparateAsync.__init__``: the rollout has GPUs of its own and a real weight-sync
    backend; a reward model has its own pool."""
    if not (_v1(cfg) and _mode(cfg) == "separate_async"):
        return []
    errs = []
    for k in ("nnodes", "n_gpus_per_node"):
        v = sel(cfg, f"actor_rollout_ref.rollout.{k}")
        if _int(v) and v <= 0:
            errs.append(
                f"[actor_rollout_ref.rollout.{k}] {v}: separate_async serves rollouts on GPUs of their own "
                f"(on a CPU: standalone replica processes); fix: actor_rollout_ref.rollout.{k}=1 or more"
            )
    if sel(cfg, "actor_rollout_ref.rollout.checkpoint_engine.backend") == "naive":
        errs.append(
            "[actor_rollout_ref.rollout.checkpoint_engine.backend] naive: separate_async syncs weights "
            "between GPU pools; fix: nccl (or nixl, mooncake; on a CPU the launch sets cpu_gloo)"
        )
    if sel(cfg, f"{V1}.separate_async.hybrid_rollout.enable_switch") and sel(
        cfg, "actor_rollout_ref.rollout.disaggregation.enabled"
    ):
        errs.append(
            f"[{V1}.separate_async.hybrid_rollout.enable_switch] true with "
            "actor_rollout_ref.rollout.disaggregation.enabled=true: veRL's hybrid switching does not "
            f"support disaggregated rollouts; fix: {V1}.separate_async.hybrid_rollout.enable_switch=false"
        )
    if sel(cfg, f"{RM}.enable") and not sel(cfg, f"{RM}.enable_resource_pool"):
        errs.append(
            f"[{RM}.enable_resource_pool] false: separate_async never pauses its rollout to free GPU "
            f"memory for a colocated reward model; fix: {RM}.enable_resource_pool=true"
        )
    return errs


@rule("resource_pools", engines=("verl",))
def resource_pools(cfg: DictConfig) -> list[str]:
    """``init_resource_pool_mgr`` (trainer_base.py): a reward model's own pool and the distillation
    teachers' pool have GPUs (a teacher pool of 0 GPUs passes veRL's distillation dataclass)."""
    pools = []
    if sel(cfg, f"{RM}.enable_resource_pool"):
        pools.append((RM, f"{RM}.enable_resource_pool=false"))
    if sel(cfg, "distillation.enabled"):
        pools.append(("distillation", "distillation.enabled=false"))
    return [
        f"[{sec}.{k}] {v}: this resource pool needs > 0; fix: {sec}.{k}=1 or more, or {off}"
        for sec, off in pools
        for k in ("n_gpus_per_node", "nnodes")
        if _int(v := sel(cfg, f"{sec}.{k}")) and v <= 0
    ]
