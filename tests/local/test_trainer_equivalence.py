"""One RL step of the local engine and of veRL's trainer path, from the same weights, prompts and samples.

Per recipe at its laptop profile (``scale=laptop_base``: 16 prompts x 8 responses, the recipe's
mini-batches, epochs, policy loss, clipping, aggregation, KL, AdamW and lr schedule; a tiny Qwen2 for
the base model and 24-token responses: sizes only), the samples are drawn once with the project's
sampler (:func:`core.sampler.generate`, which veRL's CPU rollout also serves) and scored once
(``algo.score_rollout``, a hashed coin-flip reward so groups vary), then fed to both:

- the local engine: ``Engine.learn`` (``recipes/local/trainer.py``: reference log-probs, advantage,
  the actor's mini-batch updates, the lr-schedule step) -- the step ``Engine.train_step`` runs after
  sampling;
- veRL's trainer path, in this process, as ``verl/trainer/ppo/v1/trainer_base.py`` ``_step_once``
  runs it after sampling: old log-probs recomputed by the actor (``_compute_old_log_prob``), reference
  log-probs by the reference worker, the advantage by ``compute_advantage_for_multi_trajectories``
  (``_compute_advantage``), and the actor's ``train_mini_batch`` with the extra info ``_update_actor``
  passes, on veRL's ``TrainingWorker`` + FSDP2 engine (``recipes.preflight.verl_cpu``: CPU platform,
  gloo, fp32, SDPA).

Two steps are taken, as a run takes its first and its eleventh: step A at the start of the lr warm-up
(lr 0: the weights stay, the AdamW moments fill), then both schedules are advanced to the end of the
warm-up and step B runs at the recipe's lr. Compared, with the tolerances below: the advantages,
the mean loss, gradient norm and KL loss over the step's updates, and every weight after step B.

Differences by design, each tested here:

1. **old log-probs**: veRL recomputes them with the training forward before the update; the local
   engine keeps the sampler's (captured at sampling, KV-cache forward). Equal up to
   :data:`ATOL_LOGPROB` on the same weights.
2. **the logged lr**: the local engine logs ``actor/lr`` as the lr its step used, then steps the
   schedule; veRL's worker steps the schedule after the step's last mini-batch and logs the lr it
   stepped to. Both schedules are veRL's ``get_constant_schedule_with_warmup`` stepped once per step,
   so veRL's logged lr at step k is the local engine's at step k + 1 (step A: 0 vs the warm-up's
   first increment).
3. **AdamW's kernel**: the local engine runs torch's fused CPU AdamW (``local.fast``), veRL's engine
   torch's per-parameter AdamW on FSDP2's DTensors: the same update up to float rounding, covered by
   :data:`ATOL_WEIGHTS`.

Not on this path, so not compared: how a step's batch is assembled (DAPO's dynamic sampling: the
local engine generates rounds of ``data.gen_batch_size`` prompts and trains on the first
``data.train_batch_size`` kept groups; veRL's V1 replay buffer fetches prompts one at a time, evicts
zero-variance groups and samples ``train_batch_size`` kept groups, keeping any surplus for a later
step, ``verl/trainer/ppo/v1/replay_buffer.py``), the order of rows in veRL's batch (its replay
buffer's; here both engines get the sampler's order, whole groups in a row), the rollout itself,
and the two recipes with a second trained or scoring model: ``orz_ppo`` (its critic) and ``opd``
(its teacher); their actor losses are compared on fixed tensors in ``tests/local/test_equivalence.py``.
``r1_zero`` runs in the fast tier; every recipe in the slow tier.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from core import model as models
from core.compose import compose, options
from core.data import Prompt, chat_ids
from core.sampler import generate
from recipes.local import algo
from recipes.local.trainer import Engine

#: Tolerances, fp32 on both sides. Largest differences measured here over the seven recipes (the test
#: prints each recipe's): old log-probs 9.5e-7 (every recipe); advantages 0; mean loss 3.7e-8 absolute,
#: 3.6e-5 relative (gspo's step B, a loss of -1.6e-4); gradient norm 3.1e-8 relative; KL loss 3.9e-11;
#: weights after step B 2.1e-7 (grpo: one update of 128 sequences at lr 1e-4, where AdamW's first
#: g / (|g| + eps) amplifies rounding), at most 7.5e-9 for the others (16, 8 or 4 updates), each after
#: a step that moved some weight by 1.0e-4 to 3.2e-4.
ATOL_LOGPROB = 1e-5
RTOL_LOSS, ATOL_LOSS = 1e-4, 1e-6
RTOL_GRAD = 1e-4
ATOL_WEIGHTS = 1e-6
#: recipes whose whole trainer step is the actor's (no critic, no teacher)
ACTOR_PATH = [r for r in options("recipe") if r not in ("opd", "orz_ppo")]
RESPONSE = 24
QUESTIONS = [
    (f"{a}+{b}+{(a * b) % 5 + 1}", str(a + b + (a * b) % 5 + 1)) for a in range(1, 5) for b in range(1, 5)
]


def coin(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **_: Any) -> dict:
    """A hashed coin flip (acc with probability ~0.3): a reward that varies within groups."""
    acc = int(hashlib.sha256(f"{solution_str}|{ground_truth}".encode()).hexdigest()[:8], 16) % 10 < 3
    return {"score": float(acc), "acc": acc, "pred": None, "format": 0.0}


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint) -> Path:
    return tiny_checkpoint((32, 2, 4, 2, 64, 256), "char", seed=5)


@pytest.fixture(scope="module", autouse=True)
def cpu_platform():
    """veRL's platform and the engine's device variable are put back after this module (the gloo group
    stays), so later tests in the process see veRL as before. The offload policy stays patched, as
    ``verl_cpu.patches`` records it; a module that put the pinned class back (while the record says
    patched, so it is never patched again) gets the patch's unpinned policy here."""
    from verl.plugin.platform import platform_manager  # veRL: only this module's tests switch platforms
    from verl.workers.engine.fsdp import transformer_impl  # as above

    from recipes.preflight.verl_cpu import install_cpu_platform  # veRL's engine: this module only
    from verl_cpu import patches  # as above

    policy = transformer_impl.CPUOffloadPolicy
    if "unpinned-offload" in patches.applied() and isinstance(policy, type):
        transformer_impl.CPUOffloadPolicy = lambda pin_memory=True: policy(pin_memory=False)
    mp = pytest.MonkeyPatch()
    mp.setattr(platform_manager, "_current_platform", platform_manager._current_platform)
    mp.setenv("VERL_ENGINE_DEVICE", "cuda")  # what install_cpu_platform sets; the old value comes back
    yield
    mp.undo()
    install_cpu_platform.cache_clear()


