"""``python -m analysis.estimate recipe=<name>``: what a recipe costs in generated tokens.

Composes the recipe with Hydra's compose API (``conf/config.yaml`` + ``recipe=<name>`` + any
extra overrides such as ``scale=laptop``) and computes, from ``data.train_batch_size`` (prompts
per step), ``actor_rollout_ref.rollout.n`` (answers per prompt), the mean response length
(``response_tokens=``, default ``data.max_response_length`` -- an upper bound) and the number of
training prompts:

    generated tokens / step  = prompts/step × n × response tokens × generation batches/step
    generated tokens / epoch = prompts × n × response tokens × generation batches/step
    SFT tokens / epoch       = prompts × sft_tokens (one reference answer per prompt)

and generation GPU-hours at ``throughput`` generated tokens/s per GPU, for one epoch and for the
configured run length (``trainer.total_training_steps``, else ``trainer.total_epochs`` epochs).
The seed document's example (2,000 prompts × 8 answers × 600 tokens = 9.6M generated tokens
against 0.4M SFT tokens at 200 per answer, 24×) is ``recipe=grpo prompts=2000
actor_rollout_ref.rollout.n=8 response_tokens=600``. It does not model prompt prefill, the
training forward/backward passes, or the reference/old-policy log-prob passes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf, open_dict

from core.cli import hydra_main, require, route_argv
from core.compose import compose

# Published training-set sizes, used only when data.train_files does not exist locally.
PUBLISHED_PROMPTS = {
    "gsm8k": (7473, "GSM8K train split (Cobbe et al. 2021)"),
    "math": (7500, "MATH train split (Hendrycks et al. 2021)"),
    "dapo_math_17k": (17000, "DAPO paper: ~17K prompts (Yu et al. 2025, sec. 4.1)"),
}


def compose_recipe(recipe: str, overrides: Sequence[str] = ()) -> tuple[DictConfig, dict[str, str]]:
    """The composed config and the Hydra group choices (``dataset``, ``scale``...)."""
    cfg = compose([f"recipe={recipe}", *overrides], hydra=True)
    choices = {str(k): str(v) for k, v in cfg.hydra.runtime.choices.items()}
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg, choices


def count_prompts(cfg: DictConfig, dataset: str) -> tuple[int, str]:
    """(training prompts, where the number came from)."""
    files = OmegaConf.select(cfg, "data.train_files")
    files = list(files) if OmegaConf.is_list(files) else [files]
    paths = [Path(str(f)).expanduser() for f in files if f]
    if paths and all(p.exists() for p in paths):
        return sum(
            pq.ParquetFile(p).metadata.num_rows for p in paths
        ), f"rows of {', '.join(map(str, paths))}"
    task_n = OmegaConf.select(cfg, "local.task.train_n")
    if task_n:
        return int(task_n), "local.task.train_n (generated on first use)"
    if dataset in PUBLISHED_PROMPTS:
        n, src = PUBLISHED_PROMPTS[dataset]
        return n, src + f" ({paths[0] if paths else 'data file'} not found)"
    raise ValueError(f"estimate: cannot count prompts of dataset {dataset!r}; pass prompts=<N>")


def estimate(cfg: DictConfig, recipe_cfg: DictConfig, choices: dict[str, str]) -> dict[str, Any]:
    """The numbers (pure arithmetic on the composed config and the estimate settings)."""
    batch = int(recipe_cfg.data.train_batch_size)
    n = int(recipe_cfg.actor_rollout_ref.rollout.n)
    max_len = int(recipe_cfg.data.max_response_length)
    resp = float(cfg.response_tokens) if cfg.response_tokens is not None else float(max_len)
    if cfg.prompts is not None:
        prompts, prompts_src = int(cfg.prompts), "prompts= argument"
    else:
        prompts, prompts_src = count_prompts(recipe_cfg, choices.get("dataset", ""))
    gen = float(cfg.gen_batches)
    per_step = batch * n * resp * gen
    per_epoch = prompts * n * resp * gen
    sft_epoch = prompts * float(cfg.sft_tokens)
    steps_per_epoch = max(1, prompts // batch)
    total_steps = OmegaConf.select(recipe_cfg, "trainer.total_training_steps")
    epochs = OmegaConf.select(recipe_cfg, "trainer.total_epochs") or 1
    run_steps = int(total_steps) if total_steps else int(epochs) * steps_per_epoch
    tput = float(cfg.throughput)
    return {
        "recipe": str(cfg.recipe),
        "choices": {k: choices[k] for k in ("dataset", "model", "scale") if k in choices},
        "prompts_per_step": batch,
        "answers_per_prompt": n,
        "response_tokens": resp,
        "response_tokens_source": "response_tokens="
        if cfg.response_tokens is not None
        else "data.max_response_length (upper bound)",
        "max_response_length": max_len,
        "prompts": prompts,
        "prompts_source": prompts_src,
        "gen_batches_per_step": gen,
        "generated_tokens_per_step": per_step,
        "generated_tokens_per_epoch": per_epoch,
        "sft_tokens_per_epoch": sft_epoch,
        "rl_to_sft_ratio": per_epoch / sft_epoch if sft_epoch else float("nan"),
        "steps_per_epoch": steps_per_epoch,
        "run_steps": run_steps,
        "generated_tokens_per_run": per_step * run_steps,
        "throughput_tokens_per_s_per_gpu": tput,
        "gpu_hours_per_epoch": per_epoch / tput / 3600,
        "gpu_hours_per_run": per_step * run_steps / tput / 3600,
        "filter_enabled": bool(OmegaConf.select(recipe_cfg, "algorithm.filter_groups.enable", default=False)),
    }


def _m(x: float) -> str:
    return f"{x / 1e6:,.2f}M" if x >= 1e5 else f"{x:,.0f}"


def format_estimate(e: dict[str, Any]) -> str:
    lines = [
        f"recipe {e['recipe']} ({', '.join(f'{k}={v}' for k, v in e['choices'].items())})",
        f"  per step : {e['prompts_per_step']} prompts × {e['answers_per_prompt']} answers × "
        f"{e['response_tokens']:,.0f} tokens ({e['response_tokens_source']}) × {e['gen_batches_per_step']:g} "
        f"gen batches = {_m(e['generated_tokens_per_step'])} generated tokens",
        f"  per epoch: {e['prompts']:,} prompts ({e['prompts_source']}) → {_m(e['generated_tokens_per_epoch'])} "
        f"generated tokens vs {_m(e['sft_tokens_per_epoch'])} SFT tokens ({e['rl_to_sft_ratio']:.{0 if e['rl_to_sft_ratio'] >= 10 else 1}f}× SFT), "
        f"{e['steps_per_epoch']:,} steps",
        f"  run      : {e['run_steps']:,} steps → {_m(e['generated_tokens_per_run'])} generated tokens",
        f"  GPU-hours (generation only, {e['throughput_tokens_per_s_per_gpu']:,.0f} tok/s/GPU assumed): "
        f"{e['gpu_hours_per_epoch']:,.1f} per epoch, {e['gpu_hours_per_run']:,.1f} per run",
    ]
    if e["filter_enabled"] and e["gen_batches_per_step"] == 1.0:
        lines.append(
            "  note: dynamic sampling is on; it draws more than one generation batch per step "
            "(set gen_batches=, e.g. 2, or read rlvr/gen_batches from a run)"
        )
    return "\n".join(lines)


def command(cfg: DictConfig) -> int:
    """Compose the recipe with ``cfg.overrides``, print the estimate (and write ``out``)."""
    require(cfg, "recipe", command="analysis.estimate")
    recipe_cfg, choices = compose_recipe(str(cfg.recipe), list(cfg.overrides))
    e = estimate(cfg, recipe_cfg, choices)
    print(format_estimate(e))
    if cfg.out:
        Path(str(cfg.out)).parent.mkdir(parents=True, exist_ok=True)
        Path(str(cfg.out)).write_text(json.dumps(e, indent=1))
        print(f"wrote {cfg.out}")
    return 0


main = hydra_main("analysis", "estimate", command)


if __name__ == "__main__":
    route_argv("analysis", "estimate")  # keys that are not estimate's own are the recipe's overrides
    main()
