"""``python -m analysis.evaluate model=<path|run dir> data=<parquet> n=64 k=[1,4,16,64]``.

Samples ``n`` answers per prompt (``analysis.sampling``: vLLM on a GPU machine, the local
engine's CPU sampler, or HF ``generate``), optionally under s1 budget forcing, grades each with
``rewards.compute_score`` and reports per data source and overall: unbiased pass@k, maj@k over
the extracted answers (``pred``; ties split, see ``analysis.metrics``) and mean@k, each with a
percentile-bootstrap 95% interval over prompts. Writes ``result.json`` (metrics + the full
settings: model, data hash, n, k, temperature, top-p, max tokens, seed, sampler, budget,
package versions), ``samples.jsonl``, ``tts.png`` (pass@k, maj@k and mean@1 against k) and
``eval.md``/``eval.html``. ``score_table`` is the pure metrics part (tests call it directly).
It does not pick checkpoints by score, and intervals ignore sampling noise within a prompt
beyond what the n samples carry.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from omegaconf import DictConfig, OmegaConf

from analysis.cli import parse, require
from analysis.metrics import SAMPLE_METRICS, bootstrap_ci
from analysis.render import Document, Section, Table
from analysis.runs import Run

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
    (``0.5``, ``1/2`` and ``\\frac{1}{2}`` vote together), else ``rewards.normalize.clean(pred)``.
    Symbolically equal non-numbers (``\\sqrt{12}`` vs ``2\\sqrt{3}``) stay separate votes."""
    if pred is None or not str(pred).strip():
        return None
    try:
        from rewards.normalize import clean, parse_number
    except ImportError:
        return str(pred).strip()
    text = clean(str(pred))
    num = parse_number(text)
    return f"{num[0]}{'%' if num[1] else ''}" if num else text


def _summary_model(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / "summary.json").read_text()).get("model")
    except (OSError, ValueError):
        return None


def resolve_model(model: str) -> tuple[str, str | None]:
    """(HF model directory or hub id, training-state file to load on top of it or None).

    ``model`` may be an HF checkpoint directory; a run directory, where the latest HF checkpoint
    below it wins (highest step number in its path; veRL's merged ``.../actor/huggingface``),
    else the local engine's latest ``checkpoints/global_step_N/state.pt`` (its ``"model"``
    weights loaded onto the config's ``actor_rollout_ref.model.path``), else that model path
    itself; or a Hugging Face hub id ``org/name``.
    """
    p = Path(model).expanduser()
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
            return str(Path(str(base)).expanduser()), state
    if not p.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        return model, None  # a Hugging Face hub id (downloaded by the sampler)
    raise FileNotFoundError(f"evaluate: model={model} is neither a checkpoint nor a run dir with one")


