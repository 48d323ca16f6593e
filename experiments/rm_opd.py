"""On-policy distillation vs outcome-reward RL vs SFT on teacher samples, at equal student compute.

Seed 004 §8: a dense, token-level signal from a *fixed* teacher (which the student cannot game)
learns faster than a sequence-level outcome reward, which stalls where the student rarely
succeeds. Laptop design (``conf/command/rm_study.yaml: opd``):

- **teacher**: the laptop policy after ``teacher.steps`` steps of the laptop GRPO recipe, exported
  as an HF checkpoint (and installed where ``recipe=opd`` at laptop scale looks for it);
- **student**: a smaller Qwen2 (``student.model``) whose cold start stops at a low sampled pass
  rate (``student.min_pass``), one per seed -- the regime where outcome-only RL has few
  non-zero-variance groups;
- **arms**, from the same student checkpoint per seed, same prompts per step, same number of
  optimizer updates on the same number of sequences: ``opd`` (``recipe=opd``: veRL's k1 loss as a
  per-token advantage, no task reward), ``rl`` (the same recipe with ``distillation.enabled=false``:
  GRPO on the verifier's reward), ``sft`` (the student trained by the one SFT loop on the
  teacher's samples for the same prompts; prompts and samples per step, optimizer updates per step
  and response length are read from the RL arms' composed config, :func:`rl_shape`, so they match);
- **metric**: held-out accuracy (verifier, 256 problems, T=1) along the run, per seed.

Each (arm, seed) is recorded in ``results/opd/runs/<arm>-s<seed>.json`` (``rlvr/val_acc`` curve).
Not covered: a teacher of another architecture family, top-k distillation losses.
"""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from analysis.results_io import run_record
from core import results
from core.results import downsample
from experiments.rm_common import data_files, log, policy, sh, workdir
from recipes.launch_local import local_command


def student_overrides(cfg: DictConfig, seed: int) -> list[str]:
    """The overrides that make the laptop run's model the seed's student (built on first use)."""
    s = cfg.opd.student
    path = workdir(cfg) / "opd" / f"student-s{seed}"
    model = [f"local.model.{k}={v}" for k, v in OmegaConf.to_container(s.model, resolve=True).items()]
    return [
        f"actor_rollout_ref.model.path={path}",
        *model,
        f"local.sft.min_pass={s.min_pass}",
        f"rlvr.seed={seed}",
    ]


def teacher(cfg: DictConfig) -> Path:
    """The teacher: the laptop policy after the laptop GRPO recipe, as an HF checkpoint
    (:func:`recipes.local.teacher.train`, the engine's own teacher build, with this study's overrides)."""
    from recipes.local.teacher import train  # deferred: the study's CLI starts without the engine

    o = cfg.opd.teacher
    work = workdir(cfg) / "opd"
    out = work / "teacher"
    if not (out / "config.json").is_file():
        pol = policy(cfg)
        log("opd: training the teacher")
        extra = ["trainer.test_freq=25", *cfg.opd.overrides]
        train(pol, out, "grpo", int(o.steps), work / "teacher-rl", extra, logfile=work / "teacher-rl.log")
    install = Path(str(cfg.opd.install_path)).expanduser()
    shutil.copytree(out, install, dirs_exist_ok=True)
    return out


