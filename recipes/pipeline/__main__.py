"""CLI: ``python -m recipes.pipeline pipeline=<name> [engine=auto|local|verl] [dry_run=true] [seed=0]
[scale=<profile>] [dir=<pipeline dir>] [<key>=<value> ...]``; also ``python -m recipes.pipeline mix ...``.

Both are Hydra apps (``conf/command/pipeline.yaml``, ``conf/command/mix.yaml``; ``--help``). Keys
other than the command's own override the pipeline file (``vars.rl_steps=20``,
``stages.1.overrides=[...]``). The pipeline directory defaults to
``runs/pipeline-<name>/<scale>-seed<seed>``; running the same command again resumes there.
Exit codes: 0 done, 1 a stage failed (``pipeline.json`` names it), 2 bad arguments or config.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

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
    return 0


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
