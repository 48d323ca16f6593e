"""Time each pre-flight check on a 100k-row dataset, beside veRL's own overlong filter on the same rows.

``python -m benchmarks.bench_preflight [rows=100000] [val_rows=5000] [recipe=grpo] [compare_verl=true]
[out=<dir>]`` (a Hydra app: ``conf/command/bench_preflight.yaml``; ``make bench-preflight``).

1. Writes a training file of ``rows`` rows and a validation file of ``val_rows`` rows with the
   project's task generators (the ``mix`` of tasks, each its share; cached in ``out`` by spec,
   never committed).
2. For each of ``tokenizers`` -- ``byte`` (``core.model``'s byte tokenizer: one token per byte,
   the worst case for the length check's byte bound) and ``bpe`` (a byte-level BPE of
   ``bpe_vocab`` tokens trained here with the ``tokenizers`` library on the training prompts, as
   LLM tokenizers are), both with a ChatML template and used as
   ``actor_rollout_ref.model.tokenizer_path`` (the model itself is the recipe's, sized from
   ``recipes.preflight.models.KNOWN``) -- times composing + validating the recipe, then every
   check of ``recipes.preflight`` in one process (wall and CPU seconds each, rows read, sampled,
   tokenized), with a fresh HF datasets cache (RLHFDataset's load is timed cold).
3. Side by side on the same training file and tokenizer (``compare_verl``): veRL 0.9.1's
   ``RLHFDataset`` with ``filter_overlong_prompts=true`` (what veRL runs at load, row by row,
   one worker) and tokenizing every row without the byte bound; both must count the same rows
   over the limit as the pre-flight, and their times are given as ratios to the lengths check.
CPU seconds include finished child processes (veRL's filter runs in a ``datasets`` worker).
Writes ``results/preflight/timings_<rows/1000>k.json`` (``timings_100k.json`` by default) through ``core.results.write_table``. Timings
depend on the machine and its load (shared cores): CPU seconds are the steadier figure.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from omegaconf import DictConfig, OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from core.cli import hydra_main
from core.compose import compose
from core.model import CHATML, CHATML_SPECIALS, ModelSpec, build_checkpoint, load_tokenizer
from core.results import write_table
from data_pipelines.io import write_rows
from data_pipelines.tasks import TASKS
from recipes.preflight import preflight, settings
from recipes.preflight.lengths import _messages, measure
from recipes.validate import validate


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (HF datasets' filter workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(fn: Any, *args: Any, **kw: Any) -> tuple[Any, dict[str, float]]:
    w, c = time.perf_counter(), _cpu()
    out = fn(*args, **kw)
    return out, {"wall_s": time.perf_counter() - w, "cpu_s": _cpu() - c}


def make_data(out: Path, rows: int, val_rows: int, mix: dict[str, float], seed: int) -> dict[str, Any]:
    """Write (or reuse) the train/val files of the task ``mix``; return their spec and paths."""
    spec = {"rows": rows, "val_rows": val_rows, "mix": mix, "seed": seed}
    stamp = out / "spec.json"
    files = {"train": out / "train.parquet", "val": out / "val.parquet"}
    if stamp.is_file() and json.loads(stamp.read_text()) == spec and all(f.is_file() for f in files.values()):
        return {**spec, **{k: str(v) for k, v in files.items()}}
    total = sum(mix.values())
    for split, n, path in (("train", rows, files["train"]), ("test", val_rows, files["val"])):
        data: list[dict[str, Any]] = []
        for task, share in mix.items():
            k = round(n * share / total) if task != list(mix)[-1] else n - len(data)
            data += TASKS.get(task)(n=k, seed=seed, split=split)
        write_rows(data, path)
    out.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(spec) + "\n")
    return {**spec, **{k: str(v) for k, v in files.items()}}


def verl_filter(path: str, tokenizer_dir: Path, limit: int) -> tuple[int, dict[str, float]]:
    """Rows veRL's RLHFDataset keeps with its overlong filter on (one worker), and the time it took."""
    import datasets  # HF datasets: RLHFDataset reads parquet through it
    from verl.utils.dataset.rl_dataset import RLHFDataset  # veRL: seconds to import

    datasets.disable_progress_bars()
    tok = load_tokenizer(tokenizer_dir)
    cfg = OmegaConf.create(
        {"max_prompt_length": limit, "filter_overlong_prompts": True, "filter_overlong_prompts_workers": 1}
    )
    with contextlib.redirect_stdout(io.StringIO()):
        ds, t = _timed(RLHFDataset, data_files=[path], tokenizer=tok, config=cfg)
    return len(ds), t


