"""``make rm KIND=orm|prm DATA=<labelled samples> MODEL=<policy>``: train an outcome or process reward model.

Seed 004 §8's two discriminative forms, on the policy's own backbone (:mod:`core.reward_model`):

- **ORM** -- the verifier's outcome label copied to every response token, token-level binary
  cross-entropy (prompt tokens masked);
- **PRM** -- the step labels (``labels=rule`` from the task's checker or ``labels=mc`` from
  Monte-Carlo continuations, hard: any continuation right) at the last token of each step,
  cross-entropy there and nowhere else.

Both are ``transformers``' own token-classification loss (2-way cross-entropy with ``-100``
masked, which is binary cross-entropy on the logit difference; a test checks it) driven by
``transformers.Trainer`` -- the same maintained trainer on a laptop CPU and on GPUs.
``dry_run=true`` composes the GPU job instead (``gpu.*``: bf16, per-device batch, torchrun
processes), validates its ``TrainingArguments`` and writes ``launch.sh``; it launches nothing.
The data is ``data_pipelines.rm_data``'s ``samples.jsonl`` (a directory holding it, or the
file); 20% of the prompts are held out (``holdout``) to report AUC of the final score against the
outcome and, for a PRM, of the step scores against the step labels. Writes the checkpoint
(``out``; by default ``$RLVR_CACHE/rm/<kind>``, where ``reward_model=<kind>`` and ``make tts
RM=<kind>`` read it) and ``out/train_report.json``. Refuses a PRM on data without step boundaries and a
base model whose vocabulary is not the one the data was encoded with, before training.
Not covered: soft (regression) MC targets, three-class labels, pairwise reward models.
"""

from __future__ import annotations

import json
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from core import reward_model as rmod
from core.cli import hydra_main, require

LABEL_SOURCES = ("outcome", "rule", "mc")


def read_samples(data: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of ``samples.jsonl`` and the ``summary.json`` next to it (empty if absent)."""
    p = Path(str(data)).expanduser()
    f = p / "samples.jsonl" if p.is_dir() else p
    if not f.is_file():
        raise FileNotFoundError(
            f"[rm] data={data}: no samples.jsonl; fix: label samples first with "
            "`python -m data_pipelines.rm_data model=<policy> data=<parquet|run dir> out=<dir>`"
        )
    rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
    summ = f.parent / "summary.json"
    return rows, (json.loads(summ.read_text()) if summ.is_file() else {})


def token_labels(row: dict[str, Any], kind: str, labels: str) -> list[int]:
    """Per-token training labels of one row (prompt excluded): ORM everywhere, PRM at step ends.

    >>> row = {"acc": True, "response_ids": [5, 6, 7], "bounds": [0, 2], "labels": {"rule": [True, None]}}
    >>> token_labels(row, "orm", "outcome"), token_labels(row, "prm", "rule")
    ([1, 1, 1], [1, -100, -100])
    """
    n = len(row["response_ids"])
    if kind == "orm":
        return [int(bool(row["acc"]))] * n
    out = [rmod.IGNORE] * n
    vals = row["labels"].get(labels)
    if vals is None:
        return out
    for b, v in zip(row["bounds"], vals, strict=True):
        if v is not None:
            out[b] = int(v > 0) if isinstance(v, float) else int(bool(v))
    return out


def check_data(rows: list[dict[str, Any]], kind: str, labels: str) -> None:
    """Refuse data a PRM cannot learn from, naming the key and the fix."""
    if kind not in rmod.KINDS:
        raise ValueError(f"[rm] kind={kind!r}; fix: kind=orm or kind=prm")
    if labels not in LABEL_SOURCES or (kind == "prm" and labels == "outcome"):
        raise ValueError(
            f"[rm] labels={labels!r} for kind={kind}; fix: orm reads outcome, prm reads rule or mc"
        )
    if kind != "prm":
        return
    if not any(len(r["steps"]) > 1 for r in rows):
        fmts = sorted({r.get("step_format", "?") for r in rows})
        raise ValueError(
            f"[rlvr.reward_model.step_format] no response in the data has step boundaries under {fmts}: a "
            "PRM needs at least two steps per response; fix: label the data with a step format that cuts "
            "these responses (data_pipelines.rm_data step_format=<name>) or train kind=orm"
        )
    if not any(v is not None for r in rows for v in r["labels"].get(labels) or []):
        raise ValueError(
            f"[rm] labels={labels}: no step of the data carries a {labels} label; fix: labels=mc "
            "(label with mc_k > 0) or a step format with a rule checker"
        )


def split(rows: list[dict[str, Any]], holdout: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Train / held-out rows, split by prompt (no prompt on both sides)."""
    keys = sorted({tuple(r["prompt_ids"]) for r in rows})
    random.Random(seed).shuffle(keys)
    held = set(keys[: int(round(len(keys) * holdout))])
    return [r for r in rows if tuple(r["prompt_ids"]) not in held], [
        r for r in rows if tuple(r["prompt_ids"]) in held
    ]


def examples(rows: list[dict[str, Any]], kind: str, labels: str) -> list[dict[str, list[int]]]:
    """Tokenised training examples (``input_ids``, ``labels`` with the prompt masked)."""
    out = []
    for r in rows:
        lab = token_labels(r, kind, labels)
        if all(x == rmod.IGNORE for x in lab):
            continue
        out.append(
            {
                "input_ids": r["prompt_ids"] + r["response_ids"],
                "labels": [rmod.IGNORE] * len(r["prompt_ids"]) + lab,
            }
        )
    return out


def auc(scores: list[float], labels: list[bool]) -> float:
    """Area under the ROC curve (Mann-Whitney U / n+n-, ``scipy``); nan with one class only.

    >>> auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True])
    0.75
    """
    from scipy.stats import mannwhitneyu  # scipy.stats loads in ~0.5 s; only the report needs it

    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))


