"""Local-engine speed: per-step time vs the engine before its fast path, TRL's GRPOTrainer and the
machine's floor, interleaved.

Same model, task and settings for all arms, in one of two step shapes (``shape``): ``coldstart``
(the cached seed-0 cold-start checkpoint on arithmetic, max 64 new tokens: short, even responses)
or ``base`` (the laptop base model on chain sums, ``scale=laptop_base``, max 96 new tokens: the
setting the ablations run in, where response lengths spread widely); 8 prompts x G=8 completions, T=1, token-level loss ("dapo"/token-mean),
clip 0.2/0.28, beta 0, one update per step, AdamW lr 1e-4 with 10 warmup steps, betas
(0.9, 0.99), grad clip 1, fp32, no gradient checkpointing, one torch thread.

- engine: ``recipes.local.trainer.Engine.train_step`` (dapo recipe at laptop scale, filter and
  overlong penalty off so every step does the same work as TRL's), with its fast path
  (``local.fast=true``, the default: ``core.fastpath``).
- engine (before): the same engine with ``local.fast=false`` -- the plain path, the engine as it
  was before the fast path; before/engine is the fast path's speed-up. Its own model copy and
  generator seed, so both engines do the same steps.
- trl: ``trl.GRPOTrainer`` at :data:`TRL` (``bf16=False``, ``gradient_checkpointing=False``, ``use_cpu=True``),
  step times from a callback (``on_step_begin`` -> ``on_step_end``).
- floor (the limit the engine is measured against): the engine's own generation
  (``core.sampler.generate`` under the fast path's ``decoding``, same settings) + one forward and
  backward of the same sequences with the engine's own log-prob function (the fast path's
  ``bucketed_logprobs``) + one fused AdamW step -- the work no RL step can skip, so engine/floor
  is the overhead of everything else (rewards, advantages, the loss, bookkeeping, logging).
- naive loop (a named baseline, not a limit): a plain KV-cache sampling loop with one prefill per
  sample + a forward/backward over full-vocabulary logits at every position; engine/naive measures
  what the engine's shortcuts (shared prefill, finished rows dropped, response-only logits) buy.

Rounds alternate the five (``rounds`` x ``steps`` each) so load changes hit all of them; reported
are medians on both clocks -- wall (what a user waits) and CPU of this process (robust to other
processes' load) -- and the ratios before/engine, TRL/engine (target >= 1.10) and engine/floor
(target <= 1.05), each named with its clock. Recorded in ``results/bench_engine/latest.json``
(``shape=base``: ``results/bench_engine_base/latest.json``; ``core.results``).
A Hydra app (``conf/command/bench_engine.yaml``):

    python -m benchmarks.bench_engine [shape=coldstart|base] [rounds=4] [steps=5]
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

import torch
from omegaconf import DictConfig
from verl.trainer.ppo.reward import get_custom_reward_fn

from core import model as models
from core import results
from core.cli import UsageError, hydra_main
from core.compose import compose
from core.data import load_prompts
from core.fastpath import bucketed_logprobs, decoding, plain_rollout
from core.sampler import generate, response_logprobs
from recipes.local.coldstart import ensure_model
from recipes.local.data import ensure_task_files
from recipes.local.pretrain import ensure_base_model
from recipes.local.trainer import Engine

#: The peer's version. trl 1.11.0 is the newest that still ships ``trl.experimental.ppo``, which veRL
#: 0.9.1's FSDP model patch imports whenever trl is installed (later trl removes it and breaks veRL's
#: actor engine in the same environment); veRL's own pin, trl 0.27.0, fails to import under the
#: transformers 5 this project runs. ``pyproject.toml`` (extra ``bench``) and the Makefile install it.
TRL = "trl==1.11.0"

#: Step shapes: the scale profile whose model and task the arms share, and the results folder.
#: ``coldstart``: the SFT cold start on arithmetic (short, even responses); ``base``: the laptop base
#: model on chain sums (the R1-Zero setting the ablations run in: response lengths spread widely).
SHAPES = {"coldstart": ("laptop", "bench_engine"), "base": ("laptop_base", "bench_engine_base")}


def _cfg(shape: str, *extra: str) -> DictConfig:
    return compose(
        [
            "recipe=dapo",
            f"scale={SHAPES[shape][0]}",
            "algorithm.filter_groups.enable=false",
            "reward.reward_kwargs.overlong_buffer_cfg.enable=false",
            "data.train_batch_size=8",  # 8 prompts x 8 completions, as TRL's 64 per device
            "actor_rollout_ref.actor.ppo_mini_batch_size=8",  # one update per step, as TRL
            "local.eval_samples=8",
            "rlvr.seed=0",
            *extra,
        ]
    )


@torch.no_grad()
def bare_generate(model, prompts: list[list[int]], n: int, max_new: int, eos: int, pad: int) -> torch.Tensor:
    """The minimal sampler: left-padded batch of n copies per prompt, KV cache, multinomial."""
    rows = [p for p in prompts for _ in range(n)]
    w = max(len(p) for p in rows)
    ids = torch.tensor([[pad] * (w - len(p)) + p for p in rows])
    attn = (torch.arange(w)[None] >= torch.tensor([w - len(p) for p in rows])[:, None]).long()
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
    toks, done, nxt = [], torch.zeros(len(rows), dtype=torch.bool), pos[:, -1:] + 1
    for _ in range(max_new):
        tok = torch.multinomial(out.logits[:, -1].softmax(-1), 1).squeeze(-1)
        toks.append(tok)
        done |= tok == eos
        if done.all():
            break
        attn = torch.cat([attn, torch.ones(len(rows), 1, dtype=attn.dtype)], 1)
        out = model(
            input_ids=tok[:, None],
            attention_mask=attn,
            position_ids=nxt,
            past_key_values=out.past_key_values,
            use_cache=True,
        )
        nxt = nxt + 1
    return torch.cat([ids, torch.stack(toks, 1)], 1), attn


def now() -> tuple[float, float]:
    """(wall, CPU) clocks: CPU time of this process is robust to other processes' load."""
    return time.perf_counter(), time.process_time()


