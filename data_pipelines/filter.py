"""``python -m data_pipelines.filter data=<parquet|name> model=<path|laptop_base|laptop> n=16 band=[0.2,0.8]``.

``data=<name>`` reads ``data/<name>/train.parquet`` (``make data``), else generates ``rows`` prompts
of the task ``<name>`` into the run cache with the laptop engine's parameters for it.
``model=laptop_base`` (``laptop``) is the laptop base (cold-start) model a first local run builds in
the run cache.

The offline difficulty filter (Seed-Thinking, Open-Reasoner-Zero, Phi-4 reasoning, MiMo…):
sample ``n`` answers per prompt with the starting model, score them with
``rewards.compute_score``, keep the prompts whose pass rate p satisfies ``lo <= p <= hi``.
Outputs in ``out``: ``pass_rates.parquet`` (per prompt), ``pass_rate_hist.png``,
``filtered.parquet`` and ``control.parquet`` (the same number of prompts drawn uniformly with
``seed`` from the whole input: the unfiltered control), ``sft.parquet`` (rejection sampling,
:mod:`data_pipelines.rejection`), ``summary.json``; every sample lives in the cache
(:mod:`data_pipelines.samples`, sharded parquet keyed by model, sampling parameters, verifier
version and data hash).

Resumable: chunks are sampled with a per-chunk seed and written atomically, so a run killed at
any moment (SIGKILL included) and started again with the same command produces exactly what an
uninterrupted run produces. ``run(cfg, generator=…, score_fn=…)`` is the importable core; tests
and benchmarks can inject a generator. Config: ``conf/datagen/filter.yaml`` (``--help``).
Not covered: online (per-step) filtering — that is veRL's ``algorithm.filter_groups``.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from omegaconf import DictConfig, OmegaConf, open_dict
from tqdm import tqdm

import rewards
from core.cli import hydra_main
from core.data import read_rows, sha256_file
from core.sampling import grade
from data_pipelines import rejection
from data_pipelines.filter_inputs import resolve_data, resolve_model
from data_pipelines.generation import Generator, SamplingParams, cache_key, check_model_path, make_generator
from data_pipelines.io import atomic_write_table, check_loads_in_verl, write_rows
from data_pipelines.report import histogram_counts, plot_histogram
from data_pipelines.samples import ShardStore

REPO = Path(__file__).resolve().parents[1]
ScoreFn = Callable[..., dict[str, Any]]


def check_band(band: Any) -> tuple[float, float]:
    """``(lo, hi)`` from ``band``, or ``ValueError`` naming the key and the fix."""
    try:
        lo, hi = (float(x) for x in band)
    except (TypeError, ValueError):
        raise ValueError(f"[filter] band={band!r} must be two numbers, e.g. band=[0.2,0.8]") from None
    if not (0.0 <= lo <= 1.0 and 0.0 <= hi <= 1.0):
        raise ValueError(f"[filter] band=[{lo}, {hi}] must lie within [0, 1]")
    if lo > hi:
        raise ValueError(
            f"[filter] band=[{lo}, {hi}] is inverted: lower bound > upper bound (fix: band=[{hi},{lo}])"
        )
    return lo, hi


def verifier_version() -> str:
    """``rewards`` version string + a hash of its source files (a verifier change busts the cache)."""
    h = hashlib.sha256()
    root = Path(rewards.__file__).parent
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return f"{getattr(rewards, '__version__', '0')}+{h.hexdigest()[:12]}"


def preflight_scores(rows: list[dict[str, Any]], score: ScoreFn) -> None:
    """Score an empty response for one row of each data source before any sampling, so an
    unknown ``data_source`` fails at once (naming the file's sources), not after hours of work."""
    first: dict[str, dict[str, Any]] = {}
    for r in rows:
        first.setdefault(r["data_source"], r)
    for source, r in first.items():
        try:
            score(source, "", r["reward_model"]["ground_truth"], extra_info=r["extra_info"])
        except KeyError as e:
            raise KeyError(
                f"[filter] the data has data_source {source!r} that the verifier does not know: {e}"
            ) from e


def _chunk_seed(seed: int, chunk: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}|{chunk}".encode()).digest()[:4], "big")


def sample_all(
    rows: list[dict[str, Any]],
    store: ShardStore,
    generator: Generator,
    score: ScoreFn,
    n: int,
    seed: int,
    progress: bool = True,
) -> dict[str, float]:
    """Sample and score every pending chunk; return timings (generation vs everything else)."""
    pending = store.pending()
    done_prompts = len(rows) - sum(len(store.chunks[i]) for i in pending)
    timings = {
        "generate_s": 0.0,
        "score_s": 0.0,
        "write_s": 0.0,
        "chunks_sampled": len(pending),
        "chunks_reused": len(store.chunks) - len(pending),
    }
    bar = tqdm(
        total=len(rows),
        initial=done_prompts,
        unit="prompt",
        desc="sampling",
        disable=not progress,
        dynamic_ncols=True,
        smoothing=0.1,
    )
    for c in pending:
        idx = store.chunks[c]
        t0 = time.perf_counter()
        outs = generator.generate([rows[i]["prompt"] for i in idx], n, _chunk_seed(seed, c))
        t1 = time.perf_counter()
        if len(outs) != len(idx) or any(len(o) != n for o in outs):
            raise RuntimeError(
                f"[filter] the generator returned {[len(o) for o in outs]} responses for "
                f"{len(idx)} prompts × n={n}"
            )
        records = []
        for i, responses in zip(idx, outs, strict=True):
            row = rows[i]
            for j, text in enumerate(responses):
                score_v, acc, r = grade(
                    score(
                        row["data_source"],
                        text,
                        row["reward_model"]["ground_truth"],
                        extra_info=row["extra_info"],
                    )
                )
                records.append(
                    {
                        "prompt_index": i,
                        "sample_index": j,
                        "data_source": row["data_source"],
                        "response": text,
                        "score": score_v,
                        "acc": acc,
                        "format": float(r.get("format") or 0.0),
                        "pred": None if r.get("pred") is None else str(r["pred"]),
                        "reason": str(r.get("reason") or ""),
                    }
                )
        t2 = time.perf_counter()
        store.write(c, records)
        t3 = time.perf_counter()
        timings["generate_s"] += t1 - t0
        timings["score_s"] += t2 - t1
        timings["write_s"] += t3 - t2
        bar.update(len(idx))
    bar.close()
    return timings


def pass_rates(
    samples: pa.Table, rows: list[dict[str, Any]], band: tuple[float, float]
) -> list[dict[str, Any]]:
    """Per-prompt statistics from the samples."""
    stats = [
        {
            "prompt_index": i,
            "data_source": r["data_source"],
            "n": 0,
            "n_correct": 0,
            "score_sum": 0.0,
            "format_sum": 0.0,
        }
        for i, r in enumerate(rows)
    ]
    cols = samples.select(["prompt_index", "acc", "score", "format"]).to_pydict()
    for i, acc, score, fmt in zip(
        cols["prompt_index"], cols["acc"], cols["score"], cols["format"], strict=True
    ):
        s = stats[i]
        s["n"] += 1
        s["n_correct"] += int(acc)
        s["score_sum"] += score
        s["format_sum"] += fmt
    out = []
    for s in stats:
        n = max(s["n"], 1)
        p = s["n_correct"] / n
        out.append(
            {
                "prompt_index": s["prompt_index"],
                "data_source": s["data_source"],
                "n": s["n"],
                "n_correct": s["n_correct"],
                "pass_rate": p,
                "mean_score": s["score_sum"] / n,
                "format_rate": s["format_sum"] / n,
                "in_band": band[0] <= p <= band[1],
            }
        )
    return out


def _with_pass_rate(row: dict[str, Any], p: float) -> dict[str, Any]:
    return {**row, "extra_info": {**row["extra_info"], "pass_rate": p}}


def _scorer(cfg: DictConfig, score_fn: ScoreFn | None) -> tuple[ScoreFn, str]:
    """The score function (``rewards.compute_score`` with ``reward_kwargs`` unless injected) and its
    version string for the cache key."""
    if score_fn is not None:
        return score_fn, getattr(score_fn, "version", getattr(score_fn, "__qualname__", "custom"))
    kwargs = OmegaConf.to_container(cfg.reward_kwargs, resolve=True) or {}

    def score(*a: Any, **kw: Any) -> dict[str, Any]:
        return rewards.compute_score(*a, **kw, **kwargs)

    return score, verifier_version() + (f"|{json.dumps(kwargs, sort_keys=True)}" if kwargs else "")


def _write_sets(
    cfg: DictConfig, rows: list[dict[str, Any]], stats: list[dict[str, Any]], samples: pa.Table, out: Path
) -> tuple[dict[str, Any], list[int], Any]:
    """``filtered``/``control``/``sft`` parquet files (+ veRL load checks); (files, kept, sft counts)."""
    rates = [s["pass_rate"] for s in stats]
    keep = [i for i, s in enumerate(stats) if s["in_band"]]
    control = sorted(random.Random(int(cfg.seed)).sample(range(len(rows)), len(keep)))
    files: dict[str, Any] = {}
    for name, idx in (("filtered", keep), ("control", control)):
        path = out / f"{name}.parquet"
        if idx:
            files[name] = write_rows([_with_pass_rate(rows[i], rates[i]) for i in idx], path)
        else:
            path.unlink(missing_ok=True)
            files[name] = {"path": None, "rows": 0}
    sft_counts = None
    if cfg.sft.enabled:
        records, sft_counts = rejection.select(rows, samples, int(cfg.sft.max_per_prompt))
        files["sft"] = rejection.write_sft(records, out / "sft.parquet")
    if cfg.validate and Path(str(cfg.model)).is_dir():
        from verl.utils import hf_tokenizer  # veRL: ~10 s; only the load checks need it, not --help

        tok = hf_tokenizer(str(cfg.model))
        for name in ("filtered", "control"):
            if files[name]["path"]:
                files[name]["verl_rows"] = check_loads_in_verl(files[name]["path"], tok, 10**9)
        if "sft" in files and files["sft"]["rows"]:
            files["sft"]["verl_rows"] = rejection.check_loads_in_verl_sft(files["sft"]["path"], tok, 10**6)
    return files, keep, sft_counts


def run(
    cfg: DictConfig, generator: Generator | None = None, score_fn: ScoreFn | None = None
) -> dict[str, Any]:
    """Filter one dataset; return the summary (also written to ``<out>/summary.json``)."""
    t_start = time.perf_counter()
    band = check_band(cfg.band)
    n = int(cfg.n)
    if n < 1:
        raise ValueError(f"[filter] n={n}: need at least one sample per prompt")
    rows_n = int(cfg.get("rows") or 256)
    resolve_data(cfg.data, rows_n, generate=False)  # every input checked before any work
    if generator is None:
        model = resolve_model(cfg.model)
        check_model_path(model)
        with open_dict(cfg):
            cfg.model = model
    data = resolve_data(cfg.data, rows_n)
    params = SamplingParams(**OmegaConf.to_container(cfg.sampling, resolve=True))
    out = Path(cfg.out) if cfg.out else data.parent / f"filter_{data.stem}"
    rows = read_rows(data)
    if not rows:
        raise ValueError(f"[filter] data={data} has no rows")
    score_fn, verifier = _scorer(cfg, score_fn)
    preflight_scores(rows, score_fn)
    if generator is None:
        generator = make_generator(str(cfg.backend), cfg.model, params)
    key, parts = cache_key(generator, params, n, int(cfg.seed), verifier, sha256_file(data))
    store = ShardStore(
        Path(cfg.cache_dir) if cfg.cache_dir else out / "cache", key, parts, len(rows), params.batch_prompts
    )
    timings = sample_all(rows, store, generator, score_fn, n, int(cfg.seed), bool(cfg.progress))
    t_outputs = time.perf_counter()
    samples = store.load()
    stats = pass_rates(samples, rows, band)
    atomic_write_table(pa.Table.from_pylist(stats), out / "pass_rates.parquet")
    files, keep, sft_counts = _write_sets(cfg, rows, stats, samples, out)
    rates = [s["pass_rate"] for s in stats]
    title = f"{data.parent.name}/{data.name} · model {Path(str(cfg.model)).name}"
    t_plot = time.perf_counter()
    hist_path = plot_histogram(rates, n, band, out / "pass_rate_hist.png", title=title)
    # once per run, whatever the number of samples: the output sets with veRL's load checks, the plot
    timings["outputs_s"] = t_plot - t_outputs
    timings["plot_s"] = time.perf_counter() - t_plot
    total = len(rates)
    summary = {
        "data": str(data),
        "model": str(cfg.model),
        "n": n,
        "band": list(band),
        "cache_key": key,
        "cache_dir": str(store.dir),
        "key_parts": parts,
        "prompts": total,
        "samples": samples.num_rows,
        "pass_rate": {
            "mean": sum(rates) / total,
            "all_wrong": sum(r == 0 for r in rates) / total,
            "all_right": sum(r == 1 for r in rates) / total,
            "in_band": len(keep) / total,
        },
        "histogram": histogram_counts(rates, n),
        "histogram_png": str(hist_path),
        "files": files,
        "sft": sft_counts,
        "timings": {**timings, "total_s": time.perf_counter() - t_start},
    }
    if not keep:
        summary["warning"] = f"no prompt has a pass rate in {list(band)}: see {hist_path}" + _why(samples)
        print(f"[filter] WARNING: {summary['warning']}")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    written = [str(f["path"]) for f in files.values() if f.get("path")] + [str(hist_path)]
    print(
        f"[filter] {total} prompts × {n} samples; mean pass rate {summary['pass_rate']['mean']:.3f}; "
        f"{len(keep)} in band {list(band)}; wrote {', '.join(written)}, {out / 'summary.json'}"
    )
    return summary


def _why(samples: pa.Table) -> str:
    """The most common reason the verifier refused a sample, as a hint (empty when none was refused)."""
    cols = samples.select(["acc", "reason"]).to_pydict()
    reasons = Counter(r for a, r in zip(cols["acc"], cols["reason"], strict=True) if not a and r)
    if not reasons:
        return ""
    reason, count = reasons.most_common(1)[0]
    return (
        f"; {count} of {samples.num_rows} samples were refused with {reason!r}: does the model answer in "
        "this task's format? (the laptop base model is pretrained on chain sums: data=chain_sum model=laptop_base)"
    )


def command(cfg: DictConfig) -> int:
    """The command; see ``conf/datagen/filter.yaml``. An expected error is one ``error:`` line."""
    run(cfg)
    return 0


main = hydra_main("datagen", "filter", command)


if __name__ == "__main__":
    main()
