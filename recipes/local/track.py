"""Run-directory outputs of the local engine: veRL's ``Tracking``, sample dumps, a tqdm progress bar.

- :func:`make_tracker`: veRL's own ``verl.utils.tracking.Tracking`` with the backends of
  ``trainer.logger`` (console, file, wandb). The ``file`` backend writes ``{"step", "data"}``
  lines to ``run_dir/metrics.jsonl`` (``VERL_FILE_LOGGER_PATH``); since veRL opens that file with
  "wb", lines of steps up to the resume point are re-written after it opens. W&B runs offline
  unless ``WANDB_API_KEY`` is set.
- :func:`data_metrics`, :func:`prompt_clip_ratio`: veRL's data metrics, ``prompt_length/clip_ratio``
  with veRL's meaning (prompts that fill
  ``data.max_prompt_length``), which ``compute_data_metrics`` cannot give on the local engine's
  batch-padded prompts.
- :func:`dump_generations`: veRL's ``RayPPOTrainer._write_generations`` (same JSONL format:
  input, output, gts, score, step + reward extra keys) to ``rollouts/`` or ``validation/``.
- :func:`drift`: the held-out drift from the starting policy (``rlvr/val_kl_to_init``), veRL's k3
  (``low_var_kl``) estimate of KL(model || init) on sampled responses.
Not covered: tensorboard/mlflow backends (veRL supports them; pass them at your own risk).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm
from verl.trainer.ppo.core_algos import kl_penalty
from verl.trainer.ppo.metric_utils import compute_data_metrics
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
from verl.utils.tracking import Tracking

from core.sampler import Rollout, response_logprobs


def _old_lines(path: Path, upto_step: int) -> list[bytes]:
    if not path.is_file() or upto_step <= 0:
        return []
    keep = []
    for line in path.read_bytes().splitlines():
        try:
            if int(json.loads(line)["step"]) <= upto_step:
                keep.append(line)
        except (ValueError, KeyError, TypeError):
            continue
    return keep


def make_tracker(cfg: DictConfig, run_dir: Path, resume_step: int) -> Any:
    """veRL ``Tracking`` for ``trainer.logger``; keeps metrics.jsonl lines up to ``resume_step``."""
    backends = [str(b) for b in cfg.trainer.logger]
    path = run_dir / "metrics.jsonl"
    keep = _old_lines(path, resume_step)
    os.environ["VERL_FILE_LOGGER_PATH"] = str(path)
    if "wandb" in backends:
        os.environ.setdefault("WANDB_DIR", str(run_dir))
        if not os.environ.get("WANDB_API_KEY"):
            os.environ["WANDB_MODE"] = "offline"
    with contextlib.redirect_stdout(io.StringIO()):
        tracker = Tracking(
            project_name=str(cfg.trainer.project_name),
            experiment_name=f"{OmegaConf.select(cfg, 'rlvr.recipe')}-{run_dir.name}",
            default_backend=backends,
            config=OmegaConf.to_container(cfg, resolve=True) if "wandb" in backends else None,
        )
    if "file" in tracker.logger and keep:
        tracker.logger["file"].fp.write(b"\n".join(keep) + b"\n")
    return tracker


def prompt_clip_ratio(prompt_mask: Any, max_prompt_length: int) -> float:
    """Share of prompts at ``data.max_prompt_length`` tokens: veRL's ``prompt_length/clip_ratio``.

    veRL pads every prompt to ``max_prompt_length`` and counts prompts that fill it; the local engine
    pads only to the batch's longest prompt, so veRL's ``compute_data_metrics`` would count prompts
    as long as the longest one instead. This computes it against the configured length.

    >>> import torch
    >>> prompt_clip_ratio(torch.tensor([[0, 1, 1], [1, 1, 1]]), 32), prompt_clip_ratio(torch.ones(2, 4), 4)
    (0.0, 1.0)
    """
    lengths = prompt_mask.sum(-1)
    return float((lengths >= int(max_prompt_length)).float().mean())


def data_metrics(batch: Any, prompt_mask: Any, cfg: DictConfig, use_critic: bool) -> dict[str, Any]:
    """veRL's ``compute_data_metrics`` with ``prompt_length/clip_ratio`` as veRL means it (:func:`prompt_clip_ratio`)."""
    metrics = compute_data_metrics(batch, use_critic=use_critic)
    metrics["prompt_length/clip_ratio"] = prompt_clip_ratio(prompt_mask, int(cfg.data.max_prompt_length))
    return metrics


def dump_generations(
    kind_dir: Path,
    step: int,
    inputs: list[str],
    outputs: list[str],
    gts: list[str],
    scores: list[float],
    extra: dict[str, list[Any]],
) -> None:
    """Write ``kind_dir/{step}.jsonl`` with veRL's ``_write_generations`` (its print silenced)."""
    with contextlib.redirect_stdout(io.StringIO()):
        RayPPOTrainer._write_generations(inputs, outputs, gts, scores, extra, str(kind_dir), step)


def progress(total: int, start: int, enabled: bool) -> Any:
    """A tqdm bar on stderr over the RL steps (shown on a terminal when ``local.progress``)."""
    return tqdm(
        total=total,
        initial=start,
        unit="step",
        desc="RL",
        disable=not enabled or None,  # None: tqdm shows it on a terminal only
        dynamic_ncols=True,
        file=sys.stderr,
    )


@torch.no_grad()
def drift(
    model: torch.nn.Module, init: torch.nn.Module, ro: Rollout, temperature: float, n: int
) -> tuple[float, float]:
    """Sum over response tokens of veRL's k3 (``low_var_kl``) estimate of KL(model || init) on sampled
    responses ``ro`` (rows grouped by ``n`` per prompt), and the token count."""
    was_training = model.training
    model.eval()
    args = (ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, temperature)
    lp, _ = response_logprobs(model, *args, group=n)
    init_lp, _ = response_logprobs(init, *args, group=n)
    model.train(was_training)
    kld = kl_penalty(logprob=lp, ref_logprob=init_lp, kl_penalty="low_var_kl")
    mask = ro.response_mask.to(kld.dtype)
    return float((kld * mask).sum()), float(mask.sum())
