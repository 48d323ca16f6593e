"""Training stages: ``sft`` and ``rl``; each takes a model (base or a stage's output) and writes one.

- ``rl``: one recipe run through :func:`recipes.run.run` (compose, validate, ``run.json``; the local
  engine or veRL) with ``actor_rollout_ref.model.path`` set to the input model and the stage's
  overrides. Locally the final policy is exported as an HF checkpoint (``hf_model/``); on veRL the
  launch commands are veRL's ``main_ppo`` (``launch.sh``) followed by ``verl.model_merger`` on the
  last actor checkpoint, so the next stage gets an HF directory.
- ``sft``: locally :func:`recipes.pipeline.local_sft.sft`; on veRL the config of veRL's own
  ``verl.trainer.sft_trainer`` (``sft_trainer_engine``) is composed with Hydra, validated with veRL's
  dataclasses (engine, optim, checkpoint, profiler; the model too when its files are local) and
  saved as ``sft_config.yaml`` with a ``torchrun`` launch command plus the merge to HF.
Not covered: LoRA stages, SFT on multi-node torchrun rendezvous (edit the command's ``--nnodes``).
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from recipes.pipeline.core import STAGES, StageContext, log


def _merge_cmd(ckpt: Path, sub: str, target: Path) -> str:
    step = f"$(cat {shlex.quote(str(ckpt / 'latest_checkpointed_iteration.txt'))})"
    local = f"{shlex.quote(str(ckpt))}/global_step_{step}{sub}"
    return (
        f"{shlex.quote(sys.executable)} -m verl.model_merger merge --backend fsdp --local_dir {local} "
        f"--target_dir {shlex.quote(str(target))}"
    )


def _reward_fn() -> Any:
    import rewards

    return rewards.compute_score


def export_policy(init: str | Path, run_dir: Path, out: Path) -> Path:
    """Write the local engine's last checkpoint of ``run_dir`` as an HF checkpoint at ``out``."""
    import torch

    from recipes.local import model as tiny

    ckpt = run_dir / "checkpoints"
    tracker = ckpt / "latest_checkpointed_iteration.txt"
    if not tracker.is_file():
        raise FileNotFoundError(f"[rl] {run_dir}: no checkpoint to export (fix: set trainer.save_freq > 0)")
    state = torch.load(ckpt / f"global_step_{int(tracker.read_text())}" / "state.pt", weights_only=False)
    model, tok = tiny.load(init)
    model.load_state_dict(state["model"])
    tiny.save(model, tok, out)
    return out


@STAGES.register("rl")
def rl_stage(ctx: StageContext) -> dict[str, Any]:
    """A recipe run from the input model (R1 stages 2 and 4, the distillation baseline)."""
    from recipes.run import run

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
            import subprocess

            subprocess.run(["bash", "-c", merge], check=True)
        return out
    if dry:
        return out
    summary = json.loads((ctx.run_dir / "summary.json").read_text())
    export_policy(model, ctx.run_dir, hf)
    out["summary"] = {k: summary[k] for k in ("start_acc", "end_acc", "steps", "minutes", "eval_samples")}
    return out


def compose_verl_sft(overrides: list[str]) -> DictConfig:
    """veRL's ``sft_trainer_engine`` config composed with Hydra ``overrides``."""
    import verl
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    conf = str(Path(verl.__file__).parent / "trainer" / "config")
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=conf, version_base=None):
        return compose("sft_trainer_engine", overrides=overrides)


def validate_verl_sft(cfg: DictConfig) -> list[str]:
    """Problems in a veRL SFT config, each as ``[key] what; fix`` (empty when launchable)."""
    from verl.utils.config import omega_conf_to_dataclass

    from recipes.validate import _quiet

    errs: list[str] = []
    for sec in ("engine", "optim", "checkpoint", "profiler"):
        try:
            _quiet(omega_conf_to_dataclass, cfg[sec])
        except Exception as e:  # noqa: BLE001 - veRL raises TypeError/ValueError/AssertionError
            errs.append(f"[{sec}] {type(e).__name__}: {e}")
    if Path(str(cfg.model.path)).expanduser().is_dir():
        try:
            _quiet(omega_conf_to_dataclass, cfg.model)
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
            import subprocess

            subprocess.run(["bash", str(ctx.run_dir / "launch.sh")], check=True)
        return {"model": str(hf), "commands": cmds, "config": str(ctx.run_dir / "sft_config.yaml")}
    from recipes.pipeline.local_sft import sft

    params = dict(ctx.opt("params") or {})
    eval_file = ctx.input("eval_data")["dev"] if "eval_data" in ctx.inputs else None
    if ctx.dry_run:
        return {"model": str(hf)}
    import inspect

    known = set(inspect.signature(sft).parameters) - {
        "init",
        "data",
        "out",
        "eval_file",
        "reward_fn",
        "seed",
        "log",
    }
    bad = sorted(set(params) - known)
    if bad:
        raise ValueError(
            f"[conf/pipeline/{ctx.cfg.name}.yaml: stages.{ctx.plan.base}.local.params] unknown keys "
            f"{bad}; known: {sorted(known)}"
        )
    info = sft(
        init, data, hf, eval_file=eval_file, reward_fn=_reward_fn(), seed=ctx.plan.seed, log=log, **params
    )
    return {"model": str(hf), "sft": {k: v for k, v in info.items() if k != "history"}}