def samples(cfg: Any, ckpt: Path) -> dict[str, Any]:
    """The step's samples, drawn and scored once: prompts, rollout, scores, extra keys, texts, uids."""
    model, tok = models.load(ckpt)
    n = int(cfg.actor_rollout_ref.rollout.n)
    prompts = [
        Prompt(chat_ids(tok, [{"role": "user", "content": q}]), q, "arithmetic", g, {}) for q, g in QUESTIONS
    ]
    with torch.no_grad():
        ro = generate(
            model,
            [p.ids for p in prompts],
            n,
            RESPONSE,
            tok.eos_token_id,
            tok.pad_token_id,
            temperature=float(cfg.actor_rollout_ref.rollout.temperature),
            generator=torch.Generator().manual_seed(0),
        )
    scores, extra, texts = algo.score_rollout(cfg, coin, tok, prompts, ro, n)
    uids = [f"1-{i // n}" for i in range(len(texts))]  # the local engine's group ids at step 1
    return {"prompts": prompts, "ro": ro, "scores": scores, "extra": extra, "texts": texts, "uids": uids}


def local_steps(cfg: Any, ckpt: Path, s: dict[str, Any], warm: int) -> tuple[list[dict], dict, torch.Tensor]:
    """Steps A and B of ``Engine.learn``; their metrics, the weights after B and the advantages."""
    model, tok = models.load(ckpt)
    eng = Engine(cfg, model, tok, coin, train=s["prompts"], val=[])
    batch = algo.make_batch(s["ro"], s["scores"], s["uids"])
    adv = algo.compute_advantages(cfg, batch)[0].batch["advantages"]
    out = []
    for target in (0, warm):
        while eng.sched.last_epoch < target:
            eng.sched.step()
        eng.step = 1  # the same group ids (uids) in both steps
        m, _ = eng.learn(
            s["prompts"], s["ro"], s["scores"].clone(), copy.deepcopy(s["extra"]), s["texts"], {}
        )
        out.append(m)
    return out, {k: v.detach().float().clone() for k, v in model.state_dict().items()}, adv


