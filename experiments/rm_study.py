"""Seed 004 §4 and §8 at laptop scale: ``python -m experiments.rm_study experiment=<name>``.

Four experiments, each one command (``make results NAME=<name>``), each recording its declared
design (claim, primary metric, seeds -- ``conf/command/rm_study.yaml``) in
``results/<name>/experiment.json`` *before* it runs and its numbers through ``core.results``:

- ``rm_labels`` -- the policy's samples labelled three ways (outcome, rule steps, Monte-Carlo steps:
  cost per label and agreement), an ORM and PRMs trained on them (held-out AUCs). Also installs
  the ORM and the PRM where ``reward_model=orm|prm`` look for them (``$RLVR_CACHE/rm/``)
  (``experiments.rm_labels``).
- ``tts`` -- one checkpoint, N = 1, 4, 16, 64: pass@N, majority vote, best-of-N by ORM and PRM,
  reward-weighted vote (``analysis.tts``).
- ``overopt`` -- RL on the PRM, on the ORM and on the verifier, seeds x arms (``experiments.rm_runs``).
- ``opd`` -- on-policy distillation vs outcome-reward RL vs SFT on teacher samples (``experiments.rm_opd``).

Everything is built from the laptop policy (the engine's cold start, built on first use) and
cached under ``<out>/<code hash>/`` (a hash of the sources that make it), so re-running an
experiment reuses finished pieces of the same code and redoes everything after a code change.
An experiment runs holding ``results/<name>/`` and its run folders ``<out>/<code hash>/<name>/``
(``core.locks``): a second run of it meanwhile stops at once, naming the PID in the way.
What the experiments share (the policy, the cache folder, the locks): ``experiments.rm_common``.
Not covered: GPU runs (the GPU paths are dry runs: ``make rm ... dry_run=true``, ``recipe=opd engine=verl``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import locks, results
from core.cli import hydra_main
from experiments.rm_common import PY, data_files, hold, log, policy, sh, workdir
from experiments.rm_labels import installed_rms, rm_labels


def design(cfg: DictConfig, name: str) -> dict[str, Any]:
    """The experiment's declared design (from the YAML, written before anything runs)."""
    return OmegaConf.to_container(cfg[name].design, resolve=True)  # type: ignore[return-value]


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
    from experiments import rm_opd, rm_runs  # the run-heavy experiments (torch): imported when asked for

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
