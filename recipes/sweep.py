"""Run one ablation sweep (``conf/sweep/<name>.yaml``) as a Hydra multirun, then its report.

``python -m recipes.sweep sweep=<name> [recipe=...] [scale=...] [cluster=slurm] [plan=true] [k=v ...]``
(a Hydra app: ``conf/command/sweep.yaml``, ``--help``)

A swept key on the command line replaces the file's list, e.g. ``rlvr.seed=0,1`` runs two seeds.
``resume=multirun/<name>-<time>`` continues a killed sweep in its directory with its recorded
overrides: finished runs are reported as they are, the others resume from their last checkpoint.

Does: read the sweep's axis and seeds from ``hydra.sweeper.params``, list the arms, build the
seeds' cold starts first, in parallel (laptop scale; ``rlvr.sweep.cold_start: default``, below), launch ``python -m recipes.run -m sweep=<name> ...``
with a launcher (local: joblib, two processes on a 2-core machine; ``cluster=slurm``: each arm
submits its run as one Slurm job, ``recipes.cluster.slurm``) into
``multirun/<name>-<time>/``, record the wall time in ``sweep.json`` there, record the finished runs
in ``results/sweep-<name>/`` (``analysis.ablations.record_sweep``), regenerate the docs' sweep blocks
from ``results/`` (``refresh_docs``: docs/ablations.md and README's overview, through ``python -m docgen``), and
finish with ``python -m analysis.report sweep=<dir>``. Before it prints the plan, every arm is composed
and validated as ``recipes.run`` will (``check_arms``): an arm that would be refused stops the sweep
before anything is created. ``plan=true`` prints the arms only (with ``cluster=slurm``, and each arm's job
script). A failed multirun says which job
failed and why, and offers ``resume=`` only when some run finished (``failure``).

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

import contextlib
import io
import itertools
import json
import multiprocessing as mp
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from analysis.ablations import experiment_name, record_sweep
from core.cli import hydra_main, route_argv
from core.compose import context as compose_context
from core.results import REPO
from core.sweeps import load as sweep_spec
from recipes.compose import check_choice, compose, laptop_scale


def sweep_params(name: str, extra: list[str] = ()) -> dict[str, list[str]]:
    """``{override key: [values]}`` of a sweep, e.g. ``{"kl": ["none", "k3_0.01"], "rlvr.seed": [...]}``."""
    check_choice([f"sweep={name}"], "sweep")
    # the lists live in the sweep file; only hydra.sweeper.* overrides can change them (hydra.launcher.*
    # is the multirun's, composed with its launcher there)
    own = [o for o in extra if _key(o).startswith("hydra.sweeper.") and "," not in o.split("=", 1)[-1]]
    cfg = compose([f"sweep={name}", *own], hydra=True)
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
    import torch  # the engine's stack loads in the workers that build cold starts, not for plan=true
    from verl.trainer.ppo.reward import get_custom_reward_fn  # same: veRL takes seconds to import

    from recipes.local.coldstart import ensure_model  # same: imports torch and veRL
    from recipes.local.data import ensure_task_files  # same: imports the task generators

    torch.set_num_threads(1)
    cfg = compose([f"sweep={name}", *with_scale, f"rlvr.seed={seed}"])
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
    dflt = compose(["recipe=dapo", *keep, f"rlvr.seed={seed}"])
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
        import torch  # only to see whether this is a GPU machine; plan=true never gets here

        if torch.cuda.is_available():  # recipes.run keeps the published scale on a GPU machine
            return []
    params = sweep_params(name, extra)
    fixed = [o for o in extra if _key(o) not in params]
    if any(_key(o) == "scale" for o in fixed):
        with_scale = fixed
    else:  # the scale recipes.run applies on the local engine: the recipe's own laptop scale
        pick = [o for o in fixed if _key(o) == "recipe"]  # others may need the scale's keys to exist
        laptop = laptop_scale(compose([f"sweep={name}", *pick]))
        with_scale = [*fixed, f"scale={laptop}"]
    base = compose([f"sweep={name}", *with_scale])
    if base.rlvr.scale != "laptop" or str(base.engine.name) == "verl":
        return []
    default_start = sweep_spec(name).cold_start == "default"
    seeds = params["rlvr.seed"]
    args = [(name, with_scale, seed, default_start) for seed in seeds]
    if jobs <= 1 or len(seeds) == 1:
        done = [_prepare_seed(*a) for a in args]
    else:
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


def _plan(name: str, args: DictConfig, extra: list[str]) -> tuple[Path, list[str], dict, list[list[str]]]:
    """(sweep directory, overrides, previous record, arms); ``ValueError`` for a bad sweep or resume,
    or for an arm that would be refused (:func:`check_arms`)."""
    prev: dict = {}
    if args.resume:
        out, extra, prev = _resume_dir(name, str(args.resume), extra)
    else:
        out = Path("multirun") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    plan = arms(name, extra)
    check_arms(name, extra, plan)
    return out, extra, prev, plan


def arm_overrides(name: str, extra: list[str], arm: list[str]) -> list[str]:
    """The overrides ``recipes.run`` receives for one arm of the multirun (``hydra.*`` are Hydra's)."""
    swept = {_key(o) for o in arm}
    fixed = [o for o in extra if _key(o) not in swept and not _key(o).startswith(("hydra.", "hydra/"))]
    return [f"sweep={name}", *fixed, *arm]


def check_arms(name: str, extra: list[str], plan: list[list[str]]) -> None:
    """Compose and validate every arm exactly as ``recipes.run`` will (engine, scale profile,
    :func:`recipes.run.check`) before anything is created; the first refused arm raises a
    one-line ``ValueError`` naming the arm, the problem and the fix.

    An arm that differs from an arm already checked only in an integer ``rlvr.seed`` is not composed
    again: the seed reaches the config only as an integer that no rule reads, so it validates alike
    (a 3-axis-value x 8-seed sweep composes 3 arms, not 24). A seed that is no integer is checked."""
    from recipes.run import check, prepare_config  # the run's validation stack (veRL): not for --help

    checked: set[tuple[str, ...]] = set()
    with compose_context():  # one Hydra context for every composition (~0.3 s each)
        for arm in plan:
            unseeded = tuple(o for o in arm if _key(o) != "rlvr.seed")
            seeds = [o.split("=", 1)[1] for o in arm if _key(o) == "rlvr.seed"]
            if unseeded in checked and all(re.fullmatch(r"-?\d+", s.strip()) for s in seeds):
                continue
            checked.add(unseeded)
            overrides = arm_overrides(name, extra, arm)
            try:
                with contextlib.redirect_stderr(io.StringIO()):  # the run's "[scale] ..." notes, per arm
                    cfg, engine, _, used = prepare_config(overrides, changes=False)
                    check(cfg, engine, used, overrides)
            except ValueError as e:
                first, *more = str(e).splitlines()
                also = f" (+{len(more)} more lines: run it alone to see them)" if more else ""
                raise ValueError(
                    f"arm {' '.join(arm)} would be refused: {first.removeprefix('invalid config: ')}{also}; "
                    "nothing was started or created"
                ) from None


def job_scripts(name: str, extra: list[str], plan: list[list[str]], out: Path) -> list[tuple[list[str], str]]:
    """With ``cluster=slurm`` among the overrides: each arm's Slurm job script as its run will write it
    (``recipes.cluster.slurm.job_script``, run directory ``<out>/<arm number>``); otherwise none."""
    if not any(_key(o) == "cluster" and o.split("=", 1)[1] != "none" for o in extra):
        return []
    from recipes.cluster import slurm  # the job script: cluster sweeps only
    from recipes.run import force_local, prepare_config  # the run's composition (veRL): not for --help

    scripts = []
    #: arm without its seed -> (its job, the overrides prepare_config added to the arm's)
    composed: dict[tuple[str, ...], tuple[slurm.Job, list[str]]] = {}
    with compose_context():
        for i, arm in enumerate(plan):
            overrides = arm_overrides(name, extra, arm)
            unseeded = tuple(o for o in arm if _key(o) != "rlvr.seed")
            seeds = [o.split("=", 1)[1] for o in arm if _key(o) == "rlvr.seed"]
            if unseeded not in composed or not all(re.fullmatch(r"-?\d+", s.strip()) for s in seeds):
                # as in check_arms: an integer seed reaches the config as a number that neither the job
                # (cluster.*, the recipe) nor the scale picked reads, so arms differing only in it
                # share both; the seed itself reaches the script through the arm's overrides
                with contextlib.redirect_stderr(io.StringIO()):
                    cfg, _, _, used = prepare_config(overrides, changes=False)
                added = used[len(force_local(overrides)) :]
                assert used == [*force_local(overrides), *added], used  # prepare_config only appends
                composed[unseeded] = (slurm.job(cfg), added)
            j, added = composed[unseeded]
            used = [*force_local(overrides), *added]
            run_dir = (out / str(i)).resolve()
            scripts.append((arm, slurm.job_script(j, run_dir, slurm.head_command(used, run_dir), Path.cwd())))
    return scripts


def command(args: DictConfig) -> int:
    """Plan, prepare and launch the sweep, then its report; the exit code."""
    name, extra = str(args.sweep), [str(o) for o in args.overrides]
    try:
        out, extra, prev, plan = _plan(name, args, extra)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"[sweep] {name}: {len(plan)} runs", file=sys.stderr)
    for a in plan:
        print("    " + " ".join(a), file=sys.stderr)
    if args.resume:
        n_done = sum(1 for _ in out.glob("*/summary.json"))
        print(
            f"[sweep] resuming {out}: {n_done} of {len(plan)} runs finished; the rest resume from "
            "their last checkpoint",
            file=sys.stderr,
        )
    if args.plan:
        for arm, script in job_scripts(name, extra, plan, out):
            print(f"[sweep] job script of arm {' '.join(arm)}:", file=sys.stderr)
            sys.stdout.write(script)
        return 0
    return _launch(name, out, extra, prev, len(plan), args.launcher, args.results)


