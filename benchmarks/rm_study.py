"""Seed 004 §4 and §8 at laptop scale: ``python -m benchmarks.rm_study experiment=<name>``.

Four experiments, each one command (``make results NAME=<name>``), each recording its declared
design (claim, primary metric, seeds -- ``conf/command/rm_study.yaml``) in
``results/<name>/experiment.json`` *before* it runs and its numbers through ``core.results``:

- ``rm_labels`` -- the policy's samples labelled three ways (outcome, rule steps, Monte-Carlo steps:
  cost per label and agreement), an ORM and PRMs trained on them (held-out AUCs). Also installs
  the ORM and the PRM where ``reward_model=orm|prm`` look for them (``$RLVR_CACHE/rm/``).
- ``tts`` -- one checkpoint, N = 1, 4, 16, 64: pass@N, majority vote, best-of-N by ORM and PRM,
  reward-weighted vote (``analysis.tts``) -- :mod:`benchmarks.rm_runs` for the next two.
- ``overopt`` -- RL on the PRM, on the ORM and on the verifier, seeds x arms (``benchmarks.rm_runs``).
- ``opd`` -- on-policy distillation vs outcome-reward RL vs SFT on teacher samples (``benchmarks.rm_opd``).

Everything is built from the laptop policy (the engine's cold start, built on first use) and
cached under ``<out>/<code hash>/`` (a hash of the sources that make it), so re-running an
experiment reuses finished pieces of the same code and redoes everything after a code change.
An experiment runs holding ``results/<name>/`` and its run folders ``<out>/<code hash>/<name>/``
(``core.locks``): a second run of it meanwhile stops at once, naming the PID in the way.
Not covered: GPU runs (the GPU paths are dry runs: ``make rm ... dry_run=true``, ``recipe=opd engine=verl``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import locks, results
from core.cli import hydra_main
from core.fingerprint import source_hash

CODE = ("core", "recipes", "rewards", "data_pipelines", "analysis", "conf", "benchmarks/rm_study.py")


def log(msg: str) -> None:
    print(f"[rm_study] {msg}", file=sys.stderr, flush=True)


def workdir(cfg: DictConfig) -> Path:
    """``<out>/<code hash>``: where this code's artefacts live."""
    d = Path(str(cfg.out)).expanduser() / source_hash(CODE)
    d.mkdir(parents=True, exist_ok=True)
    return d


def design(cfg: DictConfig, name: str) -> dict[str, Any]:
    """The experiment's declared design (from the YAML, written before anything runs)."""
    return OmegaConf.to_container(cfg[name].design, resolve=True)  # type: ignore[return-value]


def sh(cmd: list[str], logfile: Path) -> float:
    """Run ``cmd`` with its output in ``logfile``; returns the child's CPU seconds; raises on failure."""
    import resource  # only sh() needs it

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with logfile.open("w") as fh:
        rc = subprocess.call(cmd, stdout=fh, stderr=subprocess.STDOUT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise RuntimeError(f"[rm_study] {' '.join(cmd[:4])}... failed (exit {rc}); see {logfile}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def policy(cfg: DictConfig) -> Path:
    """The laptop policy checkpoint (the local engine's cold start, built on first use)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn  # veRL: ~10 s, only building needs it

    from recipes.compose import compose  # deferred: the study's CLI starts without the engine
    from recipes.local.coldstart import (
        ensure_model,
    )  # deferred: the engine loads only when the policy is built
    from recipes.local.data import ensure_task_files  # deferred with the engine

    c = compose(["recipe=grpo", "scale=laptop", *cfg.policy_overrides])
    ensure_task_files(c)
    return ensure_model(c, get_custom_reward_fn(c), log)


def data_files(cfg: DictConfig) -> tuple[Path, Path]:
    """The laptop task's train and held-out parquet files (written on first use)."""
    from recipes.compose import compose  # deferred: the study's CLI starts without the engine
    from recipes.local.data import ensure_task_files  # deferred with the engine

    c = compose(["recipe=grpo", "scale=laptop", *cfg.policy_overrides])
    ensure_task_files(c)
    return Path(str(c.data.train_files)), Path(str(c.data.val_files))


PY = [sys.executable, "-m"]


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


def tts(cfg: DictConfig) -> dict[str, Any]:
    """The scaling table on the laptop policy's held-out prompts (``analysis.tts``)."""
    rms = installed_rms(cfg)
    pol = policy(cfg)
    _, val = data_files(cfg)
    t = cfg.tts
    out = workdir(cfg) / "tts"
    args = [
        f"model={pol}",
        f"data={val}",
        f"rm=[{rms['orm']},{rms['prm']}]",
        f"prompts={t.prompts}",
        f"n={t.n}",
    ]
    args += [f"ks=[{','.join(str(k) for k in t.ks)}]", f"out={out}", "results=tts", f"seed={t.seed}"]
    out.mkdir(parents=True, exist_ok=True)
    sh([*PY, "analysis.tts", *args], out / "log.txt")
    return {"out": str(out)}


def command(cfg: DictConfig) -> int:
    from benchmarks import rm_opd, rm_runs  # the run-heavy experiments: imported when asked for

    fns = {"rm_labels": rm_labels, "tts": tts, "overopt": rm_runs.overopt, "opd": rm_opd.opd}
    name = str(cfg.experiment)
    if name not in fns:
        print(f"error: experiment={name!r}; one of {', '.join(fns)}", file=sys.stderr)
        return 2
    try:
        with hold(cfg, name, ("labels", "rm") if name == "rm_labels" else (name,)):
            return _run(cfg, name, fns[name])
    except locks.FolderBusy as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def hold(cfg: DictConfig, experiment: str, folders: tuple[str, ...]) -> ExitStack:
    """Hold ``results/<experiment>/`` and this code's run folders ``<work>/<folder>`` (``core.locks``)."""
    stack = ExitStack()
    try:
        stack.enter_context(results.lock(experiment))
        for f in folders:
            stack.enter_context(
                locks.hold(workdir(cfg) / f, "run folder", "give this run its own out=<folder>")
            )
    except BaseException:
        stack.close()
        raise
    return stack


def _run(cfg: DictConfig, name: str, fn: Callable[[DictConfig], dict[str, Any]]) -> int:
    cmd = results.command_line()  # as typed, with every override (jobs=, out=, ...)
    results.write_experiment(name, command=cmd, design=design(cfg, name))
    t0, c0 = time.time(), time.process_time()
    out = fn(cfg)
    d = {**design(cfg, name), "wall_s": time.time() - t0, "cpu_s_main": time.process_time() - c0, **out}
    results.write_experiment(name, command=cmd, design=d)
    log(f"{name} done in {(time.time() - t0) / 60:.1f} min: results/{name}/")
    return 0


main = hydra_main("command", "rm_study", command)


if __name__ == "__main__":
    main()
