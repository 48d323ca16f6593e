"""Data stages: ``task`` (RL prompts), ``traces`` (cold-start SFT set), ``rejection``, ``mix``.

- ``task``: locally, writes ``train.parquet``/``test.parquet`` and ``dev.parquet`` (the SFT stages'
  stopping evaluations, so the test split only serves the final evaluation) with a registered task
  generator (``data_pipelines.tasks.TASKS``); on veRL, names the recipe dataset's files and the
  ``make_data`` command that writes them.
- ``traces``: the cold-start set (R1 stage 1 in miniature): the first ``n`` training prompts with a
  programmatic trace from :data:`TRACES` as the assistant turn, in veRL's SFT format
  (``messages``). On veRL: a user-supplied file of readable long-CoT samples (``verl.data``).
- ``rejection``: :func:`data_pipelines.filter.run` on the stage model: ``n`` samples per prompt,
  the correct, well-formatted ones kept (:mod:`data_pipelines.rejection`), as ``sft.parquet``.
- ``mix``: the rejection set plus non-reasoning rows so that they make ``ratio`` of the result
  (R1: ~600k reasoning + ~200k non-reasoning, ratio 0.25). Locally the non-reasoning rows come
  from :data:`GENERAL` (answers without a ``<think>`` block); on veRL from ``verl.general_data``.
``python -m recipes.pipeline mix reasoning=<parquet> general=<parquet> ratio=0.25 out=<parquet>
seed=0`` is the same mix as a command (what the veRL launch script calls).
Not covered: readability judging with a model, deduplication across the two sources.
"""

from __future__ import annotations

import random
import shlex
import string
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from core.compose import CONF_DIR
from core.data import read_rows
from core.registry import Registry
from data_pipelines import filter as dfilter
from data_pipelines.io import write_rows
from data_pipelines.rejection import write_sft
from data_pipelines.tasks import TASKS
from data_pipelines.tasks.arithmetic import render_trace
from recipes.pipeline.core import STAGES, StageContext, log

TraceFn = Callable[[dict[str, Any]], str]
TRACES: Registry[TraceFn] = Registry("trace renderer")
GENERAL: Registry[Callable[[int, int], list[dict[str, Any]]]] = Registry("non-reasoning data source")


@TRACES.register("arithmetic")
def _arith(extra: dict[str, Any]) -> str:
    return render_trace(int(extra["a"]), int(extra["b"]))


@TRACES.register("arithmetic_readable")
def _arith_readable(extra: dict[str, Any]) -> str:
    """The column trace led by English words, so the reasoning has a language to be consistent in.

    >>> _arith_readable({"a": 874, "b": 404})
    '<think>add columns: 4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>'
    """
    return _arith(extra).replace("<think>", "<think>add columns: ", 1)


@GENERAL.register("copy")
def _copy_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Non-reasoning chat rows: ``copy: <word>`` answered directly with the word (no reasoning)."""
    rng = random.Random(f"copy/{seed}")
    rows = []
    for i in range(n):
        w = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))
        rows.append(
            {
                "messages": [{"role": "user", "content": f"copy: {w}"}, {"role": "assistant", "content": w}],
                "data_source": "general/copy",
                "ground_truth": w,
                "prompt_index": i,
                "sample_index": 0,
            }
        )
    return rows


@STAGES.register("task")
def task_stage(ctx: StageContext) -> dict[str, Any]:
    """RL prompt files: generated locally, or the veRL dataset's files + its ``make data`` command."""
    if ctx.engine == "verl":
        name = str(ctx.need("dataset"))
        ds = OmegaConf.load(CONF_DIR / "dataset" / f"{name}.yaml")
        train, test = str(ds.data.train_files), str(ds.data.val_files)
        cmd = [sys.executable, "-m", "data_pipelines.make_data", f"data={name}", f"out={Path(train).parent}"]
        return {
            "train": train,
            "test": test,
            "dev": test,
            "data": train,
            "dataset": name,
            "commands": [shlex.join(cmd)],
        }
    name = str(ctx.need("name"))
    params = dict(ctx.opt("params") or {})
    out = {}
    sizes = {
        "train": int(ctx.need("train_n")),
        "test": int(ctx.need("val_n")),
        "dev": int(ctx.opt("dev_n", 256)),
    }
    for split, n in sizes.items():
        path = ctx.run_dir / f"{split}.parquet"
        if not ctx.dry_run:
            write_rows(TASKS.get(name)(n=n, seed=int(ctx.opt("seed", 0)), split=split, **params), path)
        out[split] = str(path)
    return {**out, "data": out["train"], "task": name}


@STAGES.register("traces")
def traces_stage(ctx: StageContext) -> dict[str, Any]:
    """The cold-start SFT set: programmatic traces locally, a user file on veRL."""
    if ctx.engine == "verl":
        path = str(ctx.need("data_file"))
        if not ctx.dry_run and not Path(path).expanduser().is_file():
            raise FileNotFoundError(
                f"[stages.{ctx.plan.base}.verl.data_file] {path} does not exist (fix: provide "
                "a parquet of readable long-CoT samples with a `messages` column)"
            )
        return {"data": path, "commands": []}
    render = TRACES.get(str(ctx.need("renderer")))
    rows = read_rows(ctx.input("data")["train"])[: int(ctx.need("n"))]
    recs = [
        {
            "messages": [*r["prompt"], {"role": "assistant", "content": render(r["extra_info"])}],
            "data_source": r["data_source"],
            "ground_truth": str(r["reward_model"]["ground_truth"]),
            "prompt_index": i,
            "sample_index": 0,
        }
        for i, r in enumerate(rows)
    ]
    path = ctx.run_dir / "sft.parquet"
    if not ctx.dry_run:
        write_sft(recs, path)
    return {
        "data": str(path),
        "rows": len(recs),
        "example": recs[0]["messages"][-1]["content"] if recs else None,
    }


