"""``python -m analysis.evaluate model=<path|run dir> data=<parquet> n=64 k=[1,4,16,64]``.

Samples ``n`` answers per prompt (:mod:`core.sampling`: vLLM on a GPU machine, the local
engine's CPU sampler, or HF ``generate``), optionally under s1 budget forcing, grades each with
``rewards.compute_score`` and reports per data source and overall: unbiased pass@k, maj@k over
the extracted answers (``pred``; ties split, see ``analysis.metrics``) and mean@k, each with a
percentile-bootstrap 95% interval over prompts. Writes ``result.json`` (metrics + the full
settings: model, data hash, n, k, temperature, top-p, max tokens, seed, sampler, budget,
package versions: ``core.versions``), ``samples.jsonl``, ``tts.png`` (pass@k, maj@k and mean@1 against k) and
``eval.md``/``eval.html``. ``score_table`` is the pure metrics part (tests call it directly).
It does not pick checkpoints by score, and intervals ignore sampling noise within a prompt
beyond what the n samples carry.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from omegaconf import DictConfig, OmegaConf

from analysis.budget import budget_force
from analysis.metrics import SAMPLE_METRICS, bootstrap_ci
from analysis.render import Document, Section, Table
from core import real_model, versions
from core.cli import hydra_main, require
from core.data import Prompt, chat_ids, read_rows, sha256_file
from core.model import weights_changed
from core.runs import Run
from core.sampling import Settings, auto_sampler_name, decode, make_sampler, score_text
from rewards import compute_score
from rewards.math.normalize import clean, parse_number

Scorer = Callable[[str, str, str, dict[str, Any]], dict[str, Any]]


def score_table(
    records: list[dict[str, Any]],
    ks: Sequence[int],
    n_resamples: int = 2000,
    maj_subsets: int = 256,
    seed: int = 0,
) -> dict[str, Any]:
    """Metrics from graded samples ``{prompt, data_source, acc, pred[, vote]}`` (n per prompt);
    maj@k groups answers by ``vote`` (see ``vote_key``) when present, else by ``pred``.

    Returns ``{"overall": {metric: {k: {mean, lo, hi}}}, "by_source": {...}, "n_prompts",
    "samples_per_prompt", "skipped_k"}``; k values above the smallest group size are skipped.
    """
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["prompt"], []).append(r)
    if not groups:
        raise ValueError("score_table: no graded samples")
    n = min(len(g) for g in groups.values())
    use_k = sorted({int(k) for k in ks if 1 <= int(k) <= n})
    rng = np.random.default_rng(seed)
    per_prompt: dict[str, dict[int, list[float]]] = {
        m: {k: [] for k in use_k} for m in ("pass", "maj", "mean")
    }
    sources = []
    for g in groups.values():
        g = g[:n]
        correct = np.array([bool(r["acc"]) for r in g], dtype=float)
        preds = [r.get("vote", r.get("pred")) for r in g]
        sources.append(str(g[0].get("data_source", "?")))
        for m, store in per_prompt.items():
            for k in use_k:
                store[k].append(SAMPLE_METRICS.get(m)(correct, preds, k, rng=rng))
    src = np.array(sources)

    def summarise(mask: np.ndarray) -> dict[str, dict[str, dict[str, float]]]:
        out: dict[str, dict[str, dict[str, float]]] = {}
        for m, store in per_prompt.items():
            out[m] = {}
            for k in use_k:
                v = np.asarray(store[k])[mask]
                lo, hi = bootstrap_ci(v, n_resamples=n_resamples, seed=seed)
                out[m][str(k)] = {"mean": float(v.mean()), "lo": lo, "hi": hi}
        return out

    return {
        "overall": summarise(np.ones(len(src), dtype=bool)),
        "by_source": {s: summarise(src == s) for s in sorted(set(sources))},
        "n_prompts": len(groups),
        "samples_per_prompt": n,
        "skipped_k": sorted({int(k) for k in ks} - set(use_k)),
    }


def vote_key(pred: Any) -> str | None:
    """The form answers are grouped by for maj@k: the exact number if ``pred`` parses as one
    (``0.5``, ``1/2`` and ``\\frac{1}{2}`` vote together), else ``rewards.math.normalize.clean(pred)``.
    Symbolically equal non-numbers (``\\sqrt{12}`` vs ``2\\sqrt{3}``) stay separate votes."""
    if pred is None or not str(pred).strip():
        return None
    text = clean(str(pred))
    num = parse_number(text)
    return f"{num[0]}{'%' if num[1] else ''}" if num else text


def _summary_model(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "summary.json").read_text()).get("model")
    except (OSError, ValueError):
        return None


def check_run_base(run_dir: Path, base: Path) -> None:
    """Refuse a run's model path when it was rebuilt since the run: the weights sha256 the run recorded
    (``summary.json``'s ``model_key``) differ from what the path holds now. No record: no check."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return  # no record to check against
    changed = weights_changed(summary["model_key"], base) if "model_key" in summary else None
    if changed:
        raise FileNotFoundError(
            f"{run_dir} started from {base}, and {base} was rebuilt since the run "
            f"(weights sha256 {changed[0]} then, {changed[1]} now). Fix: rebuild that model as the run did "
            "(the run's command at the run's commit), or run the run again (runs save an HF checkpoint now)"
        )


def resolve_model(model: str) -> tuple[str, str | None]:
    """(HF model directory or hub id, training-state file to load on top of it or None).

    ``model`` may be an HF checkpoint directory; a run directory, where the latest HF checkpoint
    below it wins (highest step number in its path; veRL's merged ``.../actor/huggingface``, the
    local engine's ``checkpoints/global_step_N/huggingface``), else -- a local run from before its
    checkpoints held one -- the latest ``checkpoints/global_step_N/state.pt`` (its ``"model"``
    weights loaded onto the config's ``actor_rollout_ref.model.path``, refused when the run recorded
    other weights there than the path holds now), else that model path itself; a real model's name
    (``smollm2_135m``: its converted checkpoint, :func:`core.real_model.resolve`); or a Hugging Face
    hub id ``org/name``.
    """
    p = Path(real_model.resolve(model)).expanduser()
    if (p / "config.json").exists():
        return str(p), None
    if p.is_dir():
        ckpts = [
            c.parent
            for c in p.rglob("config.json")
            if any(c.parent.glob("*.safetensors")) or any(c.parent.glob("*.bin"))
        ]
        if ckpts:

            def step(d: Path) -> tuple[int, float]:
                nums = re.findall(r"(\d+)", str(d.relative_to(p)))
                return (int(nums[-1]) if nums else -1, d.stat().st_mtime)

            return str(max(ckpts, key=step)), None
        base = Run(p).cfg("actor_rollout_ref.model.path") or _summary_model(p)
        latest = p / "checkpoints" / "latest_checkpointed_iteration.txt"
        state = None
        if latest.is_file():
            f = p / "checkpoints" / f"global_step_{latest.read_text().strip()}" / "state.pt"
            state = str(f) if f.is_file() else None
        if base:
            base = Path(str(base)).expanduser()
            if state:
                check_run_base(p, base)
            return str(base), state
    if not p.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        return model, None  # a Hugging Face hub id (downloaded by the sampler)
    raise FileNotFoundError(f"evaluate: model={model} is neither a checkpoint nor a run dir with one")


def _tts_plot(doc: Document, table: dict[str, Any]) -> str:
    ov = table["overall"]
    ks = [int(k) for k in ov["pass"]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for m, label in (("pass", "pass@k"), ("maj", "maj@k")):
        mean = [ov[m][str(k)]["mean"] for k in ks]
        ax.plot(ks, mean, "o-", label=label)
        ax.fill_between(ks, [ov[m][str(k)]["lo"] for k in ks], [ov[m][str(k)]["hi"] for k in ks], alpha=0.2)
    ax.axhline(ov["mean"][str(ks[0])]["mean"], color="k", ls="--", label="mean@1")
    ax.set(
        xscale="log", xlabel="k (samples)", ylabel="accuracy", ylim=(-0.02, 1.02), title="test-time scaling"
    )
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.minorticks_off()
    ax.legend()
    return doc.save_figure(fig, "tts")


def sample(cfg: DictConfig, rows: list[dict[str, Any]]) -> tuple[list[str], Any, dict[str, Any]]:
    """``n`` texts per row with the configured sampler (and budget forcing); (texts, tokenizer, settings)."""
    model_path, state_file = resolve_model(str(cfg.model))
    name = auto_sampler_name(model_path) if cfg.sampler == "auto" else str(cfg.sampler)
    settings = Settings(temperature=float(cfg.temperature), top_p=float(cfg.top_p), seed=int(cfg.seed))
    sampler = make_sampler(name, model_path, settings, state_file)
    prompts = [chat_ids(sampler.tokenizer, r["prompt"]) for r in rows]
    n, budget = int(cfg.n), OmegaConf.to_container(cfg.budget, resolve=True)
    forcing = budget.get("min_think") is not None or budget.get("max_think") is not None  # type: ignore[union-attr]
    t0 = time.perf_counter()
    if forcing:
        texts = [f.text for f in budget_force(sampler, prompts, n, budget, int(cfg.max_tokens))]  # type: ignore[arg-type]
    else:
        texts = decode(sampler.tokenizer, sampler.generate(prompts, n, int(cfg.max_tokens)))
    info = {
        "model": model_path,
        "checkpoint_state": state_file,
        "sampler": name,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
        "seed": settings.seed,
        "budget_forcing": budget if forcing else None,
        "generation_seconds": round(time.perf_counter() - t0, 2),
    }
    return texts, sampler.tokenizer, info


def grade(
    rows: list[dict[str, Any]], texts: list[str], n: int, tok: Any, scorer: Scorer
) -> list[dict[str, Any]]:
    """One record per sample: score, correctness, extracted answer and its vote form, length."""
    records = []
    for i, text in enumerate(texts):
        row = rows[i // n]
        gt = str(row["reward_model"]["ground_truth"])
        prompt = Prompt([], "", row["data_source"], gt, dict(row.get("extra_info") or {}))
        score, acc, res = score_text(scorer, prompt, text)
        records.append(
            {
                "prompt": i // n,
                "data_source": row["data_source"],
                "output": text,
                "gts": gt,
                "score": score,
                "acc": acc,
                "pred": res.get("pred"),
                "vote": vote_key(res.get("pred")),
                "format": res.get("format"),
                "response_length": len(tok.encode(text, add_special_tokens=False)),
            }
        )
    return records


def _document(
    cfg: DictConfig, out: Path, table: dict[str, Any], info: dict[str, Any], data: Path
) -> Document:
    doc = Document(f"Evaluation: {cfg.model} on {data.name}", out)
    state = info["checkpoint_state"]
    doc.intro.append(f"Model {info['model']}" + (f" with the weights of {state}" if state else "") + ".")
    doc.intro.append(
        f"{table['n_prompts']} prompts × {cfg.n} samples, T={info['temperature']}, top-p "
        f"{info['top_p']}, max {cfg.max_tokens} tokens, sampler {info['sampler']}"
        f"{', budget forcing ' + json.dumps(info['budget_forcing']) if info['budget_forcing'] else ''}."
    )
    for scope, t in [
        ("overall", table["overall"]),
        *[(f"data_source={s}", v) for s, v in table["by_source"].items()],
    ]:
        rows = [
            [
                int(k),
                t["pass"][k]["mean"],
                f"[{t['pass'][k]['lo']:.3f}, {t['pass'][k]['hi']:.3f}]",
                t["maj"][k]["mean"],
                f"[{t['maj'][k]['lo']:.3f}, {t['maj'][k]['hi']:.3f}]",
                t["mean"][k]["mean"],
            ]
            for k in t["pass"]
        ]
        doc.sections.append(
            Section(
                scope, tables=[Table(["k", "pass@k", "pass 95% CI", "maj@k", "maj 95% CI", "mean@k"], rows)]
            )
        )
    doc.sections[0].figures.append(_tts_plot(doc, table))
    return doc


def run(cfg: DictConfig, scorer: Scorer | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
    """Sample, grade and summarise; returns (result dict, files written)."""
    data = Path(str(cfg.data))
    rows = read_rows(data)[: cfg.limit or None]
    texts, tok, info = sample(cfg, rows)
    records = grade(rows, texts, int(cfg.n), tok, scorer or compute_score)
    table = score_table(records, list(cfg.k), int(cfg.bootstrap), int(cfg.maj_subsets), int(cfg.seed))
    model_dir = Path(str(cfg.model))
    out = (
        Path(str(cfg.out))
        if cfg.out
        else (
            model_dir / "eval"
            if (model_dir / "run.json").exists()
            else Path("eval") / Path(info["model"]).name
        )
    )
    settings = {
        "model": info["model"],
        "checkpoint_state": info["checkpoint_state"],
        "model_arg": str(cfg.model),
        "data": str(data),
        "data_sha256": sha256_file(data),
        "n": int(cfg.n),
        "k": list(cfg.k),
        "limit": cfg.limit,
        "temperature": info["temperature"],
        "top_p": info["top_p"],
        "max_tokens": int(cfg.max_tokens),
        "seed": info["seed"],
        "sampler": info["sampler"],
        "budget_forcing": info["budget_forcing"],
        "versions": versions(),
        "bootstrap": int(cfg.bootstrap),
        "maj_subsets": int(cfg.maj_subsets),
        "generation_seconds": info["generation_seconds"],
    }
    result = {**table, "settings": settings}
    files = _document(cfg, out, table, info, data).write("eval")
    files["result"] = out / "result.json"
    files["result"].write_text(json.dumps(result, indent=1))
    files["samples"] = out / "samples.jsonl"
    files["samples"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return result, files


def command(cfg: DictConfig) -> int:
    """Evaluate and print one line per k."""
    require(cfg, "model", "data", command="analysis.evaluate")
    result, files = run(cfg)
    ov = result["overall"]
    for k in ov["pass"]:
        print(
            f"k={k:>3}  pass@k {ov['pass'][k]['mean']:.3f} [{ov['pass'][k]['lo']:.3f}, {ov['pass'][k]['hi']:.3f}]"
            f"  maj@k {ov['maj'][k]['mean']:.3f}  mean@k {ov['mean'][k]['mean']:.3f}"
        )
    if result["skipped_k"]:
        print(f"skipped k > n: {result['skipped_k']}")
    for name, path in files.items():
        print(f"wrote {name}: {path}")
    return 0


main = hydra_main("analysis", "evaluate", command)


if __name__ == "__main__":
    main()
