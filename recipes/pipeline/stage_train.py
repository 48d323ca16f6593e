"""Training stages: ``sft`` and ``rl``; each takes a model (base or a stage's output) and writes one.

- ``rl``: one recipe run through :func:`recipes.run.run` (compose, validate, ``run.json``; the local
  engine or veRL) with ``actor_rollout_ref.model.path`` set to the input model and the stage's
  overrides. Locally the final policy is exported as an HF checkpoint (``hf_model/``); on veRL the
  launch commands are veRL's ``main_ppo`` (``launch.sh``) followed by ``verl.model_merger`` on the
  last actor checkpoint, so the next stage gets an HF directory.
- ``sft``: locally the one SFT loop (:func:`recipes.sft.sft_loop`) on the stage's ``messages``
  parquet, with :class:`SftParams` from the stage's ``local.params``; on veRL the config of veRL's own
  ``verl.trainer.sft_trainer`` (``sft_trainer_engine``) is composed with Hydra, validated with veRL's
  dataclasses (engine, optim, checkpoint, profiler; the model too when its files are local) and
  saved as ``sft_config.yaml`` with a ``torchrun`` launch command plus the merge to HF.
Not covered: LoRA stages, SFT on multi-node torchrun rendezvous (edit the command's ``--nnodes``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import verl
from omegaconf import DictConfig, OmegaConf
from verl.utils.config import omega_conf_to_dataclass

import rewards
from core import model as models
from core.compose import compose_file
from core.data import load_prompts
from core.sampling import LocalSampler, Settings, pass_rates
from recipes.local.trainer import export_policy
from recipes.pipeline.core import STAGES, StageContext, log
from recipes.run import run
from recipes.schema import schema_errors
from recipes.sft import examples, sft_loop
from recipes.validate import quiet


def _merge_cmd(ckpt: Path, sub: str, target: Path) -> str:
    step = f"$(cat {shlex.quote(str(ckpt / 'latest_checkpointed_iteration.txt'))})"
    local = f"{shlex.quote(str(ckpt))}/global_step_{step}{sub}"
    return (
        f"{shlex.quote(sys.executable)} -m verl.model_merger merge --backend fsdp --local_dir {local} "
        f"--target_dir {shlex.quote(str(target))}"
    )


@STAGES.register("rl")
def rl_stage(ctx: StageContext) -> dict[str, Any]:
    """A recipe run from the input model (R1 stages 2 and 4, the distillation baseline)."""
    model = ctx.input("model")["model"]
    ov = [
        f"recipe={ctx.need('recipe')}",
        f"engine={ctx.engine}",
        f"run_dir={ctx.run_dir}",
        f"rlvr.seed={ctx.plan.seed}",
        f"actor_rollout_ref.model.path={model}",
    ]
    scale = ctx.opt("scale", ctx.cfg.get("scale", "laptop" if ctx.engine == "local" else None))
    if scale:
        ov.append(f"scale={scale}")
    if "data" in ctx.inputs:
        ov += [
            f"data.train_files={ctx.input('data')['train']}",
            f"data.val_files={ctx.input('data')['test']}",
        ]
    ov += [str(o) for o in (ctx.spec.get("overrides") or [])]
    eng = ctx.spec.get(ctx.engine) or {}
    ov += [str(o) for o in (eng.get("overrides") or [])]
    hf = ctx.run_dir / "hf_model"
    dry = ctx.dry_run
    if dry:
        ov.append("dry_run=true")
    stdout = ctx.run_dir / "dry_run_config.yaml"
    with open(stdout, "w") as f, contextlib.redirect_stdout(f):
        code = run(ov)
    if not dry:
        stdout.unlink(missing_ok=True)
    if code != 0:
        raise RuntimeError(f"recipes.run exited with {code} for overrides {ov} (the error is printed above)")
    out: dict[str, Any] = {
        "model": str(hf),
        "run": json.loads((ctx.run_dir / "run.json").read_text())["overrides"],
    }
    if ctx.engine == "verl":
        ckpt = Path(str(OmegaConf.load(ctx.run_dir / "config.yaml").trainer.default_local_dir))
        merge = _merge_cmd(ckpt, "/actor", hf)
        out["commands"] = [f"bash {shlex.quote(str(ctx.run_dir / 'launch.sh'))}", merge]
        if not ctx.dry_run:  # run() launched veRL; now merge the last actor checkpoint to HF
            subprocess.run(["bash", "-c", merge], check=True)
        return out
    if dry:
        return out
    summary = json.loads((ctx.run_dir / "summary.json").read_text())
    export_policy(ctx.run_dir, hf)
    out["summary"] = {k: summary[k] for k in ("start_acc", "end_acc", "steps", "minutes", "eval_samples")}
    return out


def compose_verl_sft(overrides: list[str]) -> DictConfig:
    """veRL's ``sft_trainer_engine`` config composed with Hydra ``overrides``."""
    return compose_file(Path(verl.__file__).parent / "trainer" / "config", "sft_trainer_engine", overrides)


