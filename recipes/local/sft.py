"""Cold start (R1's stage 1 in miniature): build the tiny model, SFT it on programmatic traces.

:func:`ensure_model` returns a model directory for ``actor_rollout_ref.model.path``. If the
directory holds a checkpoint whose ``rlvr_meta.json`` matches the requested build (model spec,
seed, SFT settings, task), it is reused (the cache). Otherwise a fresh tiny Qwen2 + character
tokenizer is built from ``local.model`` and trained with a **constant** learning rate (AdamW,
warmup, grad clip 1), evaluating the sampled (T=1) pass rate every ``local.sft.eval_every`` steps
and **stopping at the first evaluation whose pass rate reaches** ``local.sft.min_pass`` — the
"learnable band" start that the feasibility runs found RL needs (an annealed, over-trained start
gave RL no consistent gradient). Reproducible from ``local.sft.seed``. A path that exists without
our meta file is taken as a user's own checkpoint and used as is.
``local.sft.untagged_answer_rate`` strips the ``<answer>`` tags from that share of the SFT targets
(chosen per row from the seed), giving a start whose answers are partly unparseable -- the
format-reward ablation's task knob.
Not covered: SFT for tasks whose module has no ``sft_response(extra_info) -> str``.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from recipes.local import model as tiny
from recipes.local.data import load_prompts
from recipes.local.sampler import generate, left_pad, response_logprobs

_ANSWER_TAGS = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def untag_answer(text: str) -> str:
    """The target with its ``<answer>`` tags removed (the answer stays, bare).

    >>> untag_answer("<think>4+4+0=08</think><answer>8</answer>")
    '<think>4+4+0=08</think>8'
    """
    return _ANSWER_TAGS.sub(r"\1", text)


def _meta(cfg: DictConfig) -> dict[str, Any]:
    sft = OmegaConf.to_container(cfg.local.sft, resolve=True)
    if not sft.get("untagged_answer_rate"):
        # omitted at its default, so cold starts cached before the knob existed stay valid
        sft.pop("untagged_answer_rate", None)
    return {
        "builder": "recipes.local.sft",
        "model": OmegaConf.to_container(cfg.local.model, resolve=True),
        "sft": sft,
        "task": OmegaConf.to_container(cfg.local.task, resolve=True),
    }


def _pass_rate(
    model: torch.nn.Module, tok: Any, prompts: list, reward_fn: Any, max_new: int, g: torch.Generator
) -> float:
    model.eval()
    hits = 0
    for i in range(0, len(prompts), 64):
        chunk = prompts[i : i + 64]
        ro = generate(
            model, [p.ids for p in chunk], 1, max_new, tok.eos_token_id, tok.pad_token_id, generator=g
        )
        lens = ro.response_lengths.tolist()
        texts = tok.batch_decode(
            [ro.responses[j, : lens[j]].tolist() for j in range(len(chunk))], skip_special_tokens=True
        )
        for p, t in zip(chunk, texts, strict=True):
            r = reward_fn(
                data_source=p.data_source,
                solution_str=t,
                ground_truth=p.ground_truth,
                extra_info=p.extra_info,
            )
            hits += float(r.get("acc", r["score"]) if isinstance(r, dict) else r) > 0
    model.train()
    return hits / len(prompts)


def ensure_model(cfg: DictConfig, reward_fn: Any, log: Any = print) -> Path:
    """The SFT'd model directory at ``actor_rollout_ref.model.path`` (built on first use, file-locked)."""
    path = Path(str(cfg.actor_rollout_ref.model.path)).expanduser()
    meta = _meta(cfg)
    meta_file = path / "rlvr_meta.json"
    if path.is_dir() and not meta_file.is_file() and (path / "config.json").is_file():
        return path  # a user's own checkpoint
    if meta_file.is_file() and json.loads(meta_file.read_text()).get("build") == meta:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if meta_file.is_file() and json.loads(meta_file.read_text()).get("build") == meta:
            return path
        if meta_file.is_file():
            log(f"[local] {path}: cached model was built with other settings; rebuilding")
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        info = _train(cfg, reward_fn, tmp, log)
        tiny_meta = {"build": meta, **info}
        (tmp / "rlvr_meta.json").write_text(json.dumps(tiny_meta, indent=2, default=str) + "\n")
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    return path