def verl_workers(cfg: Any, ckpt: Path) -> tuple[Any, Any]:
    """The actor worker (its loss set; the recipe's optimizer and lr schedule) and the reference worker
    (or None), built as ``ActorRolloutRefWorker.init_model`` builds them on this CPU."""
    from verl.workers.utils.losses import ppo_loss  # veRL's engine: this module only

    from recipes.preflight.verl_cpu import cpu_section, install_cpu_platform, model_config, worker  # as above
    from recipes.preflight.verl_engine import Rehearsal, _build, _plan  # as above

    install_cpu_platform()
    arr = cfg.actor_rollout_ref
    sec = cpu_section(
        arr.actor
    )  # the rehearsal's CPU section drops the warm-up: restored (a step here is a run's)
    sec.optim.lr_warmup_steps = arr.actor.optim.lr_warmup_steps
    sec.optim.lr_warmup_steps_ratio = arr.actor.optim.lr_warmup_steps_ratio
    sec.optim.total_training_steps = int(cfg.trainer.total_training_steps)  # as the V1 trainer sets it
    actor, conf = worker(
        sec,
        model_config(cfg, ckpt),
        bool(arr.actor.use_dynamic_bsz),
        arr.rollout.log_prob_max_token_len_per_gpu,
        arr.rollout.log_prob_micro_batch_size_per_gpu,
        arr.actor.ppo_max_token_len_per_gpu,
        arr.actor.ppo_micro_batch_size_per_gpu,
    )
    actor.set_loss_fn(functools.partial(ppo_loss, config=conf))
    plan = _plan(cfg, Rehearsal(str(cfg.rlvr.recipe), str(ckpt)), 8, 10**6)
    return actor, (_build(cfg, ckpt, plan)[1] if plan.need_ref else None)


def verl_steps(cfg: Any, ckpt: Path, s: dict[str, Any], warm: int) -> dict[str, Any]:
    """Steps A and B on veRL's path (see the module docstring); metrics per step, weights, log-probs."""
    from verl import DataProto  # veRL: this module only
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # as above
    from verl.utils import tensordict_utils as tu  # as above

    from recipes.preflight.verl_engine import _log_probs, _td, _weights  # as above

    actor, ref = verl_workers(cfg, ckpt)
    arr, ro, n = cfg.actor_rollout_ref, s["ro"], int(cfg.actor_rollout_ref.rollout.n)
    temp = float(arr.rollout.temperature)
    att = torch.cat([ro.prompt_mask, ro.response_mask.long()], 1)
    b = {
        "prompts": ro.prompts,
        "responses": ro.responses,
        "input_ids": torch.cat([ro.prompts, ro.responses], 1),
        "attention_mask": att,
        "position_ids": (att.cumsum(-1) - 1).clamp(min=0),
        "response_mask": ro.response_mask.long(),
    }
    if ref is not None:
        b["ref_log_prob"] = _log_probs(ref, b, temp, entropy=False)
    b["old_log_probs"] = _log_probs(actor, b, temp, entropy=True)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": s["scores"], "response_mask": ro.response_mask.float()},
        non_tensors={"uid": np.asarray(s["uids"], dtype=object)},
    )
    keys = [
        f"{u}_{i % n}_0" for i, u in enumerate(s["uids"])
    ]  # {uid}_{session}_{index}, one session per sample
    a = cfg.algorithm
    data = compute_advantage_for_multi_trajectories(
        data, keys, a.adv_estimator, a.gamma, a.lam, n, bool(a.norm_adv_by_std_in_grpo), a
    )
    b["advantages"] = data.batch["advantages"]
    mb = int(arr.actor.ppo_mini_batch_size) * n
    steps = []
    for target in (0, warm):
        while actor.engine.lr_scheduler.last_epoch < target:
            actor.engine.lr_scheduler.step()
        extra = {
            "temperature": temp,
            "calculate_entropy": bool(arr.actor.calculate_entropy) or float(arr.actor.entropy_coeff) != 0.0,
            "global_batch_size": mb,
            "mini_batch_size": mb,
            "epochs": int(arr.actor.ppo_epochs),
            "seed": int(arr.actor.data_loader_seed),
            "dataloader_kwargs": {"shuffle": bool(arr.actor.shuffle)},
            "compute_loss": True,
        }
        steps.append(tu.get(actor.train_mini_batch(_td(b, **extra)), "metrics"))
    return {"steps": steps, "weights": _weights(actor), "old": b["old_log_probs"], "adv": b["advantages"]}