def evaluate(rm: rmod.RewardModel, rows: list[dict[str, Any]], labels: str) -> dict[str, float]:
    """Held-out AUCs: final score (``last`` / ``min_step``) vs outcome; step scores vs step labels."""
    probs = rmod.token_probs(rm, [r["prompt_ids"] for r in rows], [r["response_ids"] for r in rows])
    out = {"n": len(rows), "outcome_rate": float(np.mean([r["acc"] for r in rows])) if rows else float("nan")}
    acc = [bool(r["acc"]) for r in rows]
    for agg in ("last", "min_step"):
        out[f"auc_{agg}"] = auc(
            [rmod.aggregate(agg, p, r["bounds"]) for p, r in zip(probs, rows, strict=True)], acc
        )
    if labels in ("rule", "mc"):
        s, y = [], []
        for p, r in zip(probs, rows, strict=True):
            for b, v in zip(r["bounds"], r["labels"].get(labels) or [], strict=False):
                if v is not None:
                    s.append(float(p[b]))
                    y.append(v > 0 if isinstance(v, float) else bool(v))
        out["auc_steps"] = auc(s, y)
        out["step_label_rate"] = float(np.mean(y)) if y else float("nan")
    return out


def training_args(cfg: DictConfig, out: Path, gpu: bool = False) -> Any:
    """``transformers.TrainingArguments`` of the laptop run, or (``gpu``) of the GPU job without
    its hardware-only flags (bf16/tf32 are checked against the GPU at launch)."""
    from transformers import TrainingArguments  # ~2 s with torch: only training needs it

    kw: dict[str, Any] = {
        "output_dir": str(out / "trainer"),
        "learning_rate": float(cfg.lr),
        "num_train_epochs": float(cfg.epochs),
        "per_device_train_batch_size": int(cfg.batch_size),
        "warmup_steps": int(cfg.warmup_steps),
        "lr_scheduler_type": "constant_with_warmup",
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "seed": int(cfg.seed),
        "logging_steps": 50,
        "save_strategy": "no",
        "report_to": [],
        "disable_tqdm": not bool(cfg.progress),
    }
    if gpu:
        g = OmegaConf.to_container(cfg.gpu, resolve=True)
        kw.update({k: v for k, v in g.items() if k not in ("bf16", "nproc_per_node", "model", "tf32")})
        return TrainingArguments(**kw)
    return TrainingArguments(**kw, use_cpu=True, dataloader_num_workers=0)


def out_dir(cfg: DictConfig) -> Path:
    """``out``, or by default where ``reward_model=<kind>`` reads (a dry run: ``reports/rm-<kind>-gpu``)."""
    if cfg.out is not None:
        return Path(str(cfg.out)).expanduser()
    return Path("reports") / f"rm-{cfg.kind}-gpu" if cfg.dry_run else rmod.installed(str(cfg.kind))


