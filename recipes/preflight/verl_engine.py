"""Dress rehearsal on veRL's own actor engine, on CPU: a recipe's actor (and reference) config run
through veRL 0.9.1's ``TrainingWorker`` + ``FSDPEngineWithLMHead`` and ``ppo_loss`` in this process.

:func:`rehearse` takes a composed recipe config and a local Hugging Face checkpoint directory and
does what ``main_ppo``'s actor worker does after generation (``ActorRolloutRefWorker.init_model``,
``compute_ref_log_prob``, ``compute_log_prob``, ``update_actor``; ``verl/workers/engine_workers.py``):
reference log-probs (when ``actor.use_kl_loss`` or ``algorithm.use_kl_in_reward``), old log-probs,
then one ``train_mini_batch`` on synthetic responses. The recipe's own actor and ref sections are
used as composed -- loss mode, clip ratios, loss aggregation, KL loss, entropy coefficient,
optimizer, dynamic batching and token budgets, micro-batch sizes, gradient checkpointing, remove
padding -- and only what a CPU needs is changed (:mod:`recipes.preflight.verl_cpu`), each change
listed in :attr:`Rehearsal.cpu_changes`: a CPU platform, ``VERL_ENGINE_DEVICE=cuda``, SDPA
attention, FSDP2, fp32 mixed precision, no torch.compile, no offload, no lr warmup for the one
step, one gloo process (world size 1, so Ulysses sequence parallelism 1), and the batch: ``seqs``
synthetic sequences in one mini-batch, at most ``max_len`` tokens each.

Lengths: the synthetic prompt and response split ``max_len`` in the recipe's ratio of
``data.max_prompt_length`` to ``data.max_response_length`` (the first row is exactly that long;
the others are shorter). Every token budget (:data:`BUDGET_KEYS`) is multiplied by its section's
Ulysses size (veRL packs budget x sp tokens per micro-batch) and scaled by the same factor as the
lengths, rounded down: a budget below the recipe's prompt + response is then below the
rehearsal's longest sequence, so veRL's own assert (``verl/utils/seqlen_balancing.py``) fires
exactly when it would on the GPU, and the split into micro-batches keeps its proportions. The
assert comes back as :class:`Refused` naming the config key and the fix. The pre-flight check
that runs this on the run's checkpoint is :mod:`recipes.preflight.verl_check`.

Not covered: generation (vLLM/SGLang rollout), rewards and advantages (standard-normal synthetic
advantages per sequence), the critic (``orz_ppo``), on-policy distillation's loss (``opd``: the
policy loss runs alone), Ulysses sequence parallelism itself, offload, several GPUs, bf16
numerics, CUDA memory. A pass shows that veRL's engine accepts the recipe's actor and ref config
and produces a finite update that moves the weights.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from verl.utils import hf_tokenizer
from verl.utils import tensordict_utils as tu
from verl.workers.utils.losses import ppo_loss
from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

from recipes.preflight.verl_cpu import (
    CPU_CHANGES,
    cpu_section,
    install_cpu_platform,
    model_config,
    sp_size,
    worker,
)

#: Token budget keys by the call that reads them: the update, the old log-probs, the reference.
BUDGET_KEYS = {
    "actor": "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "old": "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
    "ref": "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
}


class Refused(ValueError):
    """veRL's engine refused the config (an ``assert`` or error a config value reached); names the key."""

    def __init__(self, key: str, message: str, fix: str) -> None:
        super().__init__(f"[{key}] {message} (fix: {fix})")
        self.key, self.message, self.fix = key, message, fix


@dataclass
class Rehearsal:
    """What one rehearsal did and measured.

    Attributes:
        recipe: ``rlvr.recipe``.
        checkpoint: the model directory.
        cpu_changes: config key or setting -> what the rehearsal set there and why.
        lengths: prompt/response lengths of the recipe and of the synthetic batch, the length scale.
        budgets: token budget key -> (recipe value, its Ulysses sp size, value given to veRL at sp 1 and
            scaled to the rehearsal's lengths), for each budget dynamic batching reads.
        timings: seconds of ``init`` (both engines), ``ref_log_prob``, ``old_log_prob``, ``update``.
        metrics: ``train_mini_batch``'s metrics, each reduced to a float (mean over micro-batches).
        weight_change: max |w_after - w_before| over all parameters.
        worker, batch: the actor ``TrainingWorker`` and the padded batch, with ``keep=True`` only.
    """

    recipe: str
    checkpoint: str
    cpu_changes: dict[str, str] = field(default_factory=dict)
    lengths: dict[str, float] = field(default_factory=dict)
    budgets: dict[str, tuple[int | None, int, int | None]] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    weight_change: float = 0.0
    worker: Any = field(default=None, repr=False)
    batch: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able fields (not the kept worker and batch)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("worker", "batch")}