def sft_step(
    model: torch.nn.Module,
    pad_id: int,
    prompts: list[list[int]],
    targets: list[list[int]],
    opt: torch.optim.Optimizer,
    sched: Any,
) -> torch.Tensor:
    """One SFT update: token-mean NLL of ``targets`` given left-padded ``prompts``, grad clip 1.

    Returns the (detached-able) loss tensor. Shared by the cold start and the pipeline's SFT stages.
    """
    p_ids, p_mask = left_pad(prompts, pad_id)
    width = max(len(t) for t in targets)
    r_ids = torch.full((len(targets), width), pad_id, dtype=torch.long)
    r_mask = torch.zeros((len(targets), width), dtype=torch.long)
    for j, t in enumerate(targets):
        r_ids[j, : len(t)] = torch.tensor(t)
        r_mask[j, : len(t)] = 1
    logp, _ = response_logprobs(model, p_ids, p_mask, r_ids, r_mask)
    loss = -(logp * r_mask).sum() / r_mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    return loss


def _train(cfg: DictConfig, reward_fn: Any, out: Path, log: Any) -> dict[str, Any]:
    s = cfg.local.sft
    task_mod = importlib.import_module(f"data_pipelines.tasks.{cfg.local.task.name}")
    render = getattr(task_mod, "sft_response", None)
    if render is None:
        raise ValueError(
            f"[local.task] name={cfg.local.task.name!r} has no sft_response() for the cold start "
            "(fix: point actor_rollout_ref.model.path at an existing checkpoint)"
        )
    spec = tiny.TinySpec.from_dict(OmegaConf.to_container(cfg.local.model, resolve=True))
    tok = tiny.build_tokenizer()
    torch.manual_seed(int(s.seed))
    model = tiny.build_model(spec, tok, int(s.seed))
    model.train()
    rows = load_prompts(cfg.data.train_files, tok, int(cfg.data.max_prompt_length))
    eval_rows, train_rows = rows[-int(s.eval_n) :], rows[: -int(s.eval_n)]
    untagged = float(s.get("untagged_answer_rate", 0.0))
    if not 0.0 <= untagged <= 1.0:
        raise ValueError(f"[local.sft.untagged_answer_rate] {untagged} must be in [0, 1]")
    pick = random.Random(f"untagged-{s.seed}")
    texts = [render(p.extra_info) for p in train_rows]
    texts = [untag_answer(t) if untagged and pick.random() < untagged else t for t in texts]
    targets = [tok(t + tok.eos_token, add_special_tokens=False)["input_ids"] for t in texts]
    opt = torch.optim.AdamW(model.parameters(), lr=float(s.lr), betas=tuple(s.betas), weight_decay=0.0)
    warm = int(s.warmup_steps)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(1, warm)))
    rng = random.Random(int(s.seed))
    g = torch.Generator().manual_seed(int(s.seed))
    max_new = int(cfg.data.max_response_length)
    t0, step, rate, history = time.time(), 0, 0.0, []
    while step < int(s.max_steps):
        idx = [rng.randrange(len(train_rows)) for _ in range(int(s.batch_size))]
        loss = sft_step(
            model, tok.pad_token_id, [train_rows[i].ids for i in idx], [targets[i] for i in idx], opt, sched
        )
        step += 1
        if step % int(s.eval_every) == 0:
            rate = _pass_rate(model, tok, eval_rows, reward_fn, max_new, g)
            history.append((step, round(loss.item(), 4), rate))
            log(
                f"[local] cold-start SFT step {step}: loss {loss.item():.3f}, sampled pass {rate:.2f} "
                f"(stop at >= {float(s.min_pass):.2f}), {time.time() - t0:.0f}s"
            )
            if rate >= float(s.min_pass):
                break
    else:
        log(
            f"[local] cold-start SFT reached local.sft.max_steps={s.max_steps} with pass {rate:.2f} < "
            f"local.sft.min_pass={s.min_pass}; using the last checkpoint"
        )
    tiny.save(model.eval(), tok, out)
    return {
        "sft_steps": step,
        "sft_pass": rate,
        "sft_seconds": round(time.time() - t0, 1),
        "history": history,
        "num_params": tiny.num_params(model),
    }