@STAGES.register("rejection")
def rejection_stage(ctx: StageContext) -> dict[str, Any]:
    """Sample the stage model, keep correct formatted answers (``data_pipelines.filter`` + ``rejection``)."""
    model = ctx.input("model")["model"]
    data = ctx.input("data")
    n, per = int(ctx.need("n")), int(ctx.opt("max_per_prompt", 1))
    out = ctx.run_dir
    if ctx.engine == "verl":
        cmd = [
            sys.executable,
            "-m",
            "data_pipelines.filter",
            f"data={data['train']}",
            f"model={model}",
            f"n={n}",
            "band=[0.0,1.0]",
            "backend=vllm",
            f"sft.max_per_prompt={per}",
            f"seed={ctx.plan.seed}",
            f"out={out}",
            f"sampling.max_new_tokens={int(ctx.need('max_new_tokens'))}",
        ]
        return {"data": str(out / "sft.parquet"), "commands": [shlex.join(cmd)]}
    prompts = out / "prompts.parquet"
    if ctx.dry_run:
        return {"data": str(out / "sft.parquet")}
    write_rows(read_rows(data["train"])[: int(ctx.need("prompts"))], prompts)
    cfg = OmegaConf.load(CONF_DIR / "datagen" / "filter.yaml")
    cfg.pop("defaults", None)
    cfg.pop("hydra", None)
    cfg.merge_with(
        {
            "data": str(prompts),
            "model": str(model),
            "n": n,
            "band": [0.0, 1.0],
            "out": str(out),
            "seed": ctx.plan.seed,
            "backend": "hf",
            "progress": False,
            "sft": {"enabled": True, "max_per_prompt": per},
            "sampling": {"max_new_tokens": int(ctx.need("max_new_tokens")), "batch_prompts": 64},
        }
    )
    summary = dfilter.run(cfg)
    kept = summary["files"]["sft"]["rows"]
    if kept == 0:
        raise ValueError(
            f"[stages.{ctx.plan.base}] rejection sampling kept no sample of {summary['samples']} "
            f"(mean pass rate {summary['pass_rate']['mean']:.3f}): the model at {model} solves nothing"
        )
    log(
        f"[rejection] kept {kept} SFT rows from {summary['samples']} samples (pass rate "
        f"{summary['pass_rate']['mean']:.3f})"
    )
    return {
        "data": str(out / "sft.parquet"),
        "rows": kept,
        "sample_pass_rate": summary["pass_rate"]["mean"],
        "rejected": summary["sft"],
        "seconds_sampling": round(summary["timings"]["generate_s"], 1),
    }


def mix(
    reasoning: str | Path,
    general: list[dict[str, Any]] | str | Path,
    ratio: float,
    out: str | Path,
    seed: int,
) -> dict[str, Any]:
    """Write reasoning rows + non-reasoning rows (``ratio`` of the total), shuffled with ``seed``."""
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"[mix] ratio={ratio} must be in [0, 1): the share of non-reasoning rows")
    rows = read_rows(reasoning)
    gen = general if isinstance(general, list) else read_rows(general)
    need = round(len(rows) * ratio / (1 - ratio))
    if need > len(gen):
        raise ValueError(f"[mix] ratio={ratio} needs {need} non-reasoning rows, only {len(gen)} available")
    rng = random.Random(seed)
    both = rows + rng.sample(gen, need)
    rng.shuffle(both)
    keep = ("messages", "data_source", "ground_truth", "prompt_index", "sample_index")
    info = write_sft([{k: r.get(k) for k in keep} for r in both], out)
    return {**info, "reasoning_rows": len(rows), "general_rows": need}


@STAGES.register("mix")
def mix_stage(ctx: StageContext) -> dict[str, Any]:
    """Rejection samples + non-reasoning rows at ``ratio`` (R1 stage 3)."""
    ratio, path = float(ctx.need("ratio")), ctx.run_dir / "sft.parquet"
    reasoning = ctx.input("data")["data"]
    if ctx.engine == "verl":
        cmd = [
            sys.executable,
            "-m",
            "recipes.pipeline",
            "mix",
            f"reasoning={reasoning}",
            f"general={ctx.need('general_data')}",
            f"ratio={ratio}",
            f"out={path}",
            f"seed={ctx.plan.seed}",
        ]
        return {"data": str(path), "commands": [shlex.join(cmd)]}
    if ctx.dry_run:
        return {"data": str(path)}
    gen = GENERAL.get(str(ctx.need("general")))(int(ctx.opt("general_n", 20000)), ctx.plan.seed)
    return {"data": str(path), **mix(reasoning, gen, ratio, path, ctx.plan.seed)}