def _launch(
    name: str, out: Path, extra: list[str], prev: dict, runs: int, launcher: str | None, results: str | None
) -> int:
    """Cold starts, the Hydra multirun, ``sweep.json``, the results record, then ``analysis.report``."""
    t0 = time.time()
    launcher = str(launcher or prev.get("launcher", "local_parallel"))
    record = {
        "sweep": name,
        "runs": runs,
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
        print(f"error: {failure(name, out, runs, code)}", file=sys.stderr)
        return code
    experiment = results_experiment(name, extra, results)
    if experiment:
        print(f"[sweep] recorded {record_sweep(out, name, experiment)}", file=sys.stderr)
        for item in refresh_docs():
            print(f"[sweep] updated {item}", file=sys.stderr)
    else:
        print(
            f"[sweep] not recorded in results/ (overrides {extra} change the sweep's design; to record "
            "anyway: results=<experiment name>)",
            file=sys.stderr,
        )
    report = [sys.executable, "-m", "analysis.report", f"sweep={out}"]
    print("[sweep] " + " ".join(report), file=sys.stderr)
    return subprocess.call(report)


def failure(name: str, out: Path, runs: int, code: int) -> str:
    """What a failed multirun left: which job failed and why (its ``error.txt``, written by
    ``recipes.run``, else its log above), how many runs finished, and the way on: ``resume=`` when
    some finished (it re-runs only the others), a fresh start after the fix when none did."""
    jobs = sorted((d for d in out.iterdir() if d.is_dir() and d.name.isdigit()), key=lambda d: int(d.name))
    done = [d for d in jobs if (d / "summary.json").is_file()]
    failed = [d for d in jobs if not (d / "summary.json").is_file()]
    what = f"the sweep stopped (exit {code})"
    if failed:
        d = failed[0]
        lines = (d / "error.txt").read_text().splitlines() if (d / "error.txt").is_file() else []
        why = lines[0] if lines else "see its log above"
        label = next((x.removeprefix("arm: ") for x in lines[1:] if x.startswith("arm: ")), "")
        what += f": job {d.name}{f' ({label})' if label else ''} failed: {why}"
    if done:
        return (
            f"{what}. {len(done)} of {runs} runs finished, in {out}; after the fix, run the others with: "
            f"python -m recipes.sweep sweep={name} resume={out}"
        )
    return f"{what}. No run finished ({out} holds only the sweep's record); fix the error and start the sweep again"


#: The docs blocks that render the sweeps: docs/ablations.md's ``ablation-<sweep>`` and README's overview.
SWEEP_BLOCKS = ("ablations-overview", "ablation-*")


def refresh_docs(root: Path = REPO) -> list[str]:
    """Regenerate the blocks that render the sweeps from ``results/`` (every ``ablation-<sweep>``
    block of docs/ablations.md and README's ``ablations-overview``) by running ``python -m docgen``
    on them (the docs generator sits above every package); returns what changed."""
    cmd = [sys.executable, "-m", "docgen", f"root={root}", f"sections=[{','.join(SWEEP_BLOCKS)}]"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {done.returncode}):\n{done.stderr}")
    return [
        line.removeprefix("updated: ") for line in done.stdout.splitlines() if line.startswith("updated: ")
    ]


def results_experiment(name: str, extra: list[str], setting: str | None) -> str | None:
    """Where a finished sweep is recorded: ``sweep-<name>`` for the file as written (``auto`` and no
    overrides other than the launcher's), an explicit name, or None (not recorded).

    >>> results_experiment("kl_coef", [], "auto"), results_experiment("kl_coef", ["rlvr.seed=0,1"], "auto")
    ('sweep-kl_coef', None)
    """
    if setting is None or setting == "":
        return None
    if setting != "auto":
        return str(setting)
    design_changes = [o for o in extra if not _key(o).startswith("hydra.launcher.")]
    return None if design_changes else experiment_name(name)


main = hydra_main("command", "sweep", command)


if __name__ == "__main__":
    route_argv("command", "sweep")  # keys that are not the command's own are overrides of every run
    main()
