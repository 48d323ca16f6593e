"""``make tts MODEL=<policy> DATA=<parquet> N=64 RM="orm prm"``: parallel-sampling scaling curves.

Seed 004 §4's experiment: one checkpoint, ``n`` samples per prompt, and for N in ``ks``
(1, 4, 16, 64) the accuracy of each way of turning N samples into one answer --

- ``pass@N`` (the ceiling: some sample is right; unbiased estimator, ``analysis.metrics``),
- ``maj@N`` (majority vote over extracted answers, ties split),
- ``best-of-N`` by each reward model's reading (ORM ``last``; PRM ``min_step`` and ``last_step``),
- ``weighted vote`` by each reading (answers' summed scores),

each with a percentile-bootstrap 95% interval over prompts. Scorer-based selectors at N < n are
averaged over random N-subsets of the n samples (``analysis.selectors.subsample``). Writes
``<out>/tts.json`` (the table, gaps to pass@N, settings), ``<out>/samples.jsonl`` (every sample
with its grade and scores) and ``<out>/tts.png``; with ``results=<name>`` the table also goes to
``results/<name>/table.json`` (``core.results``). A reward model whose vocabulary is not the
policy's is refused before any sampling. Not covered: sequential or tree search (seed 004 §4 route three).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from omegaconf import DictConfig

from analysis.evaluate import grade, resolve_model
from analysis.metrics import bootstrap_ci, maj_at_k, pass_at_k
from analysis.selectors import SELECTORS, subsample
from core import results
from core import reward_model as rmod
from core.cli import hydra_main, require
from core.data import chat_ids, read_rows
from core.sampling import Settings, decode, make_sampler
from data_pipelines.rm_scoring import default_aggregates, score_texts
from rewards import compute_score


def load_rms(paths: list[str], policy_tok: Any, policy: str) -> list[rmod.RewardModel]:
    """The reward models, each checked against the policy's vocabulary (before any sampling)."""
    rms = []
    for i, p in enumerate(paths):
        rm = rmod.load(p, key=f"rm[{i}]")
        rmod.check_vocab(rm.info, policy_tok, f"rm[{i}]", policy)
        rms.append(rm)
    return rms


def reading(rm: rmod.RewardModel, agg: str) -> str:
    """The name of one reading of a reward model: ``orm``, ``prm_min_step``, ``prm_last_step``."""
    return rm.info.kind + ("" if agg == "last" else f"_{agg}")


def selector_names(rms: list[rmod.RewardModel]) -> list[tuple[str, str, str]]:
    """(column name, reading, selector) for every reading of every reward model.

    Best-of-N reads every aggregation; the weighted vote reads the ORM and the PRM's min-step score.
    """
    out = []
    for rm in rms:
        for agg in default_aggregates(rm):
            tag = reading(rm, agg)
            out.append((f"bon_{tag}", tag, "best_of_n"))
            if agg != "last_step":
                out.append((f"wvote_{tag}", tag, "weighted_vote"))
    return out


def table(
    records: list[dict[str, Any]], n: int, ks: list[int], cols: list[tuple], cfg: DictConfig
) -> dict[str, Any]:
    """Per-k mean and 95% bootstrap interval of every metric, and each selector's gap to pass@k."""
    rng = np.random.default_rng(int(cfg.seed))
    groups = [records[i : i + n] for i in range(0, len(records), n)]
    per: dict[str, dict[int, list[float]]] = {}
    for g in groups:
        c = np.array([float(r["acc"]) for r in g])
        votes = [r["vote"] for r in g]
        for k in ks:
            per.setdefault("pass", {}).setdefault(k, []).append(float(pass_at_k(n, int(c.sum()), k)))
            per.setdefault("maj", {}).setdefault(k, []).append(maj_at_k(c, votes, k, rng=rng))
            per.setdefault("mean", {}).setdefault(k, []).append(float(c.mean()))
            for name, tag, sel in cols:
                s = np.array([r["scores"][tag] for r in g])
                per.setdefault(name, {}).setdefault(k, []).append(
                    subsample(SELECTORS.get(sel), c, votes, s, k, int(cfg.subsets), rng)
                )
    out: dict[str, Any] = {"metrics": {}, "gap_to_pass": {}}
    for m, by_k in per.items():
        out["metrics"][m] = {}
        for k, v in by_k.items():
            lo, hi = bootstrap_ci(v, n_resamples=int(cfg.bootstrap), seed=int(cfg.seed))
            out["metrics"][m][str(k)] = {"mean": float(np.mean(v)), "lo": lo, "hi": hi}
        if m not in ("pass", "mean"):
            out["gap_to_pass"][m] = {
                str(k): float(np.mean(per["pass"][k]) - np.mean(v)) for k, v in by_k.items()
            }
    out["prompts"], out["samples_per_prompt"], out["ks"] = len(groups), n, ks
    return out