def validate_verl_sft(cfg: DictConfig) -> list[str]:
    """Problems in a veRL SFT config, each as ``[key] what; fix`` (empty when launchable)."""
    errs: list[str] = []
    for sec in ("engine", "optim", "checkpoint", "profiler"):
        try:
            quiet(omega_conf_to_dataclass, cfg[sec])
        except Exception as e:  # noqa: BLE001 - veRL raises TypeError/ValueError/AssertionError
            errs.append(f"[{sec}] {type(e).__name__}: {e}")
    if Path(str(cfg.model.path)).expanduser().is_dir():
        try:
            quiet(omega_conf_to_dataclass, cfg.model)
        except Exception as e:  # noqa: BLE001
            errs.append(f"[model] {type(e).__name__}: {e}")
    d, t = cfg.data, cfg.trainer
    world = int(t.n_gpus_per_node) * int(t.nnodes)
    if world < 1:
        errs.append(
            f"[trainer.n_gpus_per_node] {t.n_gpus_per_node} x nnodes {t.nnodes} < 1; fix: the GPUs per node"
        )
    elif int(d.train_batch_size) % world:
        errs.append(
            f"[data.train_batch_size] {d.train_batch_size} is not divisible by the {world} GPUs; "
            "fix: a multiple of n_gpus_per_node * nnodes"
        )
    if str(d.messages_key) != "messages":
        errs.append(f"[data.messages_key] {d.messages_key!r}: the pipeline's SFT files use 'messages'")
    if int(t.total_epochs) < 1 and not t.total_training_steps:
        errs.append("[trainer.total_epochs] must be >= 1 (or set trainer.total_training_steps)")
    if not (0 < float(cfg.optim.lr) < 1):
        errs.append(f"[optim.lr] {cfg.optim.lr} is not a learning rate; fix: e.g. 1e-5")
    return errs


