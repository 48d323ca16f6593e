"""The laptop teacher of on-policy distillation (``recipe=opd`` on the local engine), built on first use.

:func:`ensure_teacher` returns the teacher checkpoint at ``distillation.teacher_models.teacher_model.model_path``.
A directory there with ``config.json`` that this module did not build is a user's own teacher, used
as is. Otherwise, when ``local.teacher`` is set, the teacher is built there: the laptop policy (the
cold start of ``local.teacher.recipe`` at ``local.teacher.scale``, :mod:`recipes.local.coldstart`)
after ``local.teacher.steps`` steps of that recipe on the local engine (``python -m recipes.run``,
its output shown; ``local.teacher.overrides`` apply to both): the HF checkpoint of the run's last
step (model and tokenizer as the run saved them). The build is cached by what builds it
(:func:`core.model.cached_build`): the policy's build stamp and weights, the teacher settings,
veRL's version and the sources of the engine, the rewards, the tasks and ``conf/``; a change to any
of them rebuilds it. :func:`train` is the one teacher-training step, shared with ``make results
NAME=opd``.

Does not: build a teacher on the veRL path (there the teacher is any HF checkpoint that exists), or
build at a path the user typed (``recipes.run`` refuses a given teacher path that holds no checkpoint).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from verl.trainer.ppo.reward import get_custom_reward_fn

from core import model as models
from core.fingerprint import source_hash
from recipes.compose import compose
from recipes.launch_local import local_command
from recipes.local.coldstart import ensure_model
from recipes.local.data import ensure_task_files
from recipes.local.trainer import export_policy
from recipes.validate.models import TEACHER_KEY

#: The build stamp's builder name.
BUILDER = "recipes.local.teacher"
#: What a teacher build runs: the engine, its sampler and model code, the rewards, the tasks, the configs.
CODE = ("recipes/local", "core", "rewards", "data_pipelines/tasks", "conf")


def train(
    policy: Path,
    out: Path,
    recipe: str,
    steps: int,
    run_dir: Path,
    extra: list[str] | tuple[str, ...] = (),
    scale: str = "laptop",
    logfile: Path | None = None,
) -> dict[str, Any]:
    """Train ``policy`` for ``steps`` steps of ``recipe`` at ``scale`` on the local engine in ``run_dir``
    (``extra``: more overrides) and copy its last checkpoint's policy (an HF checkpoint with the
    policy's tokenizer) to ``out``. The run's output goes to ``logfile``, else to this process's. Returns the
    run's summary (``summary.json``)."""
    model = f"actor_rollout_ref.model.path={policy}"
    steps_ = [f"trainer.total_training_steps={steps}", f"trainer.save_freq={steps}"]
    cmd = local_command(recipe, run_dir, model, *steps_, *extra, scale=scale)
    if logfile is None:
        rc = subprocess.call(cmd)
    else:
        with logfile.open("w") as fh:
            rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT)
    if rc != 0:
        where = f"; see {logfile}" if logfile else " (its output is above)"
        raise RuntimeError(
            f"[{TEACHER_KEY}] the teacher's training run failed (exit {rc}){where}: {' '.join(cmd)}"
        )
    export_policy(run_dir, out)
    return json.loads((run_dir / "summary.json").read_text())


def ensure_teacher(cfg: DictConfig, log: Callable[[str], None] = print) -> Path:
    """The teacher checkpoint of ``cfg`` (built on first use when ``local.teacher`` is set; file-locked)."""
    path = Path(str(OmegaConf.select(cfg, TEACHER_KEY))).expanduser()
    spec = OmegaConf.select(cfg, "local.teacher")
    if (path / "config.json").is_file() and models.builder_of(path) != BUILDER:
        return path  # a user's own teacher
    if spec is None:
        raise ValueError(
            f"[{TEACHER_KEY}] {path} is not an HF checkpoint directory and local.teacher is null; "
            "fix: a path to a teacher checkpoint, or set local.teacher to build one"
        )
    extra = [str(o) for o in spec.overrides]
    pcfg = compose([f"recipe={spec.recipe}", f"scale={spec.scale}", *extra])
    ensure_task_files(pcfg)
    policy = ensure_model(pcfg, get_custom_reward_fn(pcfg), log)
    stamp = json.loads((policy / "rlvr_meta.json").read_text())
    meta = {
        "builder": BUILDER,
        "code": source_hash(CODE),
        "verl": version("verl"),
        "policy": {"build": stamp.get("build"), "weights_sha256": stamp.get("weights_sha256")},
        "teacher": OmegaConf.to_container(spec, resolve=True),
    }

    def build(tmp: Path) -> dict[str, Any]:
        run_dir = path.with_name(path.name + ".run")
        shutil.rmtree(run_dir, ignore_errors=True)  # a killed build restarts its short run
        log(
            f"[local] building the distillation teacher at {path} (once; cached): the laptop policy after "
            f"{spec.steps} steps of recipe={spec.recipe} scale={spec.scale}; its progress below"
        )
        summary = train(
            policy,
            tmp,
            str(spec.recipe),
            int(spec.steps),
            run_dir,
            [f"trainer.test_freq={spec.test_freq}", "trainer.logger=[file]", "local.progress=true", *extra],
            scale=str(spec.scale),
        )
        shutil.rmtree(run_dir, ignore_errors=True)
        log(
            f"[local] teacher built: held-out accuracy {summary['start_acc']:.3f} -> {summary['end_acc']:.3f} "
            f"in {summary['steps']} steps"
        )
        return {"policy_path": str(policy), "run": summary}

    return models.cached_build(path, meta, build, log)