def build_student(cfg: DictConfig, seed: int) -> Path:
    """The seed's student cold start (``recipes.local.coldstart``, cached by its build settings)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn  # veRL: ~10 s, only building needs it

    from recipes.compose import compose  # deferred: the study's CLI starts without the engine
    from recipes.local.coldstart import (
        ensure_model,
    )  # deferred: the engine loads only when a student is built

    c = compose(
        [
            "recipe=grpo",
            "scale=laptop",
            *[f"++{o}" if o.startswith("local.") else o for o in student_overrides(cfg, seed)],
        ]
    )
    return ensure_model(c, get_custom_reward_fn(c), log)


def rl_arm(cfg: DictConfig, arm: str, seed: int, teacher_dir: Path) -> Path:
    """``opd`` or ``rl`` for one seed through ``recipes.run`` (reused when finished)."""
    run_dir = workdir(cfg) / "opd" / f"{arm}-s{seed}"
    if (run_dir / "summary.json").is_file():
        return run_dir
    extra = [] if arm == "opd" else ["distillation.enabled=false"]
    cmd = local_command("opd", run_dir)
    cmd += [
        f"distillation.teacher_models.teacher_model.model_path={teacher_dir}",
        *student_overrides(cfg, seed),
    ]
    cmd += [f"trainer.total_training_steps={cfg.opd.steps}", f"trainer.test_freq={cfg.opd.test_freq}"]
    cmd += [f"trainer.save_freq={cfg.opd.steps}", *extra, *cfg.opd.overrides]
    log(f"opd: {arm} seed {seed}")
    sh(cmd, run_dir.parent / f"{arm}-s{seed}.log")
    return run_dir


def rl_shape(cfg: DictConfig) -> dict[str, int]:
    """Per step of the RL arms (their composed config): prompts, samples per prompt, optimizer
    updates, and the response length -- what the SFT arm matches."""
    from recipes.compose import compose  # deferred: the study's CLI starts without the engine

    keep = [o for o in cfg.opd.overrides if not str(o).startswith(("local.", "trainer."))]
    c = compose(["recipe=opd", "scale=laptop", *keep])
    a, prompts = c.actor_rollout_ref.actor, int(c.data.train_batch_size)
    updates = int(a.ppo_epochs) * max(1, prompts // int(a.ppo_mini_batch_size))
    n = int(c.actor_rollout_ref.rollout.n)
    return {"prompts": prompts, "n": n, "updates": updates, "max_tokens": int(c.data.max_response_length)}


def sft_arm(cfg: DictConfig, seed: int, teacher_dir: Path, student: Path) -> Path:
    """SFT of the seed's student on the teacher's samples for the prompts the RL arms see."""
    from core import model as models  # deferred with the SFT arm's other imports (engine, sampler)
    from core.data import load_prompts  # deferred with the SFT arm
    from core.sampling import LocalSampler, Settings, pass_rates  # deferred with the SFT arm
    from recipes.local.data import PromptStream  # deferred with the SFT arm
    from recipes.sft import sft_loop  # deferred with the SFT arm
    from rewards import compute_score  # deferred with the SFT arm

    out = workdir(cfg) / "opd" / f"sft-s{seed}"
    if (out / "summary.json").is_file():
        return out
    o, t0, c0 = cfg.opd, time.time(), time.process_time()
    torch.set_num_threads(1)
    train, val = data_files(cfg)
    model, tok = models.load(student)
    shape = rl_shape(cfg)
    steps, per_step, n, max_tokens = int(o.steps), shape["prompts"], shape["n"], shape["max_tokens"]
    prompts = PromptStream(load_prompts(str(train), tok, 32), seed).take(steps * per_step)
    t_samp = LocalSampler(teacher_dir, Settings(seed=seed))
    comps = t_samp.generate([p.ids for p in prompts], n, max_tokens)
    data = [(prompts[i // n].ids, c.ids + ([tok.eos_token_id] if c.eos else [])) for i, c in enumerate(comps)]
    held = load_prompts(str(val), tok, 32, limit=int(o.eval_samples))
    ev = LocalSampler.of(model, tok, Settings(), torch.Generator().manual_seed(seed + 10_007))
    updates_per_step = shape["updates"]

    def evaluate(update: int) -> float:
        return sum(pass_rates(ev, held, compute_score, max_tokens)) / len(held)

    start = evaluate(0)
    res = sft_loop(
        model,
        tok.pad_token_id,
        data,
        seed=seed,
        lr=float(o.sft.lr),
        betas=tuple(o.sft.betas),
        warmup_steps=int(o.sft.warmup_steps),
        batch_size=per_step * n // updates_per_step,
        max_steps=steps * updates_per_step,
        eval_every=int(o.test_freq) * updates_per_step,
        min_pass=None,
        evaluate=evaluate,
        log=log,
        tag=f"[opd] sft seed {seed}",
    )
    curve = [[0, start]] + [[int(h[0]) // updates_per_step, float(h[2])] for h in res.history]
    summary = {
        "recipe": "sft-on-teacher-samples",
        "seed": seed,
        "start_acc": start,
        "end_acc": curve[-1][1],
        "steps": steps,
        "updates": res.steps,
        "curve": curve,
        "teacher_samples": len(data),
        "shape": shape,
        "minutes": (time.time() - t0) / 60,
        "cpu_minutes": (time.process_time() - c0) / 60,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return out


def record(run_dir: Path, arm: str, seed: int) -> dict[str, Any]:
    """The results record of one arm: the held-out accuracy curve (and the RL arms' run record)."""
    if arm == "sft":
        s = json.loads((run_dir / "summary.json").read_text())
        steps, vals = [c[0] for c in s["curve"]], [c[1] for c in s["curve"]]
        return {
            "label": arm,
            "seed": seed,
            "summary": s,
            "curves": {"rlvr/val_acc": downsample(steps, vals)},
            "wall_s": s["minutes"] * 60,
            "cpu_s": s["cpu_minutes"] * 60,
            "metrics": {},
        }
    rec = run_record(run_dir, curves=["rlvr/gold_acc", "distillation/loss", "rlvr/zero_variance_group_frac"])
    rec["label"] = arm
    return rec


def opd(cfg: DictConfig) -> dict[str, Any]:
    """Teacher, students, and every (arm, seed), recorded in ``results/opd/runs/``."""
    t = teacher(cfg)
    seeds = [int(s) for s in cfg.opd.seeds]
    students = {s: build_student(cfg, s) for s in seeds}
    jobs = [(arm, s) for s in seeds for arm in cfg.opd.arms]

    def go(job: tuple[str, int]) -> Path:
        arm, s = job
        return sft_arm(cfg, s, t, students[s]) if arm == "sft" else rl_arm(cfg, arm, s, t)

    with ThreadPoolExecutor(int(cfg.jobs)) as ex:
        dirs = list(ex.map(go, jobs))
    teacher_run = run_record(workdir(cfg) / "opd" / "teacher-rl")
    results.write_table("opd", "teacher", {"teacher": str(t), "run": teacher_run})
    written = set()
    for (arm, s), d in zip(jobs, dirs, strict=True):
        written.add(results.write_run("opd", f"{arm}-s{s}", record(d, arm, s)).name)
    for stale in (results.results_dir() / "opd" / "runs").glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    return {"teacher": str(t), "runs": len(dirs)}
