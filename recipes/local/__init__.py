"""The local CPU engine (``engine=local``): any recipe end to end at laptop scale with veRL's math.

Entry points (called by ``recipes/run.py``):

- :func:`check_supported` -- refuse, by full key, any config value the engine does not implement.
- :func:`run_local` -- set up (data files, tiny model + cold-start SFT, both cached), run the RL
  loop of :mod:`recipes.local.trainer` with held-out evaluations, checkpoints and resume, and
  return a summary (start/end held-out accuracy, steps, minutes, run dir).

Advantages, policy losses, loss aggregation, KL estimators, the lr schedule, training and
validation metrics and the metrics logger are veRL's own functions; this package only adds the
single-process sampling and update loop around them. See ``support.py`` for what is refused.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from recipes.local.support import check_supported

__all__ = ["check_supported", "run_local"]


def _say(msg: str) -> None:
    print(msg, flush=True)


def run_local(cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    """Run ``cfg`` with the local engine in ``run_dir`` (resuming from its last checkpoint)."""
    t_start, cpu_start = time.time(), time.process_time()
    check_supported(cfg)
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(int(OmegaConf.select(cfg, "local.threads", default=2)))
    seed = int(cfg.rlvr.seed)
    random.seed(seed)
    torch.manual_seed(seed)

    from verl.trainer.ppo.reward import get_custom_reward_fn

    from recipes.local import model as tiny
    from recipes.local.data import ensure_task_files, load_prompts
    from recipes.local.sft import ensure_model
    from recipes.local.track import Progress, dump_generations, make_tracker
    from recipes.local.trainer import Engine

    reward_fn = get_custom_reward_fn(cfg)
    if reward_fn is None:
        from verl.utils.reward_score import default_compute_score as reward_fn
    ensure_task_files(cfg)
    t0 = time.time()
    path = ensure_model(cfg, reward_fn, _say)
    t_setup = time.time() - t0
    model, tok = tiny.load(path)
    max_p = int(cfg.data.max_prompt_length)
    train = load_prompts(cfg.data.train_files, tok, max_p)
    val = load_prompts(
        cfg.data.val_files, tok, max_p, limit=int(OmegaConf.select(cfg, "local.eval_samples", default=256))
    )
    eng = Engine(cfg, model, tok, reward_fn, train, val)
    ckpt_dir = run_dir / "checkpoints"
    resumed = str(OmegaConf.select(cfg, "trainer.resume_mode", default="auto")) != "disable" and eng.load(
        ckpt_dir
    )
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
    tracker = make_tracker(cfg, run_dir, eng.step if resumed else 0)
    if resumed:
        _say(f"[local] resumed from {ckpt_dir} at step {eng.step}/{total}")
    _say(
        f"[local] model {path} ({tiny.num_params(model) / 1e6:.2f}M params), {len(train)} train / {len(val)} "
        f"held-out prompts, {total} steps, run dir {run_dir}"
    )

    def run_eval() -> float:
        m, d = eng.evaluate()
        tracker.log(m, step=eng.step)
        dump_generations(
            run_dir / "validation", eng.step, d["inputs"], d["outputs"], d["gts"], d["scores"], d["extra"]
        )
        return m["rlvr/val_acc"]

    if "start_acc" not in state:
        state["start_acc"] = run_eval()
        state["start_step"] = eng.step
        state_file.write_text(json.dumps(state))
    _say(
        f"[local] held-out accuracy at step {state['start_step']}: {state['start_acc']:.3f} ({len(val)} samples)"
    )
    test_freq = int(OmegaConf.select(cfg, "trainer.test_freq", default=-1) or -1)
    save_freq = int(OmegaConf.select(cfg, "trainer.save_freq", default=-1) or -1)
    bar = Progress(total, eng.step, bool(OmegaConf.select(cfg, "local.progress", default=True)))
    end_acc = state["start_acc"] if eng.step >= total else None
    t_rl = time.time()
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
        bar.update(eng.step, metrics["critic/score/mean"])
        last = eng.step >= total
        if last or (test_freq > 0 and eng.step % test_freq == 0):
            end_acc = run_eval()
        if last or (save_freq > 0 and eng.step % save_freq == 0):
            eng.save(ckpt_dir)
    bar.close()
    if end_acc is None:
        end_acc = run_eval()
    tracker.finish()
    summary = {
        "recipe": str(cfg.rlvr.recipe),
        "seed": seed,
        "start_acc": round(float(state["start_acc"]), 4),
        "end_acc": round(float(end_acc), 4),
        "steps": eng.step,
        "eval_samples": len(val),
        "minutes": round((time.time() - t_start) / 60, 2),
        "rl_minutes": round((time.time() - t_rl) / 60, 2),
        "setup_minutes": round(t_setup / 60, 2),
        "cpu_minutes": round((time.process_time() - cpu_start) / 60, 2),
        "run_dir": str(run_dir),
        "model": str(path),
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _say(
        f"[local] {summary['recipe']}: held-out acc {summary['start_acc']:.3f} -> {summary['end_acc']:.3f} "
        f"in {summary['steps']} steps, {summary['minutes']:.1f} min, run dir {run_dir}"
    )
    return summary
