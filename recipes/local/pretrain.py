"""The laptop *base* model: a tiny Qwen2 pretrained by next-token prediction on the designed corpus.

:func:`ensure_base_model` returns the model directory at ``actor_rollout_ref.model.path``,
building it on first use (file-locked): draw ``local.pretrain.corpus`` (:mod:`data_pipelines.corpus`:
the tasks' skills written as web text would -- mostly direct answers, a minority of worked
solutions in several styles, the answer tag only sometimes), build the ``local.pretrain.tokenizer``
(default ``task_chars``: one token per character the tasks use, CJK included) and a random-init
Qwen2 (``local.model``), and train it on ``local.pretrain.steps`` random batches of documents
(:func:`lm_step`: mean next-token loss over every token after ``<|bos|>``; rows sorted by length
into ``chunks`` micro-batches inside a step -- the same update with less padding), AdamW at a
constant lr after warmup. Batches are drawn at random, never grouped by length: grouped batches
(one difficulty per batch) learnt nothing in the same budget (notebooks/base_model_design.md).
Then :func:`recipes.local.probe.probe` samples it on held-out prompts and the result goes into
``rlvr_meta.json`` next to the build's CPU and wall time.

The cache is keyed by the settings (with ``local.threads``: the build runs at that thread count,
which changes its floats) and by :func:`core.fingerprint.source_hash` of :data:`CODE` (the modules
that decide the weights): editing any of them rebuilds. Reproducible from
``local.pretrain.seed``. Not covered: packing, lr decay, resuming a half-built model.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from core import model as models
from core import numerics
from core.fingerprint import source_hash
from data_pipelines.corpus import Doc, build_corpus, describe
from recipes.local.probe import probe, probe_prompts
from recipes.schema import local_config

BUILDER = "recipes.local.pretrain"
#: sources that decide the base model's weights (their hash is part of the cache key)
CODE = (
    "core/model.py",
    "core/numerics.py",
    "core/sampler.py",
    "data_pipelines/corpus",
    "data_pipelines/tasks/_common.py",
    "data_pipelines/tasks/chain_sum.py",
    "data_pipelines/tasks/overtime_pay.py",
    "data_pipelines/templates.py",
    "recipes/local/pretrain.py",
)


def build_meta(cfg: DictConfig) -> dict[str, Any]:
    """What identifies a base model: builder, code hash, ``local.model``, ``local.pretrain`` and
    ``local.threads`` (the build runs at that thread count, which changes its floats: another count
    gives other weights from the first step, ``make results NAME=numerics_trace``)."""
    return {
        "builder": BUILDER,
        "code": source_hash(CODE),
        "model": OmegaConf.to_container(cfg.local.model, resolve=True),
        "pretrain": OmegaConf.to_container(cfg.local.pretrain, resolve=True),
        "threads": int(cfg.local.threads),
    }


def ensure_base_model(cfg: DictConfig, reward_fn: Any, log: Callable[[str], None] = print) -> Path:
    """The base model directory (built on first use, file-locked, rebuilt when settings or code change)."""
    path = Path(str(cfg.actor_rollout_ref.model.path)).expanduser()
    return models.cached_build(path, build_meta(cfg), lambda tmp: pretrain(cfg, reward_fn, tmp, log), log)


def encode(docs: list[Doc], tok: Any) -> list[list[int]]:
    """Token ids of each document: a chat document through the chat template (as the RL prompt is
    rendered) + its text + EOS; a plain one as ``<|bos|>`` + text + EOS."""
    texts = []
    for d in docs:
        if d.prompt is None:
            head = tok.bos_token
        else:
            msgs = [{"role": "user", "content": d.prompt}]
            head = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        texts.append(head + d.text + tok.eos_token)
    return tok(texts, add_special_tokens=False)["input_ids"]


def lm_step(
    model: torch.nn.Module, pad_id: int, seqs: list[list[int]], opt: torch.optim.Optimizer, chunks: int = 1
) -> float:
    """One update: mean next-token NLL over every token after the first of each sequence.

    Rows are sorted by length and split into ``chunks`` micro-batches whose gradients add up to
    the full batch's (each micro-batch's loss is divided by the batch's token count); grad clip 1.
    """
    order = sorted(range(len(seqs)), key=lambda j: len(seqs[j]))
    size = -(-len(order) // max(1, chunks))
    total = sum(len(s) - 1 for s in seqs)
    opt.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for s in range(0, len(order), size):
        part = [seqs[j] for j in order[s : s + size]]
        width = max(len(x) for x in part)
        ids = torch.full((len(part), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(part), width), dtype=torch.long)
        for r, x in enumerate(part):
            ids[r, : len(x)] = torch.tensor(x)
            mask[r, : len(x)] = 1
        logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
        nll = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
        )
        loss = (nll * mask[:, 1:].reshape(-1)).sum() / total
        loss.backward()
        loss_sum += float(loss.detach())
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss_sum


@dataclass
class Build:
    """A base-model build at step 0: its corpus, tokenizer, encoded documents, model and optimizer."""

    docs: list[Doc]
    tok: Any
    seqs: list[list[int]]
    model: Any
    opt: Any
    sched: Any
    rng: random.Random

    def step(self, batch_size: int, chunks: int) -> float:
        """One training step on ``batch_size`` documents drawn at random (:func:`lm_step`); its loss."""
        batch = [self.seqs[self.rng.randrange(len(self.seqs))] for _ in range(batch_size)]
        loss = lm_step(self.model, self.tok.pad_token_id, batch, self.opt, chunks)
        self.sched.step()
        return loss


def setup(cfg: DictConfig, optimizer: Callable[..., Any] = numerics.adamw) -> Build:
    """Everything :func:`pretrain` starts from, made as the build makes it (``optimizer`` is called
    as ``optimizer(params, lr=, betas=)``; another one only to compare optimizers, as
    :mod:`experiments.numerics_trace` does). Sets torch's thread count to ``local.threads``."""
    p = cfg.local.pretrain
    local = local_config(cfg)
    torch.set_num_threads(local.threads)
    seed, c = int(p.seed), p.corpus
    docs = build_corpus(
        int(c.n),
        seed,
        OmegaConf.to_container(c.mix, resolve=True),
        OmegaConf.to_container(c.params, resolve=True),
    )
    tok = models.build_tokenizer(str(p.tokenizer))
    seqs = encode(docs, tok)
    too_long = sum(len(s) > local.model.max_position_embeddings for s in seqs)
    if too_long:
        raise ValueError(
            f"[local.pretrain.corpus] {too_long} documents exceed local.model.max_position_embeddings="
            f"{local.model.max_position_embeddings} tokens (fix: raise it or shorten the corpus)"
        )
    torch.manual_seed(seed)
    model = models.build_model(local.model, tok, seed)
    opt = optimizer(model.parameters(), lr=float(p.lr), betas=tuple(p.betas))
    warm = max(1, int(p.warmup_steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / warm))
    return Build(docs, tok, seqs, model, opt, sched, random.Random(f"pretrain/{seed}"))


