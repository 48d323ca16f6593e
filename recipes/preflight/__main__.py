"""CLI: ``python -m recipes.preflight recipe=<name> [engine=auto|local|verl] [gpu_memory_gb=80] [k=v ...]``.

A Hydra app over ``conf/command/preflight.yaml`` (``--help`` lists every key). The recipe is
composed as ``recipes.run`` composes it (``engine=local``, and ``engine=verl`` on a machine without a
GPU, pick the recipe's laptop scale unless a scale is given; keys that are not pre-flight's own are
the recipe's). ``target`` (:mod:`recipes.preflight.target`) decides which run is judged, and says
so: the CPU run veRL's trainer makes here (``make run``'s CPU changes applied, its generated data
files written as the run would write them) or the run on GPU nodes, planned from a machine without
one (the config unchanged). The config is validated by the one validation layer.
Then :func:`recipes.preflight.preflight` runs the checks, prints the findings and writes
``preflight.json`` into the run directory. Exit codes: 0 pass, 1 pass with warnings, 2 fail.
``checks=[..., verl_engine]`` (opt-in) then rehearses one update of the run's own checkpoint on
veRL's engine, on CPU (:mod:`recipes.preflight.verl_engine`); ``checks=[..., verl_trainer]`` (opt-in)
runs one step of the config's shape through veRL's whole trainer, on CPU
(:mod:`recipes.preflight.verl_trainer`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from omegaconf import DictConfig

from core.cli import hydra_main, require, route_argv
from recipes.preflight import CHECKS, preflight
from recipes.preflight.context import Context, sel
from recipes.preflight.report import Report
from recipes.preflight.target import describe, judged, known
from recipes.run import default_run_dir, here_on_cpu, prepare_config
from recipes.validate import ConfigError, validate


def decide(cfg: DictConfig, engine: str, asked: str = "auto") -> tuple[str, str]:
    """(``local``, ``cpu`` or ``gpu``, why) for a composed config (:mod:`recipes.preflight.target`); a
    ``ValueError`` naming ``target`` for a value it does not take or a target without ``engine=verl``."""
    known(asked)
    if engine != "verl":
        if asked != "auto":
            raise ValueError(f"[target] target={asked} judges a run of veRL's trainer; fix: engine=verl")
        return "local", f"engine={engine}: the local engine's run on this CPU"
    if asked != "auto":
        return asked, f"target={asked}"
    if not here_on_cpu(cfg, engine):
        return "gpu", "a dry run writes the launch for a GPU machine" if cfg.dry_run else "CUDA GPUs here"
    if int(sel(cfg, "trainer.n_gpus_per_node") or 0) == 0:
        return (
            "cpu",
            "no GPU here and the profile asks for none (trainer.n_gpus_per_node=0): make run ENGINE=verl runs it here",
        )
    return "gpu", "no GPU here and the profile asks for GPUs: planned from this machine for the GPU nodes"


def _verl_engine(ctx: Context) -> dict[str, float]:
    """``checks=[..., verl_engine]`` (opt-in): the rehearsal on veRL's own engine, on CPU, with the run's
    checkpoint (:mod:`recipes.preflight.verl_check`)."""
    from recipes.preflight.verl_check import check_verl_engine  # torch + veRL (~10 s): only when asked for

    return check_verl_engine(ctx)


def _verl_trainer(ctx: Context) -> dict[str, float]:
    """``checks=[..., verl_trainer]`` (opt-in): one step of the config's shape through veRL's own
    ``main_ppo`` on CPU (:mod:`recipes.preflight.verl_trainer`)."""
    from recipes.preflight.verl_trainer import check_verl_trainer  # Ray, veRL's trainer: only when asked for

    return check_verl_trainer(ctx)


CHECKS.add("verl_engine", _verl_engine)
CHECKS.add("verl_trainer", _verl_trainer)
#: The opt-in rehearsals, run after the other checks in this order (each trains a model).
REHEARSALS = {"verl_engine": _verl_engine, "verl_trainer": _verl_trainer}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def command(args: DictConfig) -> int:
    """Compose, validate, check; print the findings and return the exit code."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    require(args, "recipe", command="recipes.preflight")
    try:
        cfg, engine, _, overrides = prepare_config(
            [f"recipe={args.recipe}", f"engine={args.engine}", *args.overrides],
            changes=False,
            pick_laptop=known(str(args.target))
            != "gpu",  # target=gpu: the published config, unless a scale is given
        )
        target, why = decide(cfg, engine, str(args.target))
    except ValueError as e:
        _log(f"error: {e}")
        return 2
    run_dir = Path(str(args.run_dir or cfg.run_dir or default_run_dir(cfg, overrides, engine)))
    _log(
        f"[preflight] {cfg.rlvr.recipe}  [engine] {engine}  [scale] {cfg.rlvr.scale or 'published'}  [report] {run_dir}/preflight.json"
    )
    if target == "cpu":  # the config veRL's trainer runs here: make run's CPU changes applied
        from recipes.launch_cpu import apply  # the CPU run only

        why += f"; {len(apply(cfg))} keys changed as make run changes them"
    _log(f"[preflight] judging {describe(cfg, engine)}: {why}")
    if target == "gpu" and engine == "verl":
        _log(
            "[preflight] validation, lengths and the memory plan judge this config as the GPU run gets it; only "
            "the opt-in rehearsals (checks=[...,verl_engine,verl_trainer]) run a CPU copy. target=cpu judges "
            "the CPU run make run would make here instead."
        )
    try:
        validate(cfg, engine)
    except (ConfigError, ValueError) as e:
        rep = Report(recipe=str(cfg.rlvr.recipe), engine=engine)
        rep.judged["config"] = describe(cfg, engine)
        for line in getattr(e, "errors", [str(e)]):
            rep.add(
                "config", "fail", line.split("]")[0].lstrip("[") if line.startswith("[") else "config", line
            )
        rep.write(run_dir / "preflight.json")
        print(rep.format())
        return rep.exit_code
    if target in ("local", "cpu") and cfg.local.get("task") is not None:
        from recipes.local.data import ensure_task_files  # the task generators load only for laptop runs

        ensure_task_files(cfg)
    report = preflight(cfg, engine, args, run_dir)
    for name, rehearsal in REHEARSALS.items():  # opt-in, after the other checks (each trains a model)
        if name in args.checks:
            report.judged[name] = judged(name, cfg, engine)
            with report.timed(name) as rec:
                rec.update(rehearsal(Context(cfg=cfg, engine=engine, settings=args, report=report)))
            report.write(run_dir / "preflight.json")
    print(report.format())
    _log(f"[preflight] report: {run_dir / 'preflight.json'}")
    return report.exit_code


main = hydra_main("command", "preflight", command)


if __name__ == "__main__":
    route_argv("command", "preflight")  # keys that are not pre-flight's own are the recipe's overrides
    main()
