"""The local CPU engine (``engine=local``): any recipe end to end at laptop scale with veRL's math.

Entry point (called by ``recipes/run.py`` after :func:`recipes.validate.validate`, which also
applies the engine's refusals, :mod:`recipes.validate.local`):

- :func:`run_local` -- set up (data files, the model), run the RL loop of
  :mod:`recipes.local.trainer` with held-out evaluations, checkpoints and resume, and return a
  summary (start/end held-out accuracy, steps, minutes, run dir).
- :func:`given_checkpoint` -- where the model comes from. ``actor_rollout_ref.model.path`` naming
  a checkpoint directory on disk (``config.json``; any ``AutoModelForCausalLM`` architecture) that
  the cold start did not build is **used as is**: no cold start, its own tokenizer (veRL's
  ``hf_tokenizer``; ``actor_rollout_ref.model.tokenizer_path`` / ``custom_chat_template`` honoured)
  and its own chat template applied to the prompt messages with the generation prompt and
  ``data.apply_chat_template_kwargs``, as veRL's agent loop does. Otherwise the path is the laptop
  model's cache: a Qwen2 + character tokenizer built and cold-started on first use
  (:mod:`recipes.local.coldstart`), or, when ``local.pretrain`` is set (``scale=laptop_base``), a
  base model pretrained on a designed corpus (:mod:`recipes.local.pretrain`). On-policy distillation's
  teacher is likewise a given checkpoint or the laptop teacher built on first use (:mod:`recipes.local.teacher`). ``trainer.total_training_steps=2`` on a given checkpoint is the
  quickest check that a recipe, a reward function and a chat template work together on CPU.

Advantages, policy losses, loss aggregation, KL estimators, the lr schedule, training and
validation metrics and the metrics logger are veRL's own functions; this package only adds the
single-process sampling and update loop around them. It does not validate the config itself.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn

from core import model as models
from recipes.local.coldstart import BUILDER, ensure_model
from recipes.local.data import ensure_task_files, load_split
from recipes.local.pretrain import BUILDER as BASE_BUILDER
from recipes.local.pretrain import ensure_base_model
from recipes.local.teacher import ensure_teacher
from recipes.local.track import dump_generations, make_tracker, progress
from recipes.local.trainer import Engine
from recipes.schema import local_config

__all__ = ["build_engine", "ensure_inputs", "given_checkpoint", "run_local"]


def _say(msg: str) -> None:
    print(msg, flush=True)


def given_checkpoint(cfg: DictConfig) -> Path | None:
    """``actor_rollout_ref.model.path`` if it is a checkpoint to use as is, else None (the cold start's).

    A directory with ``config.json`` is used as is unless its ``rlvr_meta.json`` records a build by
    the builder this config uses (the cold start's, or the base model's when ``local.pretrain`` is
    set): that is the builder's cache, rebuilt when ``local.*`` changes. A model another builder made
    (the base model given to a cold-start scale, or the reverse) is used as is, never rebuilt over.
    """
    path = Path(str(cfg.actor_rollout_ref.model.path)).expanduser()
    if not (path / "config.json").is_file():
        return None
    own = BASE_BUILDER if local_config(cfg).pretrain is not None else BUILDER
    return None if models.builder_of(path) == own else path


def _load_given(cfg: DictConfig, path: Path) -> tuple[torch.nn.Module, Any]:
    """The checkpoint and its tokenizer as veRL would build them; refuses a tokenizer without a chat template."""
    m = cfg.actor_rollout_ref.model
    model, tok = models.load(
        path, tokenizer_path=m.get("tokenizer_path"), chat_template=m.get("custom_chat_template")
    )
    if not getattr(tok, "chat_template", None):
        raise ValueError(
            f"[actor_rollout_ref.model.path] the tokenizer at {path} has no chat template, and veRL's agent "
            "loop applies one to every prompt (fix: save one with the tokenizer, or set "
            "actor_rollout_ref.model.custom_chat_template)"
        )
    stops = getattr(model.generation_config, "eos_token_id", None)
    stops = [stops] if isinstance(stops, int) else list(stops or [])
    if any(s != tok.eos_token_id for s in stops):
        _say(
            f"[local] note: generation_config.json stops at token ids {stops}; the local engine stops only at "
            f"the tokenizer's EOS {tok.eos_token!r} (id {tok.eos_token_id})"
        )
    _say(
        f"[local] checkpoint {path} used as is (no cold start): {type(model).__name__}, "
        f"{models.num_params(model) / 1e6:.2f}M params, its tokenizer ({len(tok)} tokens, EOS {tok.eos_token!r}, "
        f"pad {tok.pad_token!r}) and chat template"
    )
    return model, tok


def _reward_fn(cfg: DictConfig) -> Any:
    reward_fn = get_custom_reward_fn(cfg)
    if reward_fn is None:
        from verl.utils.reward_score import default_compute_score as reward_fn  # only without a custom one
    return reward_fn


def ensure_inputs(cfg: DictConfig, say: Any = _say) -> Path:
    """What a laptop run reads, built on first use into the run cache: the task files, the model (a
    given checkpoint is used as is; else the base model when ``local.pretrain`` is set, the cold
    start otherwise) and the distillation teacher. Returns the model's directory. Shared by the local
    engine and veRL's trainer on a CPU (:mod:`recipes.launch_cpu`)."""
    reward_fn = _reward_fn(cfg)
    ensure_task_files(cfg)
    path = given_checkpoint(cfg)
    if path is None:
        # the pretrained base model (model=tiny_base sets local.pretrain) or the SFT cold start
        build = ensure_base_model if local_config(cfg).pretrain is not None else ensure_model
        path = build(cfg, reward_fn, say)
    if OmegaConf.select(cfg, "distillation.enabled", default=False):
        ensure_teacher(cfg, say)  # the laptop teacher, built on first use (recipes.local.teacher)
    return path


def build_engine(cfg: DictConfig) -> tuple[Engine, Path, float]:
    """Data files, the model (a given checkpoint or the cold start) and the engine; returns (engine, model
    path, setup seconds)."""
    local = local_config(cfg)
    torch.set_num_threads(local.threads)
    reward_fn = _reward_fn(cfg)
    ensure_task_files(cfg)
    t0 = time.time()
    given = given_checkpoint(cfg)
    path = ensure_inputs(cfg)
    model, tok = models.load(path) if given is None else _load_given(cfg, path)
    t_setup = time.time() - t0
    train = load_split(cfg, "train_files", tok)
    val = load_split(cfg, "val_files", tok, limit=local.eval_samples)
    # set once everything above is built: a cold cache (task files, a base model, cold start or
    # teacher built in this process, each seeding and threading itself) leaves the run where a warm
    # one does
    torch.set_num_threads(local.threads)
    random.seed(int(cfg.rlvr.seed))
    torch.manual_seed(int(cfg.rlvr.seed))
    return Engine(cfg, model, tok, reward_fn, train, val), path, t_setup


def run_local(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Run ``cfg`` with the local engine in ``run_dir`` (resuming from its last checkpoint)."""
    t_start, cpu_start = time.time(), time.process_time()
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    eng, path, t_setup = build_engine(cfg)
    ckpt_dir = run_dir / "checkpoints"
    resumed = str(cfg.trainer.resume_mode) != "disable" and eng.load(ckpt_dir)
    total = eng.total_steps()
    done = run_dir / "summary.json"
    if resumed and eng.step >= total and done.is_file():
        summary = json.loads(done.read_text())
        _say(
            f"[local] {run_dir} already finished ({summary['start_acc']:.3f} -> {summary['end_acc']:.3f} in "
            f"{summary['steps']} steps): nothing to do (fix for a fresh run: another run_dir, or "
            "trainer.resume_mode=disable; more steps: raise trainer.total_training_steps)"
        )
        return summary
    state_file = run_dir / "local_state.json"
    state = json.loads(state_file.read_text()) if resumed and state_file.is_file() else {}
    key = models.model_key(path)
    changed = models.weights_changed(state["model_key"], path) if "model_key" in state else None
    if changed:
        raise ValueError(
            f"[actor_rollout_ref.model.path] {path} is not the model {run_dir} started from (weights "
            f"sha256 {changed[0]} then, {changed[1]} now: it was rebuilt since). "
            "Fix: a fresh run (another run_dir, or trainer.resume_mode=disable); the run's own weights are "
            f"in {ckpt_dir}/global_step_<n>/huggingface"
        )
    tracker = make_tracker(cfg, run_dir, eng.step if resumed else 0)
    if resumed:
        _say(f"[local] resumed from {ckpt_dir} at step {eng.step}/{total}")
    _say(
        f"[local] model {path} ({models.num_params(eng.model) / 1e6:.2f}M params), {len(eng.stream.prompts)} "
        f"train / {len(eng.val)} held-out prompts, {total} steps, run dir {run_dir}"
    )

    def run_eval() -> float:
        t0 = time.time()
        m, d = eng.evaluate()
        m["timing_s/testing"] = time.time() - t0  # veRL's name for a validation's seconds
        tracker.log(m, step=eng.step)
        dump_generations(
            run_dir / "validation", eng.step, d["inputs"], d["outputs"], d["gts"], d["scores"], d["extra"]
        )
        return m["rlvr/val_acc"]

    if "start_acc" not in state:
        state["start_acc"] = run_eval()
        state["start_step"] = eng.step
        state["model_key"] = key
        state_file.write_text(json.dumps(state))
    _say(
        f"[local] held-out accuracy at step {state['start_step']}: {state['start_acc']:.3f} ({len(eng.val)} samples)"
    )
    t_rl = time.time()
    end_acc = _train(cfg, eng, run_dir, tracker, run_eval, state["start_acc"])
    tracker.finish()
    summary = {
        "recipe": str(cfg.rlvr.recipe),
        "seed": int(cfg.rlvr.seed),
        "start_acc": round(float(state["start_acc"]), 4),
        "end_acc": round(float(end_acc), 4),
        "steps": eng.step,
        "eval_samples": len(eng.val),
        "minutes": round((time.time() - t_start) / 60, 2),
        "rl_minutes": round((time.time() - t_rl) / 60, 2),
        "setup_minutes": round(t_setup / 60, 2),
        "cpu_minutes": round((time.process_time() - cpu_start) / 60, 2),
        "run_dir": str(run_dir),
        "model": str(path),
        # what the run started from (build key and weights sha256; None: a model not built here)
        "model_key": state.get("model_key", key),
    }
    done.write_text(json.dumps(summary, indent=2) + "\n")
    _say(
        f"[local] {summary['recipe']}: held-out acc {summary['start_acc']:.3f} -> {summary['end_acc']:.3f} "
        f"in {summary['steps']} steps, {summary['minutes']:.1f} min, run dir {run_dir}"
    )
    return summary


def _train(
    cfg: DictConfig, eng: Engine, run_dir: Path, tracker: Any, run_eval: Any, start_acc: float
) -> float:
    """The RL steps up to the total, with evaluations and checkpoints; returns the last accuracy."""
    total = eng.total_steps()
    test_freq = int(cfg.trainer.test_freq or -1)
    save_freq = int(cfg.trainer.save_freq or -1)
    bar = progress(total, eng.step, bool(cfg.local.progress))
    recent: list[float] = []
    end_acc = start_acc if eng.step >= total else None
    while eng.step < total:
        metrics, dump = eng.train_step()
        tracker.log(metrics, step=eng.step)
        dump_generations(
            run_dir / "rollouts",
            eng.step,
            dump["inputs"],
            dump["outputs"],
            dump["gts"],
            dump["scores"],
            dump["extra"],
        )
        recent = (recent + [metrics["critic/score/mean"]])[-10:]
        bar.set_postfix(reward=f"{sum(recent) / len(recent):.3f}", refresh=False)
        bar.update(1)
        last = eng.step >= total
        if last or (test_freq > 0 and eng.step % test_freq == 0):
            end_acc = run_eval()
        if last or (save_freq > 0 and eng.step % save_freq == 0):
            eng.save(run_dir / "checkpoints")
    bar.close()
    return run_eval() if end_acc is None else end_acc
