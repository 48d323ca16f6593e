"""CLI: ``python -m recipes.pipeline pipeline=<name> [engine=auto|local|verl] [dry_run=true] [seed=0]
[scale=<profile>] [dir=<pipeline dir>] [<key>=<value> ...]``; also ``python -m recipes.pipeline mix ...``.

Both are Hydra apps (``conf/command/pipeline.yaml``, ``conf/command/mix.yaml``; ``--help``). Keys
other than the command's own override the pipeline file (``vars.rl_steps=20``,
``stages.1.overrides=[...]``). The pipeline directory defaults to
``runs/pipeline-<name>/<scale>-seed<seed>``; running the same command again resumes there. A
finished local run of the file as written is recorded in ``results/pipeline-<name>/`` (stage
timings and every eval stage's ``eval.json``; ``results=`` to change or turn off).
Exit codes: 0 done, 1 a stage failed (``pipeline.json`` names it), 2 bad arguments or config.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from core import results
from core.cli import hydra_main, route_argv
from recipes.launch_verl import cuda_gpus
from recipes.pipeline import PipelineError, load, run_pipeline
from recipes.pipeline.spec import available
from recipes.pipeline.stage_data import mix
from recipes.run import resolve_engine


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def _report(man: dict, pdir: Path, dry: bool) -> None:
    _log(
        f"[pipeline] {man['pipeline']}: {len(man['order'])} stages {'prepared' if dry else 'done'} in {pdir} "
        f"(manifest {pdir / 'pipeline.json'}; all stages {man['seconds_all_stages']:.0f}s wall, "
        f"{man['cpu_seconds_all_stages']:.0f}s CPU; this invocation "
        f"{man['seconds_this_invocation']:.0f}s)"
    )
    if man.get("launch"):
        _log(f"[pipeline] launch commands: {man['launch']}")
    for name in man["order"]:
        rep = (man["stages"][name].get("outputs") or {}).get("report")
        if rep and not dry:
            _log(f"[pipeline] report: {rep}")


def command(args: DictConfig) -> int:
    """Run (or prepare) the pipeline; print where its manifest and report are; the exit code."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if OmegaConf.is_missing(args, "pipeline"):
        _log(f"error: pipeline=<name> is required; available: {', '.join(available())}")
        return 2
    try:
        engine = resolve_engine(str(args.engine))
        cfg = load(str(args.pipeline), [str(o) for o in args.overrides])
        dry, seed = bool(args.dry_run), int(args.seed)
        scale = args.scale or ("laptop" if engine == "local" else None)
        if scale:
            OmegaConf.update(cfg, "scale", scale, force_add=True)
        pdir = Path(
            str(args.dir or Path("runs") / f"pipeline-{cfg.name}" / f"{scale or 'published'}-seed{seed}")
        )
        if engine == "verl" and not dry and cuda_gpus() == 0:
            _log(
                "error: engine=verl runs need CUDA GPUs and none is visible; use dry_run=true to write every "
                "stage's config and launch command, or engine=local to run the pipeline on the CPU"
            )
            return 2
        man = run_pipeline(cfg, pdir, engine, dry_run=dry, seed=seed)
    except (PipelineError, ValueError) as e:
        _log(f"error: {e}")
        return 2
    except RuntimeError as e:
        _log(f"error: {e}")
        return 1
    _report(man, pdir, dry)
    experiment = _results_experiment(cfg.name, args)
    if experiment and not dry and engine == "local":
        _log(f"[pipeline] recorded {record(man, pdir, experiment)}")
    return 0


def _results_experiment(name: str, args: DictConfig) -> str | None:
    """``pipeline-<name>`` for the file as written (``results=auto``, no overrides, seed 0, the default
    directory), an explicit name, or None."""
    if not args.results:
        return None
    if args.results != "auto":
        return str(args.results)
    as_written = not args.overrides and int(args.seed) == 0 and not args.dir and not args.scale
    return f"pipeline-{name}" if as_written else None


def record(man: dict, pdir: Path, experiment: str) -> Path:
    """``results/<experiment>/``: the stages and their timings, and every eval stage's ``eval.json``."""
    stages = {
        n: {k: man["stages"][n].get(k) for k in ("kind", "status", "seconds", "cpu_seconds")}
        for n in man["order"]
    }
    design = {"pipeline": man["pipeline"], "order": man["order"], "stages": stages, "dir": str(pdir)}
    out = results.write_experiment(experiment, design=design)
    for n in man["order"]:
        report = (man["stages"][n].get("outputs") or {}).get("report")
        ev = Path(str(report)).with_name("eval.json") if report else None
        if ev is not None and ev.is_file():
            results.write_table(experiment, f"eval-{n}", json.loads(ev.read_text()))
    return out.parent


def mix_command(args: DictConfig) -> int:
    """Write the mix; print what it wrote."""
    info = mix(str(args.reasoning), str(args.general), float(args.ratio), str(args.out), int(args.seed))
    _log(f"[mix] {info}")
    return 0


main = hydra_main("command", "pipeline", command)
mix_main = hydra_main("command", "mix", mix_command)


if __name__ == "__main__":
    if sys.argv[1:2] == ["mix"]:
        del sys.argv[1]
        mix_main()
    else:
        route_argv("command", "pipeline")  # keys that are not the command's own override the pipeline file
        main()