def since(t0: tuple[float, float]) -> tuple[float, float]:
    w, c = now()
    return w - t0[0], c - t0[1]


def naive_step(model, prompts, eos, pad, max_new: int) -> tuple[float, float]:
    """The naive baseline: one prefill per sample, full logits, forward+backward (no optimizer)."""
    t0 = now()
    seqs, attn = bare_generate(model, prompts, 8, max_new, eos, pad)
    attn = torch.cat([attn, torch.ones(attn.shape[0], seqs.shape[1] - attn.shape[1], dtype=attn.dtype)], 1)
    logits = model(input_ids=seqs, attention_mask=attn).logits
    loss = torch.log_softmax(logits[:, :-1], -1).gather(-1, seqs[:, 1:, None]).mean()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return since(t0)


def floor_step(model, opt, prompts, eos, pad, g, max_new: int) -> tuple[float, float]:
    """The floor: the engine's generation + its forward/backward of the same sequences + an AdamW step
    (the fast path's pieces: ``decoding``, ``bucketed_logprobs``, a fused AdamW)."""
    t0 = now()
    with decoding(model):
        ro = generate(model, prompts, 8, max_new, eos, pad, generator=g)
    ro = plain_rollout(ro)
    R = int(ro.response_mask.sum(-1).max())  # as the engine: no padding beyond the longest response
    m = ro.response_mask[:, :R]
    lp, _ = bucketed_logprobs(model, ro.prompts, ro.prompt_mask, ro.responses[:, :R], m, group=8)
    (-(lp * m).sum() / m.sum()).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return since(t0)


def make_trl(model_dir: Path, tok, prompts, steps: int, out: Path, max_new: int):
    from datasets import Dataset  # TRL's stack: only the TRL arm needs it
    from transformers import Qwen2ForCausalLM, TrainerCallback  # same
    from trl import GRPOConfig, GRPOTrainer  # optional: `make bench-engine` installs trl

    from rewards import compute_score  # the TRL arm's reward function (kept beside the TRL imports)

    times: list[tuple[float, float]] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t0 = now()

        def on_step_end(self, args, state, control, **kw):
            times.append(since(self.t0))

    def reward(prompts, completions, ground_truth, data_source, **kw):
        return [
            compute_score(d, c[0]["content"] if isinstance(c, list) else c, g)["score"]
            for c, g, d in zip(completions, ground_truth, data_source, strict=True)
        ]

    ds = Dataset.from_list(
        [
            {
                "prompt": [{"role": "user", "content": p.text}],
                "ground_truth": p.ground_truth,
                "data_source": p.data_source,
            }
            for p in prompts
        ]
    )
    args = GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=64,
        num_generations=8,
        max_completion_length=max_new,
        learning_rate=1e-4,
        lr_scheduler_type="constant_with_warmup",
        warmup_steps=10,
        adam_beta1=0.9,
        adam_beta2=0.99,
        weight_decay=0.01,
        max_grad_norm=1.0,
        beta=0.0,
        loss_type="dapo",
        epsilon=0.2,
        epsilon_high=0.28,
        scale_rewards="group",
        num_iterations=1,
        temperature=1.0,
        top_p=1.0,
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        report_to="none",
        save_strategy="no",
        logging_steps=1000,
        max_steps=steps,
        dataloader_num_workers=0,
        seed=0,
        disable_tqdm=True,
    )
    model = Qwen2ForCausalLM.from_pretrained(str(model_dir), torch_dtype=torch.float32)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=ds,
        processing_class=tok,
        callbacks=[Timer()],
    )
    return trainer, times