def train(cfg: DictConfig) -> dict[str, Any]:
    """Train, evaluate on the held-out prompts and save; returns the report."""
    from transformers import DataCollatorForTokenClassification, Trainer  # ~2 s: only training needs it

    torch.set_num_threads(int(cfg.threads))
    rows, summ = read_samples(cfg.data)
    kind, labels = str(cfg.kind), str(cfg.labels or ("outcome" if cfg.kind == "orm" else "rule"))
    check_data(rows, kind, labels)
    rm = rmod.build(cfg.model, kind, int(cfg.seed))
    if summ.get("vocab") and summ["vocab"] != rm.info.vocab:
        raise ValueError(
            f"[rm] model={cfg.model}: its vocabulary ({rm.info.vocab}) is not the one data={cfg.data} was "
            f"encoded with ({summ['vocab']}); fix: label the data with this model, or train on the model that labelled it"
        )
    train_rows, held = split(rows, float(cfg.holdout), int(cfg.seed))
    out = out_dir(cfg)
    tok = rm.tokenizer
    tok.padding_side = "right"
    t0, c0 = time.time(), time.process_time()
    trainer = Trainer(
        model=rm.model,
        args=training_args(cfg, out),
        train_dataset=examples(train_rows, kind, labels),
        data_collator=DataCollatorForTokenClassification(tok, label_pad_token_id=rmod.IGNORE),
    )
    result = trainer.train()
    rm.info.step_format = rows[0].get("step_format")
    rm.info.labels = labels
    report = {
        "kind": kind,
        "labels": labels,
        "train_rows": len(train_rows),
        "heldout_rows": len(held),
        "train_loss": float(result.training_loss),
        "steps": int(result.global_step),
        "wall_s": time.time() - t0,
        "cpu_s": time.process_time() - c0,
        "heldout": evaluate(rm, held, labels),
        "data": str(cfg.data),
    }
    rm.info.training = report
    rmod.save(rm, out)
    (out / "train_report.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def dry_run(cfg: DictConfig) -> Path:
    """Compose and validate the GPU job (``TrainingArguments``) and write ``launch.sh``; run nothing."""
    out = out_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    args = training_args(cfg, out, gpu=True)
    gpu = OmegaConf.to_container(cfg.gpu, resolve=True)
    keys = [
        f"{k}={v}"
        for k, v in OmegaConf.to_container(cfg, resolve=True).items()
        if k not in ("gpu", "dry_run")
    ]
    cmd = ["torchrun", f"--nproc_per_node={gpu['nproc_per_node']}", "-m", "recipes.rm_train", *keys]
    cmd += [f"gpu.{k}={v}" for k, v in gpu.items()]
    (out / "launch.sh").write_text("#!/usr/bin/env bash\nset -euo pipefail\n" + shlex.join(cmd) + "\n")
    (out / "training_args.json").write_text(args.to_json_string())
    return out / "launch.sh"


def command(cfg: DictConfig) -> int:
    """Train (or, with ``dry_run=true``, compose the GPU job) and print the held-out report."""
    require(cfg, "kind", "data", "model", command="recipes.rm_train")
    if cfg.kind not in rmod.KINDS:
        raise ValueError(f"[rm] kind={cfg.kind!r}; fix: kind=orm or kind=prm")
    if cfg.dry_run:
        path = dry_run(cfg)
        print(
            f"[rm] GPU job composed and validated (TrainingArguments; bf16 is checked on the GPU at launch): {path}"
        )
        print("[rm] nothing was launched (no GPU run was executed here)", file=sys.stderr)
        return 0
    r = train(cfg)
    h = r["heldout"]
    print(
        f"[rm] {r['kind']} ({r['labels']} labels): {r['steps']} steps, loss {r['train_loss']:.3f}, "
        f"held-out AUC last {h['auc_last']:.3f} min_step {h['auc_min_step']:.3f}"
        + (f" steps {h['auc_steps']:.3f}" if "auc_steps" in h else "")
        + f" -> {out_dir(cfg)}"
    )
    if cfg.out is None:
        print(f"[rm] installed where reward_model={r['kind']} and make tts RM={r['kind']} read it")
    return 0


main = hydra_main("command", "rm", command)


if __name__ == "__main__":
    main()
