"""The over-optimisation experiment (seed 004 §8): RL on a learned reward next to RL on the verifier.

Arms x seeds of ``recipes.run`` on the local engine (``jobs`` at a time), each a laptop run of
the declared recipe from the laptop policy: ``reward_model=prm`` and ``reward_model=orm`` (the
study's reward models, :mod:`experiments.rm_labels`) and ``reward_model=none`` (the verifier). Every
run logs the proxy (``rlvr/proxy_score``: the reward model's mean score on the step's rollouts)
and the gold (``rlvr/gold_acc``: the verifier's accuracy on them; ``rlvr/val_acc``: held-out).
Each finished run is recorded in ``results/overopt/runs/<arm>-s<seed>.json`` with those curves and
the verdict of the diagnostic check that flags a proxy/gold divergence (``analysis.diagnose.reward_model``).
Every seed starts from the same policy checkpoint (its cold-start seed is pinned, so only the RL
seed varies). A finished run of the same code is reused. Not covered: a KL-matched comparison (Gao et al.'s
x-axis); the curves are against steps.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from analysis.diagnose.reward_model import GOLD, HELDOUT, PROXY, divergence
from analysis.results_io import run_record
from core import results
from core.runs import Run
from experiments.rm_common import log, policy, sh, workdir
from experiments.rm_labels import installed_rms
from recipes.launch_local import local_command


def pinned_cold_start(pol: Path) -> list[str]:
    """Overrides that keep every seed on the policy checkpoint ``pol`` as built: the cold start's seed
    follows ``rlvr.seed`` by default, and a run whose cold-start settings differ from the
    checkpoint's ``rlvr_meta.json`` would rebuild it in place (a different start per seed)."""
    meta = pol / "rlvr_meta.json"
    if not meta.is_file():
        return []
    sft_seed = json.loads(meta.read_text()).get("build", {}).get("sft", {}).get("seed")
    return [] if sft_seed is None else [f"local.sft.seed={sft_seed}"]


def run_arm(cfg: DictConfig, arm: str, seed: int, rms: dict[str, Path], pol: Path) -> Path:
    """One (arm, seed) run of ``recipes.run``; returns its run directory (reused when finished)."""
    o = cfg.overopt
    run_dir = workdir(cfg) / "overopt" / f"{arm}-s{seed}"
    if (run_dir / "summary.json").is_file():
        return run_dir
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    reward = (
        ["reward_model=none"]
        if arm == "verifier"
        else [f"reward_model={arm}", f"reward.reward_model.model_path={rms[arm]}"]
    )
    cmd = local_command(o.recipe, run_dir)
    cmd += [
        f"rlvr.seed={seed}",
        f"actor_rollout_ref.model.path={pol}",
        *pinned_cold_start(pol),
        *reward,
        *o.overrides,
    ]
    log(f"overopt: {arm} seed {seed}")
    sh(cmd, run_dir.parent / f"{arm}-s{seed}.log")
    return run_dir


def record(run_dir: Path, arm: str) -> dict[str, Any]:
    """The run's results record: curves of proxy and gold, and the divergence check's verdict."""
    rec = run_record(run_dir, curves=[PROXY, GOLD, HELDOUT, "critic/score/mean"], max_points=60)
    rec["label"] = arm
    run = Run(run_dir)
    proxy, gold = run.series(PROXY), run.series(GOLD)
    if proxy is not None and gold is not None:
        d = divergence(proxy, gold)
        rec["metrics"]["divergence"] = {
            "peak_step": d.peak_step,
            "gold_peak": d.gold_peak,
            "gold_end": d.gold_end,
            "proxy_at_peak": d.proxy_at_peak,
            "proxy_end": d.proxy_end,
            "flagged": d.diverged(),
        }
    return rec


def overopt(cfg: DictConfig) -> dict[str, Any]:
    """Every (arm, seed) run, recorded in ``results/overopt/runs/`` (stale records removed)."""
    rms = installed_rms(cfg)
    pol = policy(cfg)
    o = cfg.overopt
    jobs = [(arm, int(s)) for s in o.seeds for arm in o.arms]
    with ThreadPoolExecutor(int(cfg.jobs)) as ex:
        dirs = list(ex.map(lambda j: run_arm(cfg, j[0], j[1], rms, pol), jobs))
    written = set()
    for (arm, seed), d in zip(jobs, dirs, strict=True):
        written.add(results.write_run("overopt", f"{arm}-s{seed}", record(d, arm)).name)
    for stale in (results.results_dir() / "overopt" / "runs").glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    return {"runs": len(dirs), "policy": str(pol)}
