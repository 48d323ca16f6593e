"""Speed on a real model: the local engine's KV-cache sampler vs HF ``generate``, and one RL step's split.

On SmolLM2-135M-Instruct (:mod:`core.real_model`, fp32, 30 layers, a 49,152-token vocabulary), in one
process, rounds alternating so load changes hit every arm:

- ``sampler``: :func:`core.sampler.generate` under the fast path's :func:`core.fastpath.decoding`
  (what the local engine, ``make eval`` and ``make filter`` sample with: the prompt's prefill once per
  prompt, its KV cache repeated for the n samples, finished rows dropped);
- ``hf``: ``model.generate`` (``do_sample``, the same temperature, top-p 1, top-k off,
  ``num_return_sequences=n``, the same EOS and pad ids) on the same left-padded prompts;
- one RL step of the ``laptop_smollm2`` shape split into its parts: generation (the sampler),
  log-probs (:func:`core.fastpath.bucketed_logprobs` without gradients: what the reference or old
  policy costs) and the update (the same with gradients, backward, one fused AdamW step).

Tokens are generated tokens (each row up to and including its EOS); tokens/s and CPU seconds are per
arm, medians over rounds, and the ratio sampler/hf is of tokens/s on each clock. Recorded in
``results/bench_real_model/latest.json`` (``core.results``) with the converted model's build record
(``rlvr_meta.json``: its key, parameters and tokenizer fixes). A Hydra app
(``conf/command/bench_real_model.yaml``). Not covered: vLLM, greedy decoding, batch sizes other than
the configured one.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from core import model as models
from core import numerics, real_model, results
from core.cli import hydra_main
from core.data import chat_ids
from core.fastpath import bucketed_logprobs, decoding, plain_rollout
from core.sampler import Rollout, generate, left_pad
from data_pipelines.tasks import TASKS

#: what the results record of the converted model's ``rlvr_meta.json``
MODEL_KEYS = ("build", "title", "weights", "architecture", "num_params", "fixes", "weights_sha256")


def _clock(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def sample_ours(model: Any, tok: Any, prompts: list[list[int]], a: DictConfig, seed: int) -> Rollout:
    """The engine's sampler as the engine calls it (and hands its rollout to training)."""
    g = torch.Generator().manual_seed(seed)
    with decoding(model):
        ro = generate(
            model,
            prompts,
            int(a.n),
            int(a.max_new_tokens),
            tok.eos_token_id,
            tok.pad_token_id,
            temperature=float(a.temperature),
            generator=g,
        )
    return plain_rollout(ro)  # ordinary tensors again, so the update can backpropagate through them


def sample_hf(model: Any, tok: Any, prompts: list[list[int]], a: DictConfig, seed: int) -> int:
    """HF ``generate`` on the same prompts; the number of generated tokens (rows cut after their EOS)."""
    ids, mask = left_pad(prompts, tok.pad_token_id)
    torch.manual_seed(seed)
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            temperature=float(a.temperature),
            top_p=1.0,
            top_k=0,
            max_new_tokens=int(a.max_new_tokens),
            num_return_sequences=int(a.n),
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )[:, ids.shape[1] :]
    is_eos = (out == tok.eos_token_id).long()
    return int(((torch.cumsum(is_eos, -1) - is_eos) == 0).sum())


def step_parts(
    model: Any, opt: Any, ro: Rollout, temperature: float, n: int
) -> dict[str, tuple[float, float]]:
    """Log-probs without gradients, then one update (forward, backward, AdamW): (wall, CPU) seconds each."""
    args = (ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask, temperature)

    def logprobs() -> None:
        with torch.no_grad():
            bucketed_logprobs(model, *args, group=n)

    def update() -> None:
        model.train()
        lp, _ = bucketed_logprobs(model, *args, group=n)
        loss = -(lp * ro.response_mask).sum() / ro.response_mask.sum()  # a policy-gradient-shaped loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        model.eval()

    _, w1, c1 = _clock(logprobs)
    _, w2, c2 = _clock(update)
    return {"logprobs": (w1, c1), "update": (w2, c2)}


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def command(a: DictConfig) -> int:
    torch.set_num_threads(int(a.threads))
    path = real_model.require(str(a.model))
    meta = json.loads((path / "rlvr_meta.json").read_text())
    model, tok = models.load(path)
    rows = TASKS.get("sum_question")(n=int(a.prompts), seed=0, split="test", lo=1, hi=19)
    prompts = [chat_ids(tok, r["prompt"]) for r in rows]
    opt = numerics.adamw(model.parameters(), lr=1e-6, betas=(0.9, 0.99))
    arms: dict[str, dict[str, list[float]]] = {}

    def add(arm: str, tokens: int, wall: float, cpu: float) -> None:
        d = arms.setdefault(arm, {"tokens": [], "wall_s": [], "cpu_s": []})
        d["tokens"].append(tokens), d["wall_s"].append(wall), d["cpu_s"].append(cpu)

    for r in range(int(a.rounds)):
        ro, w, c = _clock(lambda r=r: sample_ours(model, tok, prompts, a, seed=r))
        add("sampler", int(ro.response_lengths.sum()), w, c)
        toks, w, c = _clock(lambda r=r: sample_hf(model, tok, prompts, a, seed=r))
        add("hf", toks, w, c)
        for part, (w, c) in step_parts(model, opt, ro, float(a.temperature), int(a.n)).items():
            add(part, int(ro.response_lengths.sum()), w, c)
        print(
            f"[bench_real_model] round {r + 1}/{a.rounds}: "
            + ", ".join(f"{k} {v['wall_s'][-1]:.1f}s" for k, v in arms.items()),
            flush=True,
        )
    out: dict[str, Any] = {}
    for arm, d in arms.items():
        out[arm] = {
            "tokens": _median(d["tokens"]),
            "wall_s": _median(d["wall_s"]),
            "cpu_s": _median(d["cpu_s"]),
            "tokens_per_s_wall": _median([t / w for t, w in zip(d["tokens"], d["wall_s"], strict=True)]),
            "tokens_per_s_cpu": _median([t / c for t, c in zip(d["tokens"], d["cpu_s"], strict=True)]),
            "rounds": d,
        }
    ratios = {
        f"sampler_over_hf_tokens_per_s_{clock}": round(
            out["sampler"][f"tokens_per_s_{clock}"] / out["hf"][f"tokens_per_s_{clock}"], 3
        )
        for clock in ("wall", "cpu")
    }
    step = {p: out[p]["wall_s"] for p in ("sampler", "logprobs", "update")}
    total = sum(step.values())
    split = {p: {"wall_s": s, "share": round(s / total, 3)} for p, s in step.items()}
    print(f"[bench_real_model] sampler/hf tokens/s: {ratios}; one step's split: {split}")
    if a.record:
        results.write_table(
            "bench_real_model",
            "latest",
            {
                "settings": OmegaConf.to_container(a, resolve=True),
                "model": {k: meta.get(k) for k in MODEL_KEYS},
                "arms": out,
                "ratios": ratios,
                "step_split": split,
            },
        )
    return 0


main = hydra_main("command", "bench_real_model", command)


if __name__ == "__main__":
    main()
