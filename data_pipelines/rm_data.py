"""``python -m data_pipelines.rm_data model=<policy> data=<parquet|run dir|filter out dir> out=<dir>``.

Builds the training data of outcome and process reward models from a policy's own samples and
prices each label source (seed 004 §8: "ORM labels come free with the verifier; PRM labels cost
rollouts x steps"). The responses come from a registered source (:data:`SOURCES`):

- ``parquet`` -- a veRL parquet file: ``n`` fresh samples per prompt from ``model`` (the sampling
  the offline filter does, :mod:`core.sampling`);
- ``rollouts`` -- a run directory's training dumps (``rollouts/<step>.jsonl``, either engine);
- ``filter`` -- an offline-filter output directory (its ``summary.json`` names the data and the
  sample cache).

Every response is graded by ``rewards.compute_score`` (outcome label), cut into steps by its step
format (:mod:`data_pipelines.steps`), labelled by the format's rule checker where it has one and,
with ``mc_k > 0``, by Monte-Carlo continuations (:mod:`data_pipelines.rm_labels`). Writes
``<out>/samples.jsonl`` (one row per response: prompt and response ids, step boundaries as token
indices, every label) and ``<out>/summary.json`` (counts, each source's cost, pairwise agreement,
the policy's vocabulary fingerprint). Responses without a step boundary are kept for ORMs and
counted. Not covered: resuming a half-finished labelling (it is minutes at laptop scale).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

import rewards
from core import reward_model as rmod
from core.cli import hydra_main, require
from core.data import Prompt, chat_ids, read_rows
from core.registry import Registry
from core.sampling import Settings, decode, make_sampler, score_text
from data_pipelines.rm_labels import Cost, Item, agreement, mc_labels, rule_labels
from data_pipelines.steps import step_format


@dataclass
class Sample:
    """A prompt row (veRL schema) and one response to it."""

    row: dict[str, Any]
    response: str


SOURCES: Registry[Callable[[Path, DictConfig], list[Sample]]] = Registry("sample source")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@SOURCES.register("parquet")
def from_parquet(path: Path, cfg: DictConfig) -> list[Sample]:
    """``cfg.n`` fresh samples per prompt of the first ``cfg.prompts`` rows, from ``cfg.model``."""
    rows = read_rows(path)[: cfg.prompts or None]
    sampler = make_sampler(
        str(cfg.sampler), str(cfg.model), Settings(temperature=float(cfg.temperature), seed=int(cfg.seed))
    )
    ids = [chat_ids(sampler.tokenizer, r["prompt"]) for r in rows]
    texts = decode(sampler.tokenizer, sampler.generate(ids, int(cfg.n), int(cfg.max_tokens)))
    return [Sample(rows[i // int(cfg.n)], t) for i, t in enumerate(texts)]


@SOURCES.register("rollouts")
def from_rollouts(path: Path, cfg: DictConfig) -> list[Sample]:
    """The training dumps of a run directory (the prompt is rebuilt as one user turn)."""
    out = []
    for f in sorted((path / "rollouts").glob("*.jsonl"), key=lambda p: int(p.stem)):
        for r in _read_jsonl(f):
            extra = {k: v for k, v in r.items() if k not in ("input", "output", "gts", "score", "step")}
            row = {
                "prompt": [{"role": "user", "content": r["input"]}],
                "data_source": r.get("data_source") or str(cfg.data_source),
                "reward_model": {"ground_truth": r["gts"]},
                "extra_info": {"question": r["input"], **{k: v for k, v in extra.items() if k in ("a", "b")}},
            }
            out.append(Sample(row, r["output"]))
    return out[-int(cfg.prompts * cfg.n) :] if cfg.prompts else out


@SOURCES.register("filter")
def from_filter(path: Path, cfg: DictConfig) -> list[Sample]:
    """Every sample an offline-filter run cached (``summary.json``: ``data`` and ``cache_dir``)."""
    import pyarrow.parquet as pq  # only this source reads the shards

    summ = json.loads((path / "summary.json").read_text())
    rows = read_rows(summ["data"])
    shards = sorted(Path(summ["cache_dir"]).glob("samples-*.parquet"))
    recs = [r for s in shards for r in pq.read_table(s).to_pylist()]
    return [Sample(rows[int(r["prompt_index"])], r["response"]) for r in recs]


def source_of(path: Path) -> str:
    """Which source reads ``path``: a parquet file, a filter output, or a run directory."""
    if path.is_file() and path.suffix == ".parquet":
        return "parquet"
    if (path / "summary.json").is_file() and "cache_dir" in (path / "summary.json").read_text():
        return "filter"
    if (path / "rollouts").is_dir():
        return "rollouts"
    raise FileNotFoundError(
        f"[rm_data] data={path}: not a parquet file, a filter output (summary.json) or a run directory with "
        "rollouts/; fix: point data= at one of them"
    )


def _prompt(row: dict[str, Any]) -> Prompt:
    return Prompt(
        [],
        "",
        row["data_source"],
        str(row["reward_model"]["ground_truth"]),
        dict(row.get("extra_info") or {}),
    )


def build_items(
    samples: list[Sample], tok: Any, fmt_name: str | None
) -> tuple[list[Item], list[dict[str, Any]]]:
    """Grade, split and encode every sample; returns the label items and their output rows."""
    items, rows = [], []
    for s in samples:
        p = _prompt(s.row)
        _, acc, res = score_text(rewards.compute_score, p, s.response)
        fmt = step_format(fmt_name, p.data_source)
        steps = fmt.split(s.response)
        pids = chat_ids(tok, s.row["prompt"])
        rids, ends = rmod.encode(tok, s.response)
        items.append(Item(pids, s.response, steps, bool(acc), p))
        rows.append(
            {
                "data_source": p.data_source,
                "ground_truth": p.ground_truth,
                "extra_info": p.extra_info,
                "prompt_ids": pids,
                "response": s.response,
                "response_ids": rids,
                "acc": bool(acc),
                "pred": res.get("pred"),
                "step_format": fmt.name,
                "steps": [[st.start, st.end] for st in steps],
                "bounds": rmod.boundary_tokens(ends, [st.end for st in steps]),
                "labels": {"rule": rule_labels(fmt, steps, p.ground_truth, p.extra_info)},
            }
        )
    return items, rows


def label(cfg: DictConfig, samples: list[Sample]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Outcome, rule and Monte-Carlo labels for ``samples``; returns (rows, summary)."""
    sampler = make_sampler(
        str(cfg.sampler), str(cfg.model), Settings(temperature=float(cfg.temperature), seed=int(cfg.seed) + 1)
    )
    tok = sampler.tokenizer
    t0 = time.perf_counter()
    items, rows = build_items(samples, tok, cfg.step_format)
    costs = {
        "outcome": Cost(labels=len(rows), seconds=time.perf_counter() - t0).as_dict(),
        "rule": Cost(labels=sum(x is not None for r in rows for x in r["labels"]["rule"])).as_dict(),
    }
    if int(cfg.mc_k) > 0:
        values, cost = mc_labels(items, sampler, rewards.compute_score, int(cfg.mc_k), int(cfg.max_tokens))
        for r, v in zip(rows, values, strict=True):
            r["labels"]["mc"] = v
        costs["mc"] = cost.as_dict()
    return rows, summarise(rows, costs, tok)


