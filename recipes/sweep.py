"""Run one ablation sweep (``conf/sweep/<name>.yaml``) as a Hydra multirun, then its report.

``python -m recipes.sweep sweep=<name> [recipe=...] [scale=...] [launcher=local_parallel|slurm_gpu|ray_cluster] [plan=true] [k=v ...]``

A swept key on the command line replaces the file's list, e.g. ``rlvr.seed=0,1`` runs two seeds.
``resume=multirun/<name>-<time>`` continues a killed sweep in its directory with its recorded
overrides: finished runs are reported as they are, the others resume from their last checkpoint.

Does: read the sweep's axis and seeds from ``hydra.sweeper.params``, list the arms, build the
seeds' cold starts first, in parallel (laptop scale; ``rlvr.sweep.cold_start: default``, below), launch ``python -m recipes.run -m sweep=<name> ...``
with a launcher (local: joblib, two processes on a 2-core machine; clusters: ``launcher=slurm_gpu``
through submitit or ``launcher=ray_cluster`` through hydra-ray-launcher) into
``multirun/<name>-<time>/``, record the wall time in ``sweep.json`` there, and finish with
``python -m analysis.report sweep=<dir>``. ``plan=true`` prints the arms only.

``rlvr.sweep.cold_start: default`` (laptop scale only): the sweep trains on its own task (e.g. mixed
2/3/4-digit sums) but starts every arm of seed ``s`` from the *default-task* cold-start checkpoint of
seed ``s`` -- the feasibility run's design, where the hardest problems lie outside the SFT range.
The local engine trains its cold start on ``data.train_files``, so the sweep's ``model.path`` is
filled before launch with a copy of the default checkpoint (built by the engine's own
``ensure_model`` if missing) without its build stamp; the engine then uses it as a given checkpoint.
The shared default checkpoints are never rebuilt or touched.

Does not: decide what a sweep contains (the YAML does) or compute statistics (``analysis``).
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from recipes.compose import CONF_DIR, check_choice, options

_OWN = ("sweep", "launcher", "plan", "resume")


def _compose_with_hydra(overrides: list[str], hydra_cfg: bool = True):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return compose("config", overrides=overrides, return_hydra_config=hydra_cfg)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("config", overrides=overrides, return_hydra_config=hydra_cfg)


def sweep_params(name: str, extra: list[str] = ()) -> dict[str, list[str]]:
    """``{override key: [values]}`` of a sweep, e.g. ``{"kl": ["none", "k3_0.01"], "rlvr.seed": [...]}``."""
    check_choice([f"sweep={name}"], "sweep")
    # the lists live in the sweep file; only hydra.* overrides can change them
    own = [o for o in extra if _key(o).startswith("hydra.") and "," not in o.split("=", 1)[-1]]
    cfg = _compose_with_hydra([f"sweep={name}", *own])
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    out = {k: [v.strip() for v in str(vals).split(",")] for k, vals in params.items()}
    for o in extra:  # a swept key given on the command line replaces the file's list (Hydra does the same)
        k, _, v = o.partition("=")
        if k in out:
            out[k] = [x.strip() for x in v.split(",")]
        elif "," in v:
            raise ValueError(f"{o}: only the sweep's own keys ({', '.join(out)}) can take a list here")
    return out


def arms(name: str, extra: list[str] = ()) -> list[list[str]]:
    """Every arm of the sweep as a list of overrides (cartesian product of the params, in their order)."""
    params = sweep_params(name, extra)
    keys = list(params)
    return [
        [f"{k}={v}" for k, v in zip(keys, combo, strict=True)]
        for combo in itertools.product(*params.values())
    ]


def _key(ov: str) -> str:
    return ov.split("=", 1)[0].lstrip("+~")


def _prepare_seed(name: str, with_scale: list[str], seed: str, default_start: bool) -> str | None:
    """Build (or copy) one seed's cold start; returns the directory written, or None if it existed."""
    import torch
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from recipes.local.data import ensure_task_files
    from recipes.local.sft import ensure_model

    torch.set_num_threads(1)
    cfg = _compose_with_hydra([f"sweep={name}", *with_scale, f"rlvr.seed={seed}"], hydra_cfg=False)
    target = Path(str(cfg.actor_rollout_ref.model.path)).expanduser()
    if not default_start:
        # the sweep's own cold start (e.g. format_weight's): the engine would build it in the first
        # arm of the seed while the other arms wait on its lock; built here, every core works
        meta = target / "rlvr_meta.json"
        before = meta.read_text() if meta.is_file() else None
        ensure_task_files(cfg)
        ensure_model(cfg, get_custom_reward_fn(cfg), lambda m: print(m, file=sys.stderr, flush=True))
        return None if before == meta.read_text() else str(target)
    if (target / "config.json").is_file():
        return None
    keep = [o for o in with_scale if _key(o) in ("scale", "model", "local.model", "local.sft.seed")]
    dflt = _compose_with_hydra(["recipe=dapo", *keep, f"rlvr.seed={seed}"], hydra_cfg=False)
    ensure_task_files(dflt)
    src = ensure_model(dflt, get_custom_reward_fn(dflt), lambda m: print(m, file=sys.stderr, flush=True))
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("rlvr_meta.json", ".*"))
    stamp = {"copied_from": str(src), "by": "recipes.sweep (rlvr.sweep.cold_start=default)", "sweep": name}
    (tmp / "sweep_cold_start.json").write_text(json.dumps(stamp, indent=2) + "\n")
    tmp.rename(target)
    print(f"[sweep] cold start for seed {seed}: {src} -> {target}", file=sys.stderr, flush=True)
    return str(target)