# ---------------------------------------------------------------------------------------- config
def _sel(cfg: DictConfig, key: str, default: Any = None) -> Any:
    return OmegaConf.select(cfg, key, default=default)


def _scaled(budget: Any, longest: int, recipe_len: int) -> int | None:
    """``budget`` x ``longest`` / ``recipe_len``, rounded down (exact integers: below ``longest`` iff
    ``budget`` is below ``recipe_len``)."""
    return None if budget is None else int(budget) * longest // recipe_len


# ---------------------------------------------------------------------------------------- batch
def synthetic_batch(
    tokenizer: Any, seqs: int, prompt_len: int, response_len: int, group: int = 1, seed: int = 0
) -> dict[str, torch.Tensor]:
    """A padded batch as veRL's trainer holds it after generation: ``seqs`` rows, each run of ``group``
    rows sharing one prompt (``rollout.n`` samples of a prompt); prompts left-padded (lengths ``prompt_len`` down to about half), responses right-padded (the
    first row exactly ``response_len`` tokens, the others uniform in [``response_len``/2,
    ``response_len``]), token ids drawn from the tokenizer's vocabulary; one advantage per sequence,
    standard normal, on every response token (an outcome advantage's shape)."""
    g = torch.Generator().manual_seed(seed)
    vocab = len(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    p_lens = torch.randint(max(1, prompt_len // 2), prompt_len + 1, (seqs,), generator=g)
    r_lens = torch.randint(max(1, response_len // 2), response_len + 1, (seqs,), generator=g)
    p_lens[0], r_lens[0] = prompt_len, response_len
    prompts = torch.full((seqs, prompt_len), pad, dtype=torch.long)
    responses = torch.full((seqs, response_len), pad, dtype=torch.long)
    p_mask = torch.zeros((seqs, prompt_len), dtype=torch.long)
    r_mask = torch.zeros((seqs, response_len), dtype=torch.long)
    for i in range(seqs):
        p, r = int(p_lens[i - i % group]), int(r_lens[i])
        if i % group == 0:
            prompts[i, prompt_len - p :] = torch.randint(0, vocab, (p,), generator=g)
        else:
            prompts[i] = prompts[i - 1]
        p_mask[i, prompt_len - p :] = 1
        responses[i, :r] = torch.randint(0, vocab, (r,), generator=g)
        r_mask[i, :r] = 1
    attention = torch.cat([p_mask, r_mask], dim=1)
    position = (attention.cumsum(-1) - 1).clamp(min=0)
    advantages = torch.randn(seqs, generator=g)[:, None] * r_mask.float()
    return {
        "prompts": prompts,
        "responses": responses,
        "input_ids": torch.cat([prompts, responses], dim=1),
        "attention_mask": attention,
        "position_ids": position,
        "response_mask": r_mask,
        "advantages": advantages,
    }


def _td(batch: dict[str, torch.Tensor], **non_tensor: Any) -> Any:
    """The no-padding ``TensorDict`` veRL's trainer hands its workers (``left_right_2_no_padding``)."""

    td = tu.get_tensordict({k: v.clone() for k, v in batch.items()})
    td = left_right_2_no_padding(td)
    tu.assign_non_tensor(td, **non_tensor)
    return td


def _log_probs(
    worker: Any, batch: dict[str, torch.Tensor], temperature: float, entropy: bool
) -> torch.Tensor:

    td = _td(batch, calculate_entropy=entropy, compute_loss=False, temperature=temperature)
    out = worker.infer_batch(td)
    return no_padding_2_padding(tu.get(out, "log_probs"), td).float()


def _refusal(err: AssertionError, key: str, low: dict[str, Any], recipe_len: int) -> Refused:
    """veRL's assert as a :class:`Refused`: the budget key of the call that fired, every key below."""
    text = str(err)
    if "max_token_len must be greater" not in text:
        return Refused(key, f"veRL's engine asserted: {text}", "see the assertion's message")
    below = ", ".join(f"{k}={v}" for k, v in low.items()) or key
    return Refused(
        key,
        f"token budget below the longest sequence ({below} < prompt + response {recipe_len}): "
        f"verl/utils/seqlen_balancing.py asserts at the first batch holding such a sequence ({text}; "
        "lengths and budgets scaled together for CPU)",
        f"set {' and '.join(low or [key])} >= data.max_prompt_length + data.max_response_length = {recipe_len} "
        "(x the section's ulysses_sequence_parallel_size: veRL multiplies the budget by it)",
    )


def _reduce(metrics: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in metrics.items():
        vals = v if isinstance(v, list) else [v]
        nums = []
        for x in vals:
            x = getattr(x, "value", x)
            if isinstance(x, torch.Tensor):
                x = x.float().mean().item()
            if isinstance(x, (int, float)):
                nums.append(float(x))
        if nums:
            out[k] = sum(nums) / len(nums)
    return out


@dataclass
class _Plan:
    """The rehearsal's lengths and budgets: recipe (P, R) -> synthetic (p, r); budget keys by call."""

    P: int
    R: int
    p: int
    r: int
    dyn: bool
    need_ref: bool
    keys: dict[str, str]
    given: dict[str, int | None]
    low: dict[str, Any]


def _plan(cfg: DictConfig, res: Rehearsal, seqs: int, max_len: int) -> _Plan:
    """Lengths scaled to ``max_len``, each budget x its sp size scaled alike; the changes named on ``res``."""
    arr = cfg.actor_rollout_ref
    P, R = int(cfg.data.max_prompt_length), int(cfg.data.max_response_length)
    scale = min(1.0, max_len / (P + R))
    p_len = max(1, round(P * scale))
    r_len = max(1, round((P + R) * scale) - p_len)
    res.lengths = {
        "recipe_prompt": P,
        "recipe_response": R,
        "prompt": p_len,
        "response": r_len,
        "scale": scale,
    }
    if scale < 1.0:
        res.cpu_changes["data.max_prompt_length, data.max_response_length"] = (
            f"{P} + {R} scaled by {scale:.4g} to {p_len} + {r_len} tokens for CPU speed; every token budget "
            "scaled by the same factor, rounded down, so veRL's budget assert fires iff it would at full length"
        )
    n = int(arr.rollout.n)
    res.cpu_changes["batch"] = (
        f"{seqs} synthetic sequences in one mini-batch (prompts shared in groups of {math.gcd(seqs, n)}), "
        "standard-normal advantages per sequence (the recipe's mini-batch: ppo_mini_batch_size "
        f"{arr.actor.ppo_mini_batch_size} x rollout.n {n})"
    )
    if _sel(cfg, "distillation.enabled", False):
        res.cpu_changes["distillation"] = (
            "not rehearsed: the policy loss runs alone (veRL adds its distillation loss)"
        )
    if str(_sel(cfg, "algorithm.adv_estimator")) == "gae":
        res.cpu_changes["critic"] = "not rehearsed: only the actor (and reference) run"
    dyn = bool(arr.actor.use_dynamic_bsz)
    if dyn != bool(arr.rollout.log_prob_use_dynamic_bsz):
        raise Refused(
            "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz",
            f"{arr.rollout.log_prob_use_dynamic_bsz} != actor.use_dynamic_bsz {dyn}: veRL asserts they agree "
            "(ActorRolloutRefWorker.init_model)",
            "set both to the same value",
        )
    need_ref = bool(arr.actor.use_kl_loss) or bool(_sel(cfg, "algorithm.use_kl_in_reward", False))
    keys = {k: v for k, v in BUDGET_KEYS.items() if need_ref or k != "ref"}
    budgets = {k: _sel(cfg, key) for k, key in keys.items()}
    # veRL packs max_token_len_per_gpu x sp_size tokens per micro-batch (verl/workers/engine/utils.py)
    sp = {"actor": sp_size(arr.actor), "old": sp_size(arr.actor), "ref": sp_size(arr.ref)}
    if max(sp.values()) > 1:
        res.cpu_changes["ulysses_sequence_parallel_size"] = (
            f"{sp['actor']} (actor), {sp['ref']} (ref) -> 1 (one process); each token budget multiplied by its "
            "sp size, as veRL multiplies it, so the assert compares the same numbers"
        )
    eff = {k: None if v is None else int(v) * sp[k] for k, v in budgets.items()}
    given = {k: _scaled(v, p_len + r_len, P + R) for k, v in eff.items()}
    ref_dyn = bool(_sel(cfg, "actor_rollout_ref.ref.log_prob_use_dynamic_bsz", False))
    live = [k for k in keys if (ref_dyn if k == "ref" else dyn)]
    res.budgets = {keys[k]: (budgets[k], sp[k], given[k]) for k in live}
    low = {
        keys[k]: f"{budgets[k]} x sp {sp[k]}" if sp[k] > 1 else int(budgets[k])
        for k in live
        if eff[k] is not None and eff[k] < P + R
    }
    return _Plan(P, R, p_len, r_len, dyn, need_ref, keys, given, low)


def _build(cfg: DictConfig, checkpoint: str | Path, plan: _Plan) -> tuple[Any, Any]:
    """The actor worker (its loss set) and the reference worker (or None), as ``init_model`` builds them."""
    arr = cfg.actor_rollout_ref
    mconf = model_config(cfg, checkpoint)
    actor, actor_conf = worker(
        cpu_section(arr.actor),
        mconf,
        plan.dyn,
        plan.given["old"],
        arr.rollout.log_prob_micro_batch_size_per_gpu,
        plan.given["actor"],
        arr.actor.ppo_micro_batch_size_per_gpu,
    )
    actor.set_loss_fn(functools.partial(ppo_loss, config=actor_conf))
    if not plan.need_ref:
        return actor, None
    ref_sec = cpu_section(arr.ref)  # as ActorRolloutRefWorker.init_model maps the ref's log_prob_* keys
    ref_sec.ppo_mini_batch_size = arr.actor.ppo_mini_batch_size
    ref_sec.ppo_micro_batch_size = ref_sec.pop("log_prob_micro_batch_size", None)
    ref_sec.ppo_micro_batch_size_per_gpu = ref_sec.pop("log_prob_micro_batch_size_per_gpu", None)
    ref_sec.use_dynamic_bsz = bool(ref_sec.pop("log_prob_use_dynamic_bsz", False))
    ref_sec.pop("log_prob_max_token_len_per_gpu", None)
    ref_sec.ppo_max_token_len_per_gpu = plan.given["ref"]
    ref, _ = worker(
        ref_sec, mconf, ref_sec.use_dynamic_bsz, plan.given["ref"], ref_sec.ppo_micro_batch_size_per_gpu
    )
    return actor, ref


def rehearse(
    cfg: DictConfig,
    checkpoint: str | Path,
    seqs: int = 8,
    max_len: int = 96,
    seed: int = 0,
    keep: bool = False,
) -> Rehearsal:
    """Run the recipe's actor (and reference) on veRL's engine on CPU; see the module docstring.

    ``seqs`` sequences of at most ``max_len`` tokens (prompt + response). ``keep`` leaves the actor
    worker and the batch (with ``old_log_probs``, ``advantages``, ``ref_log_prob``) on the result as
    ``worker`` and ``batch`` (for comparisons). Raises :class:`Refused` when veRL's engine refuses
    the config (e.g. a token budget below prompt + response), naming the key and the fix.
    """
    install_cpu_platform()
    arr = cfg.actor_rollout_ref
    res = Rehearsal(recipe=str(_sel(cfg, "rlvr.recipe", "?")), checkpoint=str(checkpoint))
    res.cpu_changes = dict(CPU_CHANGES)
    plan = _plan(cfg, res, seqs, max_len)
    temperature = float(arr.rollout.temperature)
    t0 = time.perf_counter()
    actor, ref = _build(cfg, checkpoint, plan)
    res.timings["init"] = time.perf_counter() - t0
    n = int(arr.rollout.n)
    batch = synthetic_batch(hf_tokenizer(str(checkpoint)), seqs, plan.p, plan.r, math.gcd(seqs, n), seed)
    before = _weights(actor)
    phase = "ref" if ref is not None else "old"
    try:
        if ref is not None:
            t = time.perf_counter()
            batch["ref_log_prob"] = _log_probs(ref, batch, temperature, entropy=False)
            res.timings["ref_log_prob"] = time.perf_counter() - t
        phase, t = "old", time.perf_counter()
        batch["old_log_probs"] = _log_probs(actor, batch, temperature, entropy=True)
        res.timings["old_log_prob"] = time.perf_counter() - t
        phase, t = "actor", time.perf_counter()
        a = arr.actor
        td = _td(
            batch,
            temperature=temperature,
            calculate_entropy=bool(a.get("calculate_entropy", False)) or float(a.entropy_coeff) != 0.0,
            global_batch_size=seqs,
            mini_batch_size=seqs,
            epochs=1,
            seed=int(a.get("data_loader_seed") or 0),
            dataloader_kwargs={"shuffle": False},
            compute_loss=True,
        )
        out = actor.train_mini_batch(td)
        res.timings["update"] = time.perf_counter() - t
    except AssertionError as e:
        raise _refusal(e, plan.keys[phase], plan.low, plan.P + plan.R) from e
    res.metrics = _reduce(tu.get(out, "metrics"))
    after = _weights(actor)
    res.weight_change = max(float((after[k] - before[k]).abs().max()) for k in before)
    if keep:
        res.worker, res.batch = actor, batch
    return res


def _weights(worker: Any) -> dict[str, torch.Tensor]:
    """The actor's full (unsharded) weights, detached copies."""
    out = {}
    for k, v in worker.engine.module.state_dict().items():
        v = v.full_tensor() if hasattr(v, "full_tensor") else v
        out[k] = v.detach().clone().float()
    return out


def weights(res: Rehearsal) -> dict[str, torch.Tensor]:
    """The kept actor's weights after the update (``rehearse(..., keep=True)``)."""
    if res.worker is None:
        raise ValueError("rehearse(..., keep=True) keeps the worker; this result has none")
    return _weights(res.worker)
