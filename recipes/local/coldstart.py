"""Cold start (R1's stage 1 in miniature): build the laptop model, SFT it on programmatic traces.

:func:`ensure_model` returns a model directory for ``actor_rollout_ref.model.path``. If the
directory holds a checkpoint whose ``rlvr_meta.json`` matches the requested build (model spec,
seed, SFT settings, task), it is reused (the cache). Otherwise a fresh Qwen2 + character
tokenizer is built from ``local.model`` (:mod:`core.model`) and trained by the one SFT loop
(:func:`recipes.sft.sft_loop`) from ``local.sft``, evaluating the sampled (T=1) pass rate every
``local.sft.eval_every`` steps on the last ``eval_n`` training prompts and stopping at the first
evaluation reaching ``local.sft.min_pass``. Reproducible from ``local.sft.seed``. A path that
exists without our meta file is taken as a user's own checkpoint and used as is.
``local.sft.untagged_answer_rate`` strips the ``<answer>`` tags from that share of the SFT targets
(chosen per row from the seed), giving a start whose answers are partly unparseable -- the
format-reward ablation's task knob.
Not covered: SFT for tasks whose module has no ``sft_response(extra_info) -> str``.
"""

from __future__ import annotations

import importlib
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from core import model as models
from core.data import load_prompts
from core.fingerprint import source_hash
from core.sampling import LocalSampler, Settings, pass_rates
from recipes.schema import local_config
from recipes.sft import sft_loop

_ANSWER_TAGS = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
#: The build stamp's builder name (kept from the module's first name, so cached starts stay valid).
BUILDER = "recipes.local.sft"
# The sources a cold start depends on: model builder, sampler, SFT loop, this module, tasks, verifier.
CODE = (
    "core/model.py",
    "core/numerics.py",
    "core/sampler.py",
    "core/sampling.py",
    "recipes/sft.py",
    "recipes/local/coldstart.py",
    "data_pipelines/tasks",
    "rewards",
)


def untag_answer(text: str) -> str:
    """The target with its ``<answer>`` tags removed (the answer stays, bare).

    >>> untag_answer("<think>4+4+0=08</think><answer>8</answer>")
    '<think>4+4+0=08</think>8'
    """
    return _ANSWER_TAGS.sub(r"\1", text)


def build_meta(cfg: DictConfig) -> dict[str, Any]:
    """What identifies a cold start: builder, the code that builds it (a hash of :data:`CODE`'s
    sources), ``local.model``, ``local.sft``, ``local.task`` and ``local.threads`` (the build runs at
    that thread count, which changes its floats)."""
    sft = OmegaConf.to_container(cfg.local.sft, resolve=True)
    if not sft.get("untagged_answer_rate"):
        # omitted at its default, so cold starts cached before the knob existed stay valid
        sft.pop("untagged_answer_rate", None)
    return {
        "builder": BUILDER,
        "code": source_hash(CODE),
        "model": OmegaConf.to_container(cfg.local.model, resolve=True),
        "sft": sft,
        "task": OmegaConf.to_container(cfg.local.task, resolve=True),
        "threads": int(cfg.local.threads),
    }


def ensure_model(cfg: DictConfig, reward_fn: Any, log: Callable[[str], None] = print) -> Path:
    """The SFT'd model directory at ``actor_rollout_ref.model.path`` (built on first use, file-locked)."""
    path = Path(str(cfg.actor_rollout_ref.model.path)).expanduser()
    meta_file = path / "rlvr_meta.json"
    if path.is_dir() and not meta_file.is_file() and (path / "config.json").is_file():
        return path  # a user's own checkpoint
    return models.cached_build(path, build_meta(cfg), lambda tmp: _train(cfg, reward_fn, tmp, log), log)


def _targets(cfg: DictConfig, tok: Any, extra_infos: list[dict[str, Any]]) -> list[list[int]]:
    """Token ids of the programmatic SFT targets (+ EOS), some untagged per ``untagged_answer_rate``."""
    s = cfg.local.sft
    task_mod = importlib.import_module(f"data_pipelines.tasks.{cfg.local.task.name}")
    render = getattr(task_mod, "sft_response", None)
    if render is None:
        raise ValueError(
            f"[local.task] name={cfg.local.task.name!r} has no sft_response() for the cold start "
            "(fix: point actor_rollout_ref.model.path at an existing checkpoint)"
        )
    untagged = float(s.untagged_answer_rate)
    if not 0.0 <= untagged <= 1.0:
        raise ValueError(f"[local.sft.untagged_answer_rate] {untagged} must be in [0, 1]")
    pick = random.Random(f"untagged-{s.seed}")
    texts = [render(e) for e in extra_infos]
    texts = [untag_answer(t) if untagged and pick.random() < untagged else t for t in texts]
    return [tok(t + tok.eos_token, add_special_tokens=False)["input_ids"] for t in texts]


def _train(cfg: DictConfig, reward_fn: Any, out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    local = local_config(cfg)
    s = local.sft
    torch.set_num_threads(local.threads)  # the thread count its key names, whoever calls the build
    tok = models.build_tokenizer("char")
    torch.manual_seed(int(s.seed))
    model = models.build_model(local.model, tok, int(s.seed))
    rows = load_prompts(cfg.data.train_files, tok, int(cfg.data.max_prompt_length))
    eval_rows, train_rows = rows[-int(s.eval_n) :], rows[: -int(s.eval_n)]
    targets = _targets(cfg, tok, [p.extra_info for p in train_rows])
    # one generator across the evaluations (the draws of later evaluations follow the earlier ones)
    sampler = LocalSampler.of(model, tok, Settings(), generator=torch.Generator().manual_seed(int(s.seed)))
    max_new = int(cfg.data.max_response_length)

    def evaluate(step: int) -> float:
        rates = pass_rates(sampler, eval_rows, reward_fn, max_new, batch=64)
        return sum(rates) / len(rates)

    res = sft_loop(
        model,
        tok.pad_token_id,
        [(p.ids, t) for p, t in zip(train_rows, targets, strict=True)],
        seed=int(s.seed),
        lr=float(s.lr),
        betas=tuple(s.betas),
        warmup_steps=int(s.warmup_steps),
        batch_size=int(s.batch_size),
        max_steps=int(s.max_steps),
        eval_every=int(s.eval_every),
        min_pass=float(s.min_pass),
        evaluate=evaluate,
        log=log,
        tag="[local] cold-start SFT",
    )
    rate = res.last_pass if res.history else 0.0
    if res.stopped_by == "max_steps":
        log(
            f"[local] cold-start SFT reached local.sft.max_steps={s.max_steps} with pass {rate:.2f} < "
            f"local.sft.min_pass={s.min_pass}; using the last checkpoint"
        )
    models.save(model.eval(), tok, out)
    return {
        "sft_steps": res.steps,
        "sft_pass": rate,
        "sft_seconds": res.seconds,
        "history": res.history,
        "num_params": models.num_params(model),
    }
