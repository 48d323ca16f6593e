"""The ``rm_labels`` experiment: the policy's samples labelled three ways, and the reward models.

Outcome, rule steps and Monte-Carlo steps (cost per label and agreement, ``data_pipelines.rm_data``),
an ORM and PRMs trained on them (held-out AUCs, ``recipes.rm_train``); installs the ORM and the PRM
where ``reward_model=orm|prm`` look for them (``$RLVR_CACHE/rm/``). :func:`installed_rms` gives
the other experiments this code's ORM and PRM (trained first if missing). Run through
``python -m experiments.rm_study experiment=rm_labels``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import results
from experiments.rm_common import PY, data_files, hold, log, policy, sh, workdir


def label_set(cfg: DictConfig, name: str, data: Path, model: Path, **kw: Any) -> Path:
    """``data_pipelines.rm_data`` output ``<work>/labels/<name>`` (reused when finished)."""
    out = workdir(cfg) / "labels" / name
    if not (out / "summary.json").is_file():
        out.mkdir(parents=True, exist_ok=True)
        args = [f"{k}={v}" for k, v in kw.items()]
        sh(
            [*PY, "data_pipelines.rm_data", f"model={model}", f"data={data}", f"out={out}", *args],
            out / "log.txt",
        )
    return out


def train_rm(cfg: DictConfig, name: str, kind: str, labels: str, data: Path, model: Path) -> Path:
    """``recipes.rm_train`` output ``<work>/rm/<name>`` (reused when finished)."""
    out = workdir(cfg) / "rm" / name
    if not (out / "train_report.json").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        r = cfg.rm_labels.train
        args = [f"kind={kind}", f"labels={labels}", f"data={data}", f"model={model}", f"out={out}"]
        args += [f"epochs={r.epochs}", f"lr={r.lr}", f"batch_size={r.batch_size}"]
        sh([*PY, "recipes.rm_train", *args], out.parent / f"{name}.log")
    return out


def rm_labels(cfg: DictConfig) -> dict[str, Any]:
    """Label study + the ORM and PRMs; installs the ORM/PRM for ``reward_model=orm|prm``."""
    with hold(cfg, "rm_labels", ("labels", "rm")):
        return _rm_labels(cfg)


def _rm_labels(cfg: DictConfig) -> dict[str, Any]:
    pol = policy(cfg)
    train, _ = data_files(cfg)
    s = cfg.rm_labels
    big = label_set(cfg, "train", train, pol, prompts=s.train_set.prompts, n=s.train_set.n, mc_k=0)
    # the label study: a disjoint slice of prompts (the last rows), labelled by all three sources
    study = label_set(
        cfg,
        "study",
        _tail(train, int(s.study_set.prompts), workdir(cfg)),
        pol,
        prompts=s.study_set.prompts,
        n=s.study_set.n,
        mc_k=s.study_set.mc_k,
    )
    rms = {
        "orm": train_rm(cfg, "orm", "orm", "outcome", big, pol),
        "prm": train_rm(cfg, "prm", "prm", "rule", big, pol),
        "prm_rule_study": train_rm(cfg, "prm_rule_study", "prm", "rule", study, pol),
        "prm_mc_study": train_rm(cfg, "prm_mc_study", "prm", "mc", study, pol),
    }
    cache = Path(str(cfg.install_dir)).expanduser()
    for kind in ("orm", "prm"):
        shutil.copytree(rms[kind], cache / kind, dirs_exist_ok=True)
    labels = {n: json.loads((d / "summary.json").read_text()) for n, d in (("train", big), ("study", study))}
    reports = {n: json.loads((d / "train_report.json").read_text()) for n, d in rms.items()}
    results.write_table("rm_labels", "labels", {"policy": str(pol), "sets": labels})
    results.write_table("rm_labels", "reward_models", {"policy": str(pol), "models": reports})
    return {"rms": {k: str(v) for k, v in rms.items()}}


def _tail(parquet: Path, rows: int, work: Path) -> Path:
    """The last ``rows`` rows of ``parquet`` as their own file (prompts the training set never reads)."""
    import pyarrow.parquet as pq  # only this split needs it

    out = work / "labels" / f"tail{rows}.parquet"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        t = pq.read_table(parquet)
        pq.write_table(t.slice(t.num_rows - rows, rows), out)
    return out


def installed_rms(cfg: DictConfig) -> dict[str, Path]:
    """The study's ORM and PRM of this code (trained now if missing)."""
    d = workdir(cfg) / "rm"
    if not all((d / k / "train_report.json").is_file() for k in ("orm", "prm")):
        log("reward models of this code are missing: running rm_labels first")
        rm_labels(cfg)
    return {k: d / k for k in ("orm", "prm")}