def bpe_tokenizer(out: Path, train: str, vocab: int, rows: int = 20000) -> Path:
    """A byte-level BPE (GPT-2 style pre-tokenizer) trained with the ``tokenizers`` library on about
    ``rows`` prompts spread evenly over ``train``, with ChatML specials and template; saved at ``out``."""
    from transformers import PreTrainedTokenizerFast  # ~2 s: only building a tokenizer needs it

    if (out / "tokenizer_config.json").is_file():
        return out
    col = pq.read_table(train).column("prompt")
    prompts = col.take(
        list(range(0, len(col), max(1, len(col) // rows)))
    ).to_pylist()  # spread over the tasks
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=CHATML_SPECIALS[:3],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((m["content"] for p in prompts for m in p), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    fast.save_pretrained(str(out))
    return out


def tokenizer_dir(name: str, out: Path, train: str, vocab: int) -> Path:
    """The tokenizer directory of configuration ``name`` (``byte`` or ``bpe``), built on first use."""
    d = out / f"{name}_tokenizer"
    if name == "bpe":
        return bpe_tokenizer(d, train, vocab)
    if not (d / "config.json").is_file():
        build_checkpoint(d, ModelSpec(64, 2, 4, 2, 256, 4096), tokenizer="byte", seed=0)
    return d


def command(args: DictConfig) -> int:
    import datasets  # HF datasets: a fresh cache per run, so RLHFDataset's load is timed cold

    out = Path(str(args.out)).expanduser()
    data = make_data(out / "data", int(args.rows), int(args.val_rows), dict(args.mix), int(args.seed))
    result: dict[str, Any] = {
        "data": {k: v for k, v in data.items() if k not in ("train", "val")},
        "recipe": str(args.recipe),
        "tokenizers": {},
    }
    for name in args.tokenizers:
        tok_dir = tokenizer_dir(str(name), out, data["train"], int(args.bpe_vocab))
        with tempfile.TemporaryDirectory(prefix="hf_datasets_") as hf_cache:
            datasets.config.HF_DATASETS_CACHE = Path(hf_cache)
            result["tokenizers"][str(name)] = _one(args, data, tok_dir, out / f"run_{name}")
    path = write_table("preflight", f"timings_{int(args.rows) // 1000}k", result)
    print(f"wrote {path}")
    return 0


def _one(args: DictConfig, data: dict[str, Any], tok_dir: Path, run_dir: Path) -> dict[str, Any]:
    """Compose + validate + every check with one tokenizer; the side-by-side comparison if asked."""
    overrides = [
        f"recipe={args.recipe}",
        "engine=verl",
        f"data.train_files={data['train']}",
        f"data.val_files={data['val']}",
        f"actor_rollout_ref.model.tokenizer_path={tok_dir}",
        *[str(o) for o in args.overrides],
    ]
    cfg, t_compose = _timed(compose, overrides)
    _, t_validate = _timed(validate, cfg, "verl")
    opts = settings([f"gpu_memory_gb={args.gpu_memory_gb}"])
    report, t_all = _timed(preflight, cfg, "verl", opts, run_dir)
    print(report.format())
    lengths = report.facts.get("lengths", {}).get(data["train"], {})
    res: dict[str, Any] = {
        "tokenizer_dir": tok_dir.name,
        "max_prompt_length": int(cfg.data.max_prompt_length),
        "settings": {
            k: OmegaConf.to_container(opts)[k] for k in ("sample", "verl_rows", "reward_rows", "exact_rows")
        },
        "compose_s": t_compose,
        "validate_s": t_validate,
        "checks": report.timings,
        "preflight_total_s": t_all,
        "verdict": report.verdict,
        "finding_counts": report.to_dict()["counts"],
        "findings": [
            f"{f.level} [{f.check}] {f.where}: {f.message}"[:300]
            for f in report.findings
            if f.level != "info"
        ],
        "lengths_train": lengths,
    }
    if args.compare_verl:
        res["side_by_side"] = _side_by_side(
            cfg, data["train"], tok_dir, int(cfg.data.max_prompt_length), report
        )
        res["side_by_side"]["over_limit_preflight"] = lengths.get("over_limit")
    print(json.dumps({k: res[k] for k in ("checks", "preflight_total_s")}, indent=1, default=str))
    return res


def _side_by_side(cfg: DictConfig, train: str, tok_dir: Path, limit: int, report: Any) -> dict[str, Any]:
    """veRL's own overlong filter and an unbounded tokenization of every row, on the training file."""
    t = pq.read_table(train)
    convs = _messages(t, str(cfg.data.get("prompt_key", "prompt")))
    tok = load_tokenizer(tok_dir)
    lens, t_full = _timed(measure, tok, convs, {})
    kept, t_verl = verl_filter(train, tok_dir, limit)
    ours = report.timings["lengths"]
    over_all = int((lens > limit).sum())
    return {
        "rows": t.num_rows,
        "over_limit_full_tokenization": over_all,
        "over_limit_verl_filter": t.num_rows - kept,
        "verl_filter_s": t_verl,
        "full_tokenization_s": t_full,
        "note": "lengths check time covers train and val files; the peers ran on the train file only",
        "ratio_verl_filter_to_lengths_check_wall": t_verl["wall_s"] / ours["wall_s"],
        "ratio_full_tokenization_to_lengths_check_wall": t_full["wall_s"] / ours["wall_s"],
    }


main = hydra_main("command", "bench_preflight", command)


if __name__ == "__main__":
    main()