def prepare(name: str, extra: list[str] = (), jobs: int = 2) -> list[str]:
    """Build every seed's cold start before the multirun (laptop scale, local engine), ``jobs`` at a time.

    With ``rlvr.sweep.cold_start: default`` each seed's default-task checkpoint is built if missing and
    copied to the sweep's ``model.path``; otherwise the sweep's own cold start is built in place (a
    no-op when cached). Returns the checkpoint directories written (empty when there is nothing to do).
    """
    if not any(_key(o) == "scale" for o in extra):
        import torch

        if torch.cuda.is_available():  # recipes.run keeps the published scale on a GPU machine
            return []
    params = sweep_params(name, extra)
    fixed = [o for o in extra if _key(o) not in params]
    with_scale = fixed if any(_key(o) == "scale" for o in fixed) else [*fixed, "scale=laptop"]
    base = _compose_with_hydra([f"sweep={name}", *with_scale], hydra_cfg=False)
    if base.rlvr.scale != "laptop" or str(OmegaConf.select(base, "engine.name")) == "verl":
        return []
    default_start = OmegaConf.select(base, "rlvr.sweep.cold_start") == "default"
    seeds = params["rlvr.seed"]
    args = [(name, with_scale, seed, default_start) for seed in seeds]
    if jobs <= 1 or len(seeds) == 1:
        done = [_prepare_seed(*a) for a in args]
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        # spawn: a fresh interpreter per worker (no forked Hydra/torch state)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            done = list(pool.map(_prepare_seed, *zip(*args, strict=True)))
    return [d for d in done if d]


def _resume_dir(name: str, given: str, extra: list[str]) -> tuple[Path, list[str], dict]:
    """Check ``resume=<dir>`` belongs to sweep ``name``; returns (dir, overrides to use, previous record)."""
    out = Path(given)
    if not out.is_dir() or not out.name.startswith(f"{name}-"):
        raise ValueError(
            f"resume={given}: not a directory of sweep {name!r} (expected multirun/{name}-<time>)"
        )
    rec_file = out / "sweep.json"
    prev = json.loads(rec_file.read_text()) if rec_file.is_file() else {}
    before = prev.get("overrides")
    if before is not None and extra and list(extra) != before:
        raise ValueError(
            f"resume={given}: overrides {list(extra)} differ from the sweep's {before}; job numbers would map to "
            "other arms (fix: give the same overrides, or none to reuse them)"
        )
    return out, list(before if before is not None and not extra else extra), prev


def _write_record(out: Path, record: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(record, indent=2) + "\n")


def main(argv: list[str]) -> int:
    args = dict(a.split("=", 1) for a in argv if "=" in a and a.split("=", 1)[0] in _OWN)
    extra = [a for a in argv if a.split("=", 1)[0] not in _OWN]
    name = args.get("sweep")
    if not name or name in ("-h", "--help"):
        print(__doc__ + f"\nsweeps: {', '.join(options('sweep'))}", file=sys.stderr)
        return 2
    prev: dict = {}
    try:
        if "resume" in args:
            out, extra, prev = _resume_dir(name, args["resume"], extra)
        else:
            out = Path("multirun") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        plan = arms(name, extra)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"[sweep] {name}: {len(plan)} runs", file=sys.stderr)
    for a in plan:
        print("    " + " ".join(a), file=sys.stderr)
    if "resume" in args:
        n_done = sum(1 for _ in out.glob("*/summary.json"))
        print(
            f"[sweep] resuming {out}: {n_done} of {len(plan)} runs finished; the rest resume from "
            "their last checkpoint",
            file=sys.stderr,
        )
    if args.get("plan", "false").lower() == "true":
        return 0
    t0 = time.time()
    launcher = args.get("launcher", prev.get("launcher", "local_parallel"))
    record = {
        "sweep": name,
        "runs": len(plan),
        "launcher": launcher,
        "overrides": extra,
        "exit_code": None,
        "started": prev.get("started", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0))),
        "invocations": int(prev.get("invocations", 1 if prev else 0)) + 1,
        "wall_minutes": float(prev.get("wall_minutes", 0.0)),
    }
    _write_record(out, record)  # written first, so a killed sweep can be resumed with its overrides
    jobs = int(next((o.split("=", 1)[1] for o in extra if _key(o) == "hydra.launcher.n_jobs"), 2))
    if launcher == "local_parallel":
        prepare(name, extra, jobs=jobs)
    cmd = [
        sys.executable,
        "-m",
        "recipes.run",
        "-m",
        f"sweep={name}",
        f"hydra/launcher={launcher}",
        f"hydra.sweep.dir={out}",
        *extra,
    ]
    print("[sweep] " + " ".join(cmd), file=sys.stderr)
    code = subprocess.call(cmd)
    record["exit_code"] = code
    record["wall_minutes"] = round(record["wall_minutes"] + (time.time() - t0) / 60, 2)
    _write_record(out, record)
    if code:
        print(
            f"error: the sweep exited with {code}; finished arms are in {out} "
            f"(continue with: python -m recipes.sweep sweep={name} resume={out})",
            file=sys.stderr,
        )
        return code
    report = [sys.executable, "-m", "analysis.report", f"sweep={out}"]
    print("[sweep] " + " ".join(report), file=sys.stderr)
    return subprocess.call(report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