def pretrain(cfg: DictConfig, reward_fn: Any, out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Build, pretrain, probe and save the base model at ``out``; returns what the meta file records."""
    p = cfg.local.pretrain
    t0, c0 = time.time(), time.process_time()
    steps, bs = int(p.steps), int(p.batch_size)
    b = setup(cfg)
    docs, tok, model = b.docs, b.tok, b.model
    model.train()
    log(f"[local] pretraining the base model: {len(docs)} documents, {steps} steps of {bs}, {describe(docs)}")
    history = []
    for step in range(1, steps + 1):
        loss = b.step(bs, int(p.chunks))
        if step % max(1, steps // 10) == 0 or step == steps:
            history.append([step, round(loss, 4)])
            log(f"[local] pretrain step {step}/{steps}: loss {loss:.3f}, {time.process_time() - c0:.0f}s CPU")
    build_cpu, build_wall = time.process_time() - c0, time.time() - t0
    model.eval()
    prompts = probe_prompts(cfg, tok)
    report = probe(
        model, tok, prompts, reward_fn, n=int(p.probe_n), max_new=int(cfg.data.max_response_length)
    )
    log(f"[local] base model probe: {json.dumps(report['overall'])}")
    models.save(model, tok, out)
    return {
        "build_cpu_seconds": round(build_cpu, 1),
        "build_wall_seconds": round(build_wall, 1),
        "corpus": describe(docs),
        "loss_history": history,
        "probe": report,
        "num_params": models.num_params(model),
    }