@STAGES.register("sft")
def sft_stage(ctx: StageContext) -> dict[str, Any]:
    """SFT of the input model on the input data (R1 stages 1 and 3; the distilled student)."""
    init, data = ctx.input("model")["model"], ctx.input("data")["data"]
    hf = ctx.run_dir / "hf_model"
    if ctx.engine == "verl":
        ckpt = ctx.run_dir / "checkpoints"
        ov = [
            f"model.path={init}",
            f"data.train_files={data}",
            "data.val_files=null",
            "data.messages_key=messages",
            f"trainer.default_local_dir={ckpt}",
            "trainer.project_name=rlvr-pipeline",
            f"trainer.experiment_name={ctx.cfg.name}-{ctx.plan.name}",
            "trainer.logger=[console]",
            f"trainer.seed={ctx.plan.seed}",
            *[str(o) for o in (ctx.opt("overrides") or [])],
        ]
        cfg = compose_verl_sft(ov)
        errs = validate_verl_sft(cfg)
        if errs:
            raise ValueError("invalid veRL SFT config (stage " + ctx.plan.name + "):\n  " + "\n  ".join(errs))
        OmegaConf.save(cfg, ctx.run_dir / "sft_config.yaml")
        n = int(cfg.trainer.n_gpus_per_node)
        train = (
            f"torchrun --standalone --nnodes={int(cfg.trainer.nnodes)} --nproc_per_node={n} -m "
            f"verl.trainer.sft_trainer --config-path={shlex.quote(str(ctx.run_dir.resolve()))} "
            "--config-name=sft_config"
        )
        cmds = [train, _merge_cmd(ckpt, "", hf)]
        (ctx.run_dir / "launch.sh").write_text(
            "#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(cmds) + "\n"
        )
        if not ctx.dry_run:
            subprocess.run(["bash", str(ctx.run_dir / "launch.sh")], check=True)
        return {"model": str(hf), "commands": cmds, "config": str(ctx.run_dir / "sft_config.yaml")}
    if ctx.dry_run:
        return {"model": str(hf)}
    where = f"conf/pipeline/{ctx.cfg.name}.yaml: stages.{ctx.plan.base}.local.params"
    errs = schema_errors(OmegaConf.create(dict(ctx.opt("params") or {})), SftParams, where)
    if errs:
        raise ValueError("; ".join(errs))
    params = SftParams(**dict(ctx.opt("params") or {}))
    eval_file = ctx.input("eval_data")["dev"] if "eval_data" in ctx.inputs else None
    info = local_sft(init, data, hf, eval_file, ctx.plan.seed, params)
    return {"model": str(hf), "sft": {k: v for k, v in info.items() if k != "history"}}


@dataclass
class SftParams:
    """``stages.<sft stage>.local.params`` of a pipeline file (laptop-scale SFT; defaults here).

    Attributes:
        lr, betas, warmup_steps: AdamW with a constant lr after a linear warmup.
        batch_size, max_steps: examples per step (with replacement) and the step budget.
        eval_every, eval_n: pass-rate evaluation interval and the number of dev prompts.
        min_pass: stop at the first evaluation reaching it (null: run every step).
        max_prompt_length, max_response_length: token limits (longer rows are refused).
        threads: torch threads.
    """

    lr: float = 2.0e-3
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 50
    batch_size: int = 64
    max_steps: int = 1500
    eval_every: int = 25
    eval_n: int = 128
    min_pass: float | None = 0.3
    max_prompt_length: int = 32
    max_response_length: int = 64
    threads: int = 1


def local_sft(
    init: str | Path, data: str | Path, out: Path, eval_file: str | None, seed: int, p: SftParams
) -> dict[str, Any]:
    """SFT the HF checkpoint ``init`` on ``data`` (``messages`` rows) with the one SFT loop; save to
    ``out`` (no ``rlvr_meta.json``: the engine uses it as given) and ``sft_info.json`` beside it.

    Each evaluation samples the first ``eval_n`` prompts of ``eval_file`` once at T=1 with a
    generator seeded ``seed + step``.
    """
    torch.set_num_threads(p.threads)
    torch.manual_seed(seed)
    model, tok = models.load(init)
    data_ = examples(data, tok, p.max_prompt_length, p.max_response_length)
    evals = (
        load_prompts(eval_file, tok, p.max_prompt_length, limit=p.eval_n)
        if eval_file and p.eval_every > 0
        else []
    )

    def evaluate(step: int) -> float:
        sampler = LocalSampler.of(model, tok, Settings(seed=seed + step))
        rates = pass_rates(sampler, evals, rewards.compute_score, p.max_response_length)
        return sum(rates) / len(rates)

    res = sft_loop(
        model,
        tok.pad_token_id,
        data_,
        seed=seed,
        lr=p.lr,
        betas=tuple(p.betas),
        warmup_steps=p.warmup_steps,
        batch_size=p.batch_size,
        max_steps=p.max_steps,
        eval_every=p.eval_every,
        min_pass=p.min_pass,
        evaluate=evaluate if evals else None,
        log=log,
        tag="[sft]",
    )
    tmp = out.with_name(out.name + ".tmp")
    models.save(model.eval(), tok, tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    info = {
        **{k: v for k, v in asdict(res).items() if k != "seconds"},
        "examples": len(data_),
        "seconds": res.seconds,
        "num_params": models.num_params(model),
    }
    (out.parent / "sft_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info
