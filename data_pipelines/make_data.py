"""``python -m data_pipelines.make_data data=<name> …``: a task or hub dataset to veRL parquet.

Writes ``<out>/train.parquet`` and/or ``<out>/test.parquet`` plus ``<out>/manifest.json`` (row
counts, SHA-256 of each file, the full config incl. generator parameters and seed, dedup /
decontamination / skipped-row reports, answer distribution). Config: ``conf/datagen/make_data.yaml``
(``--help`` prints it). ``run(cfg)`` is the importable core; tests call it directly.

Procedural tasks are generated, deduplicated, and decontaminated against their own test split
(exact normalised match) and any ``decontam.against`` files (n-grams); the train split is
topped up (prefix-stable generators) until it holds ``n`` rows. A train split whose most common
answer exceeds ``max_answer_share`` is refused. Hub datasets are converted row by row
(:mod:`data_pipelines.hub`), deduplicated and n-gram-decontaminated against their test split.
Every file is then loaded with veRL's ``RLHFDataset``. Not covered: mixing several datasets in
one file (concatenate the parquet files, or list them in ``data.train_files``).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.cli import hydra_main
from core.model import build_tokenizer
from data_pipelines import clean
from data_pipelines.hub import ADAPTERS, HubSpec, convert_rows, read_hub, read_local
from data_pipelines.io import check_loads_in_verl, read_rows, write_manifest, write_rows
from data_pipelines.tasks import TASKS, TaskFn
from data_pipelines.tasks.reasoning_gym_tasks import PREFIX as RG_PREFIX
from data_pipelines.tasks.reasoning_gym_tasks import task_for

REPO = Path(__file__).resolve().parents[1]
DEFAULT_N = 1000
Rows = list[dict[str, Any]]


def resolve_source(name: str) -> TaskFn | HubSpec:
    """The task generator or hub adapter called ``name`` (``KeyError`` lists both kinds)."""
    if name in TASKS:
        return TASKS.get(name)
    if name in ADAPTERS:
        return ADAPTERS.get(name)
    if name.startswith(RG_PREFIX):
        return task_for(name)
    if RG_PREFIX + name in TASKS:
        return TASKS.get(RG_PREFIX + name)
    raise KeyError(
        f"[data] unknown dataset {name!r}; tasks: {', '.join(TASKS.names())} (or reasoning_gym/<any "
        f"reasoning-gym dataset>); hub datasets: {', '.join(ADAPTERS.names())}"
    )


def answer_stats(rows: Rows) -> dict[str, Any]:
    """Distinct answers and the share of the most common one (countdown: of the target)."""
    keys = [str((r["extra_info"] or {}).get("target") or r["reward_model"]["ground_truth"]) for r in rows]
    if not keys:
        return {"distinct": 0, "top": None, "top_share": 0.0}
    top, count = Counter(keys).most_common(1)[0]
    return {"distinct": len(set(keys)), "top": top[:80], "top_share": round(count / len(keys), 4)}


def _against(cfg: DictConfig) -> Rows:
    rows: Rows = []
    for p in cfg.decontam.against or []:
        rows.extend(read_rows(p))
    return rows


def _decontam(
    rows: Rows, test: Rows, against: Rows, cfg: DictConfig, test_mode: str, reports: list[dict[str, Any]]
) -> Rows:
    if not cfg.decontam.enabled:
        return rows
    d = cfg.decontam
    for eval_rows, label, mode in ((test, "test split", test_mode), (against, "decontam.against", "ngram")):
        if eval_rows:
            rows, rep = clean.decontaminate(rows, eval_rows, d.n, d.max_df, "train", label, mode)
            reports.append(rep)
    return rows


def build_procedural(gen: TaskFn, cfg: DictConfig) -> tuple[dict[str, Rows], dict[str, Any]]:
    """Generate clean train/test splits of a procedural task."""
    n = int(cfg.n) if cfg.n is not None else DEFAULT_N
    n_test = int(cfg.n_test) if cfg.n_test is not None else max(1, n // 10)
    if n < 1 or n_test < 0:
        raise ValueError(f"[data] need n >= 1 and n_test >= 0, got n={n}, n_test={n_test}")
    params = dict(OmegaConf.to_container(cfg.params, resolve=True) or {})
    if cfg.template:
        params["template"] = cfg.template
    dedup_reports: list[dict[str, Any]] = []
    decontam_reports: list[dict[str, Any]] = []
    test = gen(n=n_test, seed=cfg.seed, split="test", **params) if n_test else []
    if cfg.dedup and test:
        test, rep = clean.dedup(test, "test")
        dedup_reports.append(rep)
    against = _against(cfg)
    want, attempts = n, []
    for _ in range(6):  # generators are prefix-stable: asking for more rows only appends rows
        raw = gen(n=want, seed=cfg.seed, split="train", **params)
        reps: list[dict[str, Any]] = []
        train = raw
        if cfg.dedup:
            train, rep = clean.dedup(train, "train")
            reps.append(rep)
        dreps: list[dict[str, Any]] = []
        train = _decontam(train, test, against, cfg, "exact", dreps)
        attempts.append({"generated": want, "clean": len(train)})
        if len(train) >= n:
            break
        want = int(want * 1.25) + 10
    dedup_reports += reps
    decontam_reports += dreps
    report = {
        "attempts": attempts,
        "dedup": dedup_reports,
        "decontam": decontam_reports,
        "shortfall": max(0, n - len(train)),
    }
    splits = {"train": train[:n]}
    if test:
        splits["test"] = test
    stats = answer_stats(splits["train"])
    report["answer_stats"] = stats
    if n >= 50 and stats["top_share"] > cfg.max_answer_share:
        raise ValueError(
            f"[data] {cfg.data}: answer {stats['top']!r} is {stats['top_share']:.0%} of the train split, "
            f"above max_answer_share={cfg.max_answer_share} (fix: widen the task's parameter ranges, "
            f"or raise max_answer_share if this distribution is intended)"
        )
    return splits, report


def build_hub(spec: HubSpec, cfg: DictConfig) -> tuple[dict[str, Rows], dict[str, Any]]:
    """Convert a hub dataset (or local files) into clean splits."""
    sources: dict[str, tuple[Any, str]] = {}
    if cfg.data_path:
        sources[spec.local_split] = (read_local(cfg.data_path), str(cfg.data_path))
        if cfg.test_path:
            sources["test"] = (read_local(cfg.test_path), str(cfg.test_path))
    else:
        for split in spec.splits:
            sources[split] = (read_hub(spec, split), f"{spec.hub_id}:{spec.splits[split]}")
    splits: dict[str, Rows] = {}
    report: dict[str, Any] = {"convert": [], "dedup": [], "decontam": [], "sampled": {}}
    for split, (raw, where) in sources.items():
        deduper = clean.Deduper(split) if cfg.dedup else None
        rows, rep = convert_rows(raw, spec, split, where, cfg.template, cfg.on_error, deduper)
        report["convert"].append(rep)
        if deduper is not None:
            report["dedup"].append(deduper.report())
        splits[split] = rows
    if "train" in splits:
        splits["train"] = _decontam(
            splits["train"], splits.get("test", []), _against(cfg), cfg, "ngram", report["decontam"]
        )
    if cfg.n is not None:
        for split, rows in splits.items():
            if len(rows) > cfg.n:
                keep = sorted(random.Random(cfg.seed).sample(range(len(rows)), int(cfg.n)))
                splits[split] = [rows[i] for i in keep]
                report["sampled"][split] = {"from": len(rows), "to": len(keep), "seed": cfg.seed}
    for split, rows in splits.items():
        if not rows:
            raise ValueError(
                f"[data] {cfg.data}: the {split} split is empty after cleaning; see the reports: {report}"
            )
    report["answer_stats"] = answer_stats(splits.get("train") or next(iter(splits.values())))
    return splits, report


def _validator(cfg: DictConfig) -> tuple[Any, int]:
    if cfg.validate.tokenizer:
        from verl.utils import hf_tokenizer  # veRL takes seconds to import; only this branch needs it

        tok = hf_tokenizer(str(cfg.validate.tokenizer))
    else:
        tok = build_tokenizer("byte")
    limit = cfg.validate.max_prompt_length
    return tok, int(limit) if limit is not None else 10**9


def run(cfg: DictConfig) -> dict[str, Any]:
    """Build, write, validate and describe one dataset; return the manifest."""
    if not cfg.get("data"):
        raise ValueError("[data] data=<name> is required (python -m data_pipelines.make_data --help)")
    source = resolve_source(str(cfg.data))
    out = Path(cfg.out) if cfg.out else REPO / "data" / str(cfg.data)
    if isinstance(source, HubSpec):
        splits, report = build_hub(source, cfg)
        kind = "hub"
    else:
        if cfg.data_path:
            raise ValueError(f"[data] data_path is for hub datasets; {cfg.data!r} is a procedural task")
        splits, report = build_procedural(source, cfg)
        kind = "task"
    files = {split: write_rows(rows, out / f"{split}.parquet") for split, rows in splits.items()}
    if cfg.validate.enabled:
        tok, limit = _validator(cfg)
        for info in files.values():
            info["verl_rows"] = check_loads_in_verl(info["path"], tok, limit)
    manifest = {
        "name": str(cfg.data),
        "kind": kind,
        "seed": cfg.seed,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "data_sources": sorted({r["data_source"] for rows in splits.values() for r in rows}),
        "files": files,
        "report": report,
    }
    path = write_manifest(out, manifest)
    for split, info in files.items():
        print(f"[make_data] {split}: {info['rows']} rows -> {info['path']}")
    removed = {k: sum(r["removed"] for r in report.get(k, [])) for k in ("dedup", "decontam")}
    removed["skipped"] = sum(r["skipped"] for r in report.get("convert", []))
    print(f"[make_data] removed: {removed} (details in the manifest)")
    if report.get("shortfall"):
        print(f"[make_data] WARNING: train has {report['shortfall']} rows fewer than n after cleaning")
    print(f"[make_data] manifest -> {path}")
    return manifest


def command(cfg: DictConfig) -> int:
    """The command; see ``conf/datagen/make_data.yaml``. An expected error is one ``error:`` line."""
    run(cfg)
    return 0


main = hydra_main("datagen", "make_data", command)


if __name__ == "__main__":
    main()