def summarise(rows: list[dict[str, Any]], costs: dict[str, Any], tok: Any) -> dict[str, Any]:
    """Counts, costs and the pairwise agreement of the step-label sources."""
    flat: dict[str, list[bool | None]] = {"rule": [], "mc_hard": [], "mc_soft": [], "outcome": []}
    for r in rows:
        flat["rule"] += r["labels"]["rule"]
        flat["outcome"] += [r["acc"]] * len(r["steps"])
        for v in r["labels"].get("mc", [None] * len(r["steps"])):
            flat["mc_hard"].append(None if v is None else v > 0)
            flat["mc_soft"].append(None if v is None else v >= 0.5)
    pairs = [("rule", "mc_hard"), ("rule", "mc_soft"), ("outcome", "rule"), ("outcome", "mc_hard")]
    return {
        "responses": len(rows),
        "accuracy": sum(r["acc"] for r in rows) / max(len(rows), 1),
        "steps": len(flat["rule"]),
        "without_steps": sum(not r["steps"] for r in rows),
        "single_step": sum(len(r["steps"]) == 1 for r in rows),
        "rule_unreadable": sum(x is None for x in flat["rule"]),
        "costs": costs,
        "agreement": {
            f"{a}~{b}": agreement(flat[a], flat[b]) for a, b in pairs if any(flat[b]) or b == "rule"
        },
        "vocab": rmod.vocab_fingerprint(tok),
    }


def run(cfg: DictConfig) -> dict[str, Any]:
    """Read or sample the responses, label them, write ``samples.jsonl`` and ``summary.json``."""
    torch.set_num_threads(int(cfg.threads))
    data = Path(str(cfg.data)).expanduser()
    src = str(cfg.source) if cfg.source else source_of(data)
    t0 = time.perf_counter()
    samples = SOURCES.get(src)(data, cfg)
    if not samples:
        raise ValueError(f"[rm_data] data={data} ({src}) holds no responses")
    t_sample = time.perf_counter() - t0
    rows, summary = label(cfg, samples)
    summary.update(
        {
            "source": src,
            "data": str(data),
            "model": str(cfg.model),
            "sample_seconds": t_sample,
            "mc_k": int(cfg.mc_k),
        }
    )
    out = Path(str(cfg.out))
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "samples.jsonl.tmp"
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    tmp.replace(out / "samples.jsonl")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return summary


def command(cfg: DictConfig) -> int:
    """Label and print the costs and agreements."""
    require(cfg, "model", "data", "out", command="data_pipelines.rm_data")
    s = run(cfg)
    print(
        f"[rm_data] {s['responses']} responses ({s['accuracy']:.3f} correct), {s['steps']} steps -> {cfg.out}"
    )
    for name, c in s["costs"].items():
        print(f"  {name:>8}: {c['labels']} labels, {c['samples_per_label']:.2f} samples/label")
    for pair, a in s["agreement"].items():
        print(f"  {pair}: agree {a['agree']:.3f}, kappa {a['kappa']:.3f} over {a['n']} steps")
    return 0


main = hydra_main("datagen", "rm_data", command)


if __name__ == "__main__":
    main()