def plot(t: dict[str, Any], path: Path) -> Path:
    """The scaling curves: every metric against N (log axis), with its 95% band."""
    fig, ax = plt.subplots(figsize=(6.4, 4))
    ks = [int(k) for k in t["ks"]]
    for m, by_k in t["metrics"].items():
        if m == "mean":
            continue
        ax.plot(ks, [by_k[str(k)]["mean"] for k in ks], "o-", label=m, lw=2 if m in ("pass", "maj") else 1)
        ax.fill_between(ks, [by_k[str(k)]["lo"] for k in ks], [by_k[str(k)]["hi"] for k in ks], alpha=0.12)
    ax.set(
        xscale="log", xlabel="N (samples per prompt)", ylabel="accuracy", title="parallel sampling + selector"
    )
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(cfg: DictConfig) -> dict[str, Any]:
    """Sample, grade, score with every reward model and tabulate; returns the result dict."""
    torch.set_num_threads(int(cfg.threads))
    model_path, state = resolve_model(str(cfg.model))
    settings = Settings(temperature=float(cfg.temperature), top_p=float(cfg.top_p), seed=int(cfg.seed))
    sampler = make_sampler(str(cfg.sampler), model_path, settings, state)
    rms = load_rms([str(p) for p in cfg.rm], sampler.tokenizer, model_path)
    rows = read_rows(Path(str(cfg.data)))[: cfg.prompts or None]
    n, ks = int(cfg.n), sorted(int(k) for k in cfg.ks if int(k) <= int(cfg.n))
    pids = [chat_ids(sampler.tokenizer, r["prompt"]) for r in rows]
    t0 = time.perf_counter()
    texts = decode(sampler.tokenizer, sampler.generate(pids, n, int(cfg.max_tokens)))
    t_gen = time.perf_counter() - t0
    records = grade(rows, texts, n, sampler.tokenizer, compute_score)
    cols = selector_names(rms)
    rep = [pids[i // n] for i in range(len(texts))]
    srcs = [r["data_source"] for r in records]
    for rm in rms:
        for agg, vals in score_texts(rm, rep, texts, srcs).items():
            for r, v in zip(records, vals, strict=True):
                r.setdefault("scores", {})[reading(rm, agg)] = v
    t_score = time.perf_counter() - t0 - t_gen
    res = table(records, n, ks, cols, cfg)
    res["settings"] = {
        "model": model_path,
        "checkpoint_state": state,
        "data": str(cfg.data),
        "rm": [
            {"path": str(rm.path), **{k: getattr(rm.info, k) for k in ("kind", "labels", "step_format")}}
            for rm in rms
        ],
        "temperature": settings.temperature,
        "max_tokens": int(cfg.max_tokens),
        "subsets": int(cfg.subsets),
        "generation_seconds": t_gen,
        "scoring_seconds": t_score,
    }
    out = Path(str(cfg.out))
    out.mkdir(parents=True, exist_ok=True)
    (out / "tts.json").write_text(json.dumps(res, indent=1) + "\n")
    (out / "samples.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    plot(res, out / "tts.png")
    if cfg.results:
        results.write_table(str(cfg.results), "table", res)
    return res


def command(cfg: DictConfig) -> int:
    """Run and print the table (mean [95% CI] per metric and N)."""
    require(cfg, "model", "data", "rm", command="analysis.tts")
    res = run(cfg)
    ks = res["ks"]
    print("metric".ljust(18) + "".join(f"N={k}".rjust(24) for k in ks))
    for m, by_k in res["metrics"].items():
        cells = [
            f"{by_k[str(k)]['mean']:.3f} [{by_k[str(k)]['lo']:.3f},{by_k[str(k)]['hi']:.3f}]" for k in ks
        ]
        print(m.ljust(18) + "".join(c.rjust(24) for c in cells))
    print(
        f"wrote {cfg.out}/tts.json, samples.jsonl, tts.png"
        + (f"; results/{cfg.results}/table.json" if cfg.results else "")
    )
    return 0


main = hydra_main("analysis", "tts", command)


if __name__ == "__main__":
    main()
