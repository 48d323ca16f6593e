"""Hand a validated config to veRL's own trainer (``verl.trainer.main_ppo``), unmodified.

Does: strip this project's keys, save the pure veRL config as ``verl_config.yaml`` in the run
directory, and write the exact launch command(s) to ``launch.sh``. The command is veRL's own
CLI (``python -m verl.trainer.main_ppo --config-path <run_dir> --config-name verl_config``),
so a run can be re-launched by hand; ``launch.sh`` exports the environment the config forwards to
Ray (on a CPU: the platform of :mod:`verl_cpu`), so the driver sees it too, and gives each trainer
invocation its own metrics file under ``metrics.d/`` (veRL's file logger truncates its file; on an
existing Ray cluster, ``RAY_ADDRESS``, the path is forwarded through the runtime environment).
The same code launches on GPUs and, through :mod:`verl_cpu` and the config changes of
:mod:`recipes.launch_cpu`, on a CPU (:func:`on_cpu`): only the platform and the rollout backend
differ. :mod:`recipes.supervise` runs ``launch.sh`` and owns its processes.

R1-Zero's reference reset (``rlvr.ref_reset_steps``) has no veRL key, so it is realised with
veRL's own pieces, without forking the trainer: training runs in segments of N steps; after
each segment the latest actor checkpoint is merged to HF format by ``verl.model_merger`` and
the next segment resumes (``trainer.resume_mode=auto``) with ``actor_rollout_ref.model.path``
pointing at it, so the reference model is reloaded from the current policy.
"""

from __future__ import annotations

import functools
import math
import os
import shlex
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

#: The trainer's metrics file as a variable of its Ray processes: on an existing Ray cluster
#: (``RAY_ADDRESS``) they start from the cluster's environment, not from ``launch.sh``'s.
LOGGER_ENV = "ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH"

#: Top-level keys that belong to this project, not to veRL.
PROJECT_KEYS = ("rlvr", "engine", "dry_run", "run_dir", "local", "hydra", "preflight", "cluster")


@functools.cache
def cuda_gpus() -> int:
    """Number of visible CUDA GPUs (0 when torch has no CUDA)."""
    try:
        import torch  # ~3 s; only a launch asks how many GPUs there are (dry runs and --help do not)

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001
        return 0


def on_cpu() -> bool:
    """Whether ``engine=verl`` runs on the CPU backend here: no CUDA GPU is visible."""
    return cuda_gpus() == 0


def verl_config(cfg: DictConfig) -> DictConfig:
    """The composed config without this project's keys, resolved: what veRL receives."""
    container = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    for key in PROJECT_KEYS:
        container.pop(key, None)
    return OmegaConf.create(container)


def launch_commands(cfg: DictConfig, run_dir: Path) -> list[list[str]]:
    """The command lines that train this config with veRL, in order."""
    base = [
        sys.executable,
        "-m",
        "verl.trainer.main_ppo",
        f"--config-path={run_dir.resolve()}",
        "--config-name=verl_config",
        # Hydra's own output (.hydra/, main_ppo.log) in the run folder, not outputs/ where the command ran
        f"hydra.run.dir={run_dir.resolve() / 'hydra'}",
    ]
    every = cfg.rlvr.get("ref_reset_steps")
    total = cfg.trainer.total_training_steps
    if not every:
        return [base]
    if not isinstance(total, int) or total <= 0:
        raise ValueError(
            "[trainer.total_training_steps] rlvr.ref_reset_steps needs a fixed number of steps; "
            "fix: set trainer.total_training_steps"
        )
    ckpt = Path(str(cfg.trainer.default_local_dir))
    cmds: list[list[str]] = []
    for k in range(1, math.ceil(total / every) + 1):
        seg = [
            *base,
            f"trainer.total_training_steps={min(k * every, total)}",
            "trainer.resume_mode=auto",
            f"trainer.save_freq={every}",
        ]
        if k > 1:
            step = (k - 1) * every
            merged = run_dir.resolve() / "ref_reset" / f"step_{step}"
            cmds.append(
                [
                    sys.executable,
                    "-m",
                    "verl.model_merger",
                    "merge",
                    "--backend",
                    "fsdp",
                    "--local_dir",
                    str(ckpt / f"global_step_{step}" / "actor"),
                    "--target_dir",
                    str(merged),
                ]
            )
            seg.append(f"actor_rollout_ref.model.path={merged}")
        cmds.append(seg)
    return cmds


def forwarded_env(cfg: DictConfig) -> dict[str, str]:
    """The environment the config forwards to every Ray process (``ray_kwargs.ray_init.runtime_env.env_vars``)."""
    env = OmegaConf.select(cfg, "ray_kwargs.ray_init.runtime_env.env_vars", default=None)
    return {
        str(k): str(v)
        for k, v in (OmegaConf.to_container(env, resolve=True) if env is not None else {}).items()
    }


def prepare(cfg: DictConfig, run_dir: Path) -> list[list[str]]:
    """Write ``verl_config.yaml`` and ``launch.sh`` into ``run_dir``; return the commands."""
    run_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(verl_config(cfg), run_dir / "verl_config.yaml")
    cmds = launch_commands(cfg, run_dir)
    lines = [
        "#!/usr/bin/env bash",
        "# Launches this run with veRL's own trainer (written by recipes.run).",
        "set -euo pipefail",
        f"RUN={shlex.quote(str(run_dir.resolve()))}",
        # veRL's file logger truncates its file: each trainer invocation (a segment, a resume) writes
        # its own, and recipes.supervise merges them into $RUN/metrics.jsonl
        'mkdir -p "$RUN/metrics.d"',
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in forwarded_env(cfg).items()]
    for c in cmds:
        line = shlex.join(c)
        if c[1:3] == ["-m", "verl.trainer.main_ppo"]:
            lines.append('export VERL_FILE_LOGGER_PATH="$RUN/metrics.d/$(date +%s%N).jsonl"')
            if os.environ.get("RAY_ADDRESS"):  # a cluster's processes do not inherit this shell's env
                line += f" \"++{LOGGER_ENV}='$VERL_FILE_LOGGER_PATH'\""
        lines.append(line)
    (run_dir / "launch.sh").write_text("\n".join(lines) + "\n")
    (run_dir / "launch.sh").chmod(0o755)
    return cmds