def _median_time(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append(time.process_time() - t0)
    return statistics.median(ts)


def savings(model, tok, prompts, reps: int, max_new: int) -> dict[str, float]:
    """What each saving of the engine is worth on one step's batch (8 prompts x 8, same model)."""
    eos, pad = tok.eos_token_id, tok.pad_token_id
    ids = [p.ids for p in prompts]
    g = torch.Generator().manual_seed(0)
    ro = generate(model, ids, 8, max_new, eos, pad, generator=g)
    R = int(ro.response_mask.sum(-1).max())

    def fwd_bwd(resp_only: bool, width: int, group: int = 1) -> None:
        resp = torch.nn.functional.pad(ro.responses, (0, width - ro.responses.shape[1]), value=pad)[:, :width]
        m = torch.nn.functional.pad(ro.response_mask, (0, width - ro.response_mask.shape[1]))[:, :width]
        if resp_only:
            lp, _ = response_logprobs(model, ro.prompts, ro.prompt_mask, resp, m, group=group)
        else:
            P = ro.prompts.shape[1]
            seq = torch.cat([ro.prompts, resp], 1)
            attn = torch.cat([ro.prompt_mask, m], 1)
            logits = model(
                input_ids=seq, attention_mask=attn, position_ids=(attn.cumsum(-1) - 1).clamp(min=0)
            ).logits
            lp = torch.log_softmax(logits[:, P - 1 : -1].float(), -1).gather(-1, resp[..., None]).squeeze(-1)
        (-(lp * m).sum() / m.sum()).backward()
        model.zero_grad(set_to_none=True)

    rows = [i for i in ids for _ in range(8)]
    t = {
        "generate, prefill shared by the group": _median_time(
            lambda: generate(model, ids, 8, max_new, eos, pad, generator=g), reps
        ),
        "generate, prefill per sample": _median_time(
            lambda: generate(model, rows, 1, max_new, eos, pad, generator=g), reps
        ),
        "fwd+bwd, prompt encoded once per group (engine)": _median_time(lambda: fwd_bwd(True, R, 8), reps),
        "fwd+bwd, LM head on response positions only": _median_time(lambda: fwd_bwd(True, R), reps),
        "fwd+bwd, logits for every position": _median_time(lambda: fwd_bwd(False, R), reps),
        f"fwd+bwd, padded to max_response_length ({max_new})": _median_time(
            lambda: fwd_bwd(True, max_new), reps
        ),
    }
    with torch.no_grad():
        t["extra old-log-prob forward (avoided)"] = _median_time(
            lambda: response_logprobs(model, ro.prompts, ro.prompt_mask, ro.responses, ro.response_mask), reps
        )
    print(f"\nsavings (median CPU seconds on one step's 64 sequences, response length <= {R}):")
    for k, v in t.items():
        print(f"  {k:<48} {v:.4f}")
    return t


def _medians(times: dict[str, list[tuple[float, float]]]) -> dict[str, dict[str, float]]:
    return {
        clock: {arm: statistics.median(x[i] for x in xs) for arm, xs in times.items() if xs}
        for i, clock in enumerate(("wall", "cpu"))
    }


def _rounds(a: DictConfig, eng, before, trl, trl_times, floor, naive, train, max_new: int):
    """Interleave the five arms ``a.rounds`` times, ``a.steps`` steps each; per-step (wall, CPU) times."""
    floor_model, opt = floor
    eos, pad = eng.tok.eos_token_id, eng.tok.pad_token_id
    g = torch.Generator().manual_seed(0)
    times: dict[str, list[tuple[float, float]]] = {
        arm: [] for arm in ("engine", "before", "trl", "floor", "naive")
    }
    eng.train_step()  # warm-up (imports, allocator)
    before.train_step()
    floor_step(floor_model, opt, [p.ids for p in train[:8]], eos, pad, g, max_new)
    naive_step(naive, [p.ids for p in train[:8]], eos, pad, max_new)
    for r in range(a.rounds):
        for _ in range(a.steps):
            for arm, e in (("engine", eng), ("before", before)):
                t0 = now()
                e.train_step()
                times[arm].append(since(t0))
        n0 = len(trl_times)
        trl.train()
        times["trl"] += trl_times[n0 + 1 :]  # each train() call's first step includes TRL's set-up
        for k in range(a.steps):
            ids = [p.ids for p in train[(r * a.steps + k) * 8 : (r * a.steps + k + 1) * 8]]
            times["floor"].append(floor_step(floor_model, opt, ids, eos, pad, g, max_new))
            times["naive"].append(naive_step(naive, ids, eos, pad, max_new))
        last = {arm: xs[-a.steps :] for arm, xs in times.items()}
        print(f"round {r}: wall " + "  ".join(f"{k} {v:.3f}s" for k, v in _medians(last)["wall"].items()))
    return times


def _trl_version() -> str | None:
    """The installed trl's version, None when it is not installed (read without importing it)."""
    if importlib.util.find_spec("trl") is None:
        return None
    return importlib.metadata.version("trl")


def command(a: DictConfig) -> int:
    """Interleave the five arms, print per-round and overall medians and the ratios, record them."""
    if str(a.shape) not in SHAPES:
        raise ValueError(
            f"[shape] {a.shape!r} is not one of {sorted(SHAPES)} (fix: shape=coldstart or shape=base)"
        )
    have = _trl_version()  # before minutes of model building, not after
    if have != TRL.split("==")[1]:
        raise UsageError(
            f"[trl] {'not installed' if have is None else f'trl {have} is installed'}: the TRL arm needs "
            f"{TRL} (fix: make bench-engine, or make results NAME=bench_engine, which install it; or "
            f"pip install '{TRL}')"
        )
    shape, experiment = str(a.shape), SHAPES[str(a.shape)][1]
    torch.set_num_threads(int(a.threads))
    arms = ["engine", "before", "trl", "floor", "naive"]
    results.write_experiment(experiment, design={"arms": arms, "shape": shape})
    cfg = _cfg(shape)
    max_new = int(cfg.data.max_response_length)
    reward_fn = get_custom_reward_fn(cfg)
    ensure_task_files(cfg)
    build = ensure_base_model if cfg.local.pretrain is not None else ensure_model  # as the engine chooses
    path = build(cfg, reward_fn)
    model, tok = models.load(path)
    train = load_prompts(cfg.data.train_files, tok, int(cfg.data.max_prompt_length))
    eng = Engine(cfg, model, tok, reward_fn, train, train[:8])
    before = Engine(_cfg(shape, "local.fast=false"), models.load(path)[0], tok, reward_fn, train, train[:8])
    floor_model, _ = models.load(path)
    floor_model.train()
    opt = torch.optim.AdamW(floor_model.parameters(), lr=1e-4, betas=(0.9, 0.99), fused=True)
    naive_model, _ = models.load(path)
    naive_model.train()
    trl, trl_times = make_trl(path, tok, train[:4096], a.steps, Path(tempfile.mkdtemp()), max_new)
    times = _rounds(a, eng, before, trl, trl_times, (floor_model, opt), naive_model, train, max_new)
    med = _medians(times)
    ratios = {
        clock: {
            "before/engine": med[clock]["before"] / med[clock]["engine"],
            "trl/engine": med[clock]["trl"] / med[clock]["engine"],
            "engine/floor": med[clock]["engine"] / med[clock]["floor"],
            "engine/naive": med[clock]["engine"] / med[clock]["naive"],
        }
        for clock in med
    }
    print(f"\nper-step median over {len(times['engine'])} steps each ({a.threads} thread(s)):")
    for clock in med:
        print(
            f"  {clock:>4}: "
            + "  ".join(f"{k} {v:.3f} s" for k, v in med[clock].items())
            + "   "
            + "  ".join(f"{k} ({clock}) = {v:.2f}" for k, v in ratios[clock].items())
        )
    reps = int(a.savings_reps)
    saved = savings(floor_model, tok, train[:8], reps, max_new) if reps > 0 else {}
    out = {
        "settings": {
            "rounds": int(a.rounds),
            "steps": int(a.steps),
            "threads": int(a.threads),
            "shape": shape,
            "scale": SHAPES[shape][0],
            "max_response_length": max_new,
            "trl": have,
        },
        "median_s": med,
        "ratios": ratios,
        "targets": {"before/engine": "> 1", "trl/engine": ">= 1.10", "engine/floor": "<= 1.05"},
        "steps_s": {arm: [list(x) for x in xs] for arm, xs in times.items()},
        "savings_cpu_s": saved,
    }
    print(f"recorded {results.write_table(experiment, 'latest', out)}")
    return 0


main = hydra_main("command", "bench_engine", command)


if __name__ == "__main__":
    main()