def _mean(xs: Any) -> float:
    return float(np.mean([float(x) for x in xs]))


def compare(recipe: str, ckpt: Path) -> dict[str, float]:
    """Both engines' two steps on one recipe; the largest difference of each compared quantity."""
    cfg = compose([f"recipe={recipe}", "scale=laptop_base", f"actor_rollout_ref.model.path={ckpt}"])
    warm = int(cfg.actor_rollout_ref.actor.optim.lr_warmup_steps)
    s = samples(cfg, ckpt)
    local, w_local, adv_local = local_steps(cfg, ckpt, s, warm)
    verl = verl_steps(cfg, ckpt, s, warm)
    mask = s["ro"].response_mask.bool()
    coef = float(cfg.actor_rollout_ref.actor.kl_loss_coef) if cfg.actor_rollout_ref.actor.use_kl_loss else 0.0
    out = {
        "old_log_prob": float((verl["old"] - s["ro"].old_log_probs)[mask].abs().max()),
        "advantage": float((verl["adv"] - adv_local).abs().max()),
        "weights": max(float((w_local[k] - v).abs().max()) for k, v in verl["weights"].items()),
        "moved": max(float((w_local[k] - v).abs().max()) for k, v in _start(ckpt).items()),
    }
    for step, (lm, vm) in enumerate(zip(local, verl["steps"], strict=True)):  # (local, veRL) pairs
        out[f"loss/{step}"] = (lm["actor/pg_loss"] + coef * lm.get("actor/kl_loss", 0.0), _mean(vm["loss"]))
        out[f"grad_norm/{step}"] = (lm["actor/grad_norm"], _mean(vm["grad_norm"]))
        out[f"kl/{step}"] = (lm.get("actor/kl_loss", 0.0), _mean(vm["kl_loss"]) if coef else 0.0)
        out[f"lr/{step}"] = (lm["actor/lr"], float(vm["lr"][0]))
    return out


@functools.cache
def _start(ckpt: Path) -> dict[str, torch.Tensor]:
    return {k: v.detach().float().clone() for k, v in models.load(ckpt)[0].state_dict().items()}


def check(recipe: str, d: dict[str, Any], warm: int, lr: float) -> None:
    """The tolerances and the by-design differences of the module docstring."""
    print(recipe, d)
    assert d["old_log_prob"] < ATOL_LOGPROB  # by design 1: recomputed vs the sampler's
    assert d["advantage"] == 0.0
    assert d["moved"] > 100 * ATOL_WEIGHTS, "step B moves the weights visibly"
    assert d["weights"] < ATOL_WEIGHTS  # by design 3: AdamW's kernel
    for step in (0, 1):
        local, verl = d[f"loss/{step}"]
        assert verl == pytest.approx(local, rel=RTOL_LOSS, abs=ATOL_LOSS)
        local, verl = d[f"grad_norm/{step}"]
        assert verl == pytest.approx(local, rel=RTOL_GRAD) and local > 0
        local, verl = d[f"kl/{step}"]
        assert verl == pytest.approx(local, rel=RTOL_LOSS, abs=ATOL_LOSS)
    # by design 2: the local engine logs the lr its step used, veRL the lr it stepped to
    assert d["lr/0"] == (0.0, pytest.approx(lr / warm))
    assert d["lr/1"] == (pytest.approx(lr), pytest.approx(lr))


def _run(recipe: str, ckpt: Path) -> None:
    cfg = compose([f"recipe={recipe}", "scale=laptop_base"])
    o = cfg.actor_rollout_ref.actor.optim
    check(recipe, compare(recipe, ckpt), int(o.lr_warmup_steps), float(o.lr))


def test_r1_zero_step_equals_verl_trainer_step(ckpt: Path, hydra_ctx) -> None:
    _run("r1_zero", ckpt)


@pytest.mark.slow
@pytest.mark.parametrize("recipe", [r for r in ACTOR_PATH if r != "r1_zero"])
def test_recipe_step_equals_verl_trainer_step(recipe: str, ckpt: Path, hydra_ctx) -> None:
    _run(recipe, ckpt)
