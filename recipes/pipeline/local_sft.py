"""CPU SFT of a tiny HF checkpoint on a ``messages`` parquet, and sampled pass-rate evaluation.

:func:`sft` trains the model at ``init`` on veRL-SFT-format rows (``messages``: the prompt turns
plus one final assistant turn; loss on the assistant tokens + EOS only, as veRL's
``MultiTurnSFTDataset`` masks it) with a **constant** learning rate (AdamW, linear warmup, grad
clip 1) and saves a standard HF checkpoint (no ``rlvr_meta.json``, so the local engine uses it as
is). With ``min_pass`` it evaluates the sampled (T=1) pass rate every ``eval_every`` steps and
stops at the first evaluation reaching it: the "learnable band" start the feasibility runs found
RL needs (an annealed, over-trained start gave RL no consistent gradient). :func:`pass_rates`
samples held-out prompts with the local engine's KV-cache sampler and scores them with the
verifier; it returns per-problem correctness so callers can compute confidence intervals.
Not covered: multi-turn losses on every assistant turn, packing, checkpoint/resume inside a run
(an interrupted SFT stage restarts; it takes seconds to minutes at laptop scale).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from recipes.local import model as tiny
from recipes.local.data import Prompt, load_prompts
from recipes.local.sampler import generate
from recipes.local.sft import sft_step


def _examples(
    path: str | Path, tok: Any, max_prompt: int, max_resp: int
) -> list[tuple[list[int], list[int]]]:
    from data_pipelines.io import read_rows

    out = []
    for i, row in enumerate(read_rows(Path(path))):
        msgs = [{"role": m["role"], "content": m["content"]} for m in row["messages"]]
        if not msgs or msgs[-1]["role"] != "assistant":
            raise ValueError(f"[sft] {path} row {i}: messages must end with an assistant turn")
        ids = tok.apply_chat_template(msgs[:-1], tokenize=True, add_generation_prompt=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        tgt = tok(msgs[-1]["content"] + tok.eos_token, add_special_tokens=False)["input_ids"]
        if len(ids) > max_prompt or len(tgt) > max_resp:
            raise ValueError(
                f"[sft] {path} row {i}: prompt {len(ids)} / response {len(tgt)} tokens exceed "
                f"max_prompt_length={max_prompt} / max_response_length={max_resp} (fix: raise them "
                "in the stage's local: section or shorten the data)"
            )
        out.append((ids, tgt))
    if not out:
        raise ValueError(f"[sft] {path} has no rows (fix: check the stage that wrote it)")
    return out


def pass_rates(
    model: torch.nn.Module,
    tok: Any,
    prompts: list[Prompt],
    reward_fn: Callable[..., Any],
    max_new: int,
    seed: int,
    n: int = 1,
    batch: int = 128,
) -> list[float]:
    """Per-prompt share of ``n`` sampled (T=1) responses the verifier accepts (``acc``)."""
    g = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    rates: list[float] = []
    for i in range(0, len(prompts), batch):
        chunk = prompts[i : i + batch]
        ro = generate(
            model, [p.ids for p in chunk], n, max_new, tok.eos_token_id, tok.pad_token_id, generator=g
        )
        lens = ro.response_lengths.tolist()
        texts = tok.batch_decode(
            [ro.responses[j, : lens[j]].tolist() for j in range(len(lens))], skip_special_tokens=True
        )
        for k, p in enumerate(chunk):
            hits = 0.0
            for t in texts[k * n : (k + 1) * n]:
                r = reward_fn(
                    data_source=p.data_source,
                    solution_str=t,
                    ground_truth=p.ground_truth,
                    extra_info=p.extra_info,
                )
                hits += float(bool(r.get("acc", r["score"] > 0)) if isinstance(r, dict) else r > 0)
            rates.append(hits / n)
    model.train(was_training)
    return rates


def sft(
    init: str | Path,
    data: str | Path,
    out: str | Path,
    *,
    eval_file: str | Path | None,
    reward_fn: Callable[..., Any],
    seed: int,
    lr: float = 2e-3,
    betas: tuple[float, float] = (0.9, 0.98),
    warmup_steps: int = 50,
    batch_size: int = 64,
    max_steps: int = 1500,
    eval_every: int = 25,
    eval_n: int = 128,
    min_pass: float | None = 0.3,
    max_prompt_length: int = 32,
    max_response_length: int = 64,
    threads: int = 1,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """SFT ``init`` on ``data``; save to ``out``; return steps, last pass rate, loss and timings."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model, tok = tiny.load(init)
    model.train()
    ex = _examples(data, tok, max_prompt_length, max_response_length)
    evals = (
        load_prompts(eval_file, tok, max_prompt_length, limit=eval_n) if eval_file and eval_every > 0 else []
    )
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=tuple(betas), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / max(1, warmup_steps)))
    rng = random.Random(seed)
    t0, step, rate, history, loss_v = time.time(), 0, float("nan"), [], float("nan")
    stopped = "max_steps"
    while step < max_steps:
        idx = [rng.randrange(len(ex)) for _ in range(batch_size)]
        loss = sft_step(model, tok.pad_token_id, [ex[i][0] for i in idx], [ex[i][1] for i in idx], opt, sched)
        step += 1
        loss_v = float(loss.item())
        if evals and step % eval_every == 0:
            rates = pass_rates(model, tok, evals, reward_fn, max_response_length, seed + step)
            rate = sum(rates) / len(rates)
            history.append([step, round(loss_v, 4), rate])
            log(
                f"[sft] step {step}: loss {loss_v:.3f}, sampled pass {rate:.2f}"
                f"{f' (stop at >= {min_pass:.2f})' if min_pass is not None else ''}, {time.time() - t0:.0f}s"
            )
            if min_pass is not None and rate >= min_pass:
                stopped = "min_pass"
                break
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    tiny.save(model.eval(), tok, tmp)
    if out.exists():
        import shutil

        shutil.rmtree(out)
    tmp.rename(out)
    info = {
        "steps": step,
        "stopped_by": stopped,
        "last_pass": rate,
        "last_loss": loss_v,
        "history": history,
        "examples": len(ex),
        "seconds": round(time.time() - t0, 1),
        "num_params": tiny.num_params(model),
    }
    (out.parent / "sft_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info