def versions() -> dict[str, str]:
    out = {}
    for pkg in ("torch", "transformers", "verl", "vllm", "rlvr-recipes"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


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


def run(cfg: DictConfig, scorer: Scorer | None = None) -> tuple[dict[str, Any], dict[str, Path]]:
    """Sample, grade and summarise; returns (result dict, files written)."""
    import pyarrow.parquet as pq

    from analysis.sampling import SAMPLERS, auto_sampler_name, budget_force
    from data_pipelines.io import sha256_file

    if scorer is None:
        from rewards import compute_score as scorer  # type: ignore[assignment]
    model_path, state_file = resolve_model(str(cfg.model))
    data = Path(str(cfg.data))
    rows = pq.read_table(data).to_pylist()[: cfg.limit or None]
    name = auto_sampler_name(model_path) if cfg.sampler == "auto" else str(cfg.sampler)
    settings = {"temperature": float(cfg.temperature), "top_p": float(cfg.top_p), "seed": int(cfg.seed)}
    sampler = SAMPLERS.get(name)(model_path, {**settings, "state_file": state_file})
    tok = sampler.tokenizer
    prompts = []
    for r in rows:
        ids = tok.apply_chat_template(
            [dict(m) for m in r["prompt"]], tokenize=True, add_generation_prompt=True
        )
        prompts.append(list(ids["input_ids"] if hasattr(ids, "keys") else ids))
    n = int(cfg.n)
    t0 = time.perf_counter()
    budget = OmegaConf.to_container(cfg.budget, resolve=True)
    forcing = budget.get("min_think") is not None or budget.get("max_think") is not None  # type: ignore[union-attr]
    if forcing:
        texts = [f.text for f in budget_force(sampler, prompts, n, budget, int(cfg.max_tokens))]  # type: ignore[arg-type]
    else:
        texts = [
            tok.decode(c.ids, skip_special_tokens=True)
            for c in sampler.generate(prompts, n, int(cfg.max_tokens))
        ]
    gen_s = time.perf_counter() - t0
    records = []
    for i, text in enumerate(texts):
        row = rows[i // n]
        gt = str(row["reward_model"]["ground_truth"])
        res = scorer(row["data_source"], text, gt, dict(row.get("extra_info") or {}))
        records.append(
            {
                "prompt": i // n,
                "data_source": row["data_source"],
                "output": text,
                "gts": gt,
                "score": float(res["score"]),
                "acc": bool(res.get("acc", res["score"] > 0)),
                "pred": res.get("pred"),
                "vote": vote_key(res.get("pred")),
                "format": res.get("format"),
                "response_length": len(tok.encode(text, add_special_tokens=False)),
            }
        )
    table = score_table(records, list(cfg.k), int(cfg.bootstrap), int(cfg.maj_subsets), int(cfg.seed))
    out = (
        Path(str(cfg.out))
        if cfg.out
        else (
            Path(str(cfg.model)) / "eval"
            if (Path(str(cfg.model)) / "run.json").exists()
            else Path("eval") / Path(model_path).name
        )
    )
    result = {
        **table,
        "settings": {
            "model": model_path,
            "checkpoint_state": state_file,
            "model_arg": str(cfg.model),
            "data": str(data),
            "data_sha256": sha256_file(data),
            "n": n,
            "k": list(cfg.k),
            "limit": cfg.limit,
            "temperature": settings["temperature"],
            "top_p": settings["top_p"],
            "max_tokens": int(cfg.max_tokens),
            "seed": settings["seed"],
            "sampler": name,
            "budget_forcing": budget if forcing else None,
            "versions": versions(),
            "bootstrap": int(cfg.bootstrap),
            "maj_subsets": int(cfg.maj_subsets),
            "generation_seconds": round(gen_s, 2),
        },
    }
    doc = Document(f"Evaluation: {cfg.model} on {data.name}", out)
    doc.intro.append(
        f"Model {model_path}" + (f" with the weights of {state_file}" if state_file else "") + "."
    )
    doc.intro.append(
        f"{table['n_prompts']} prompts × {n} samples, T={settings['temperature']}, top-p "
        f"{settings['top_p']}, max {cfg.max_tokens} tokens, sampler {name}"
        f"{', budget forcing ' + json.dumps(budget) if forcing else ''}."
    )
    for scope, t in [
        ("overall", table["overall"]),
        *[(f"data_source={s}", v) for s, v in table["by_source"].items()],
    ]:
        doc.sections.append(
            Section(
                scope,
                tables=[
                    Table(
                        ["k", "pass@k", "pass 95% CI", "maj@k", "maj 95% CI", "mean@k"],
                        [
                            [
                                int(k),
                                t["pass"][k]["mean"],
                                f"[{t['pass'][k]['lo']:.3f}, {t['pass'][k]['hi']:.3f}]",
                                t["maj"][k]["mean"],
                                f"[{t['maj'][k]['lo']:.3f}, {t['maj'][k]['hi']:.3f}]",
                                t["mean"][k]["mean"],
                            ]
                            for k in t["pass"]
                        ],
                    )
                ],
            )
        )
    doc.sections[0].figures.append(_tts_plot(doc, table))
    files = doc.write("eval")
    files["result"] = out / "result.json"
    files["result"].write_text(json.dumps(result, indent=1))
    files["samples"] = out / "samples.jsonl"
    files["samples"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return result, files


def main(argv: Sequence[str] | None = None) -> int:
    cfg, _ = parse("evaluate", argv)
    require(cfg, "model", "data", command="evaluate")
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


if __name__ == "__main__":
    sys.exit(main())
