"""CLI: ``python -m recipes.pipeline pipeline=<name> [engine=auto|local|verl] [dry_run=true] [seed=0]
[scale=<profile>] [dir=<pipeline dir>] [<key>=<value> ...]``; also ``python -m recipes.pipeline mix ...``.

Keys other than the reserved ones override the pipeline file (``vars.rl_steps=20``,
``stages.1.overrides=[...]``). The pipeline directory defaults to
``runs/pipeline-<name>/<scale>-seed<seed>``; running the same command again resumes there.
Exit codes: 0 done, 1 a stage failed (``pipeline.json`` names it), 2 bad arguments or config.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

RESERVED = ("pipeline", "engine", "dry_run", "seed", "scale", "dir")


def _mix(argv: list[str]) -> int:
    """``mix reasoning=<parquet> general=<parquet> ratio=<float> out=<parquet> [seed=0]``."""
    from recipes.pipeline.stage_data import mix

    kv = dict(a.split("=", 1) for a in argv if "=" in a)
    missing = [k for k in ("reasoning", "general", "ratio", "out") if k not in kv]
    if missing:
        print(f"error: missing {missing}; usage: {_mix.__doc__}", file=sys.stderr)
        return 2
    info = mix(kv["reasoning"], kv["general"], float(kv["ratio"]), kv["out"], int(kv.get("seed", 0)))
    print(f"[mix] {info}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    """Parse ``argv``, run the pipeline, print where its manifest and report are."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if argv and argv[0] == "mix":
        return _mix(argv[1:])
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    from recipes.pipeline import PipelineError, load, run_pipeline
    from recipes.pipeline.spec import available
    from recipes.run import resolve_engine

    kv, rest = {}, []
    for a in argv:
        k, sep, v = a.partition("=")
        if not sep:
            print(f"error: argument {a!r} is not key=value", file=sys.stderr)
            return 2
        (kv.__setitem__(k, v) if k in RESERVED else rest.append(a))
    if "pipeline" not in kv:
        print(f"error: pipeline=<name> is required; available: {', '.join(available())}", file=sys.stderr)
        return 2
    try:
        engine = resolve_engine(kv.get("engine", "auto"))
        cfg = load(kv["pipeline"], rest)
        seed = int(kv.get("seed", 0))
        dry = kv.get("dry_run", "false").lower() in ("1", "true", "yes")
        scale = kv.get("scale") or ("laptop" if engine == "local" else None)
        if scale:
            from omegaconf import OmegaConf

            OmegaConf.update(cfg, "scale", scale, force_add=True)
        pdir = Path(
            kv.get("dir") or Path("runs") / f"pipeline-{cfg.name}" / f"{scale or 'published'}-seed{seed}"
        )
        if engine == "verl" and not dry:
            from recipes.launch_verl import cuda_gpus

            if cuda_gpus() == 0:
                print(
                    "error: engine=verl runs need CUDA GPUs and none is visible; use dry_run=true to write every "
                    "stage's config and launch command, or engine=local to run the pipeline on the CPU",
                    file=sys.stderr,
                )
                return 2
        man = run_pipeline(cfg, pdir, engine, dry_run=dry, seed=seed)
    except (PipelineError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(
        f"[pipeline] {cfg.name}: {len(man['order'])} stages {'prepared' if dry else 'done'} in {pdir} "
        f"(manifest {pdir / 'pipeline.json'}; all stages {man['seconds_all_stages']:.0f}s wall, "
        f"{man['cpu_seconds_all_stages']:.0f}s CPU; this invocation "
        f"{man['seconds_this_invocation']:.0f}s)",
        file=sys.stderr,
    )
    if man.get("launch"):
        print(f"[pipeline] launch commands: {man['launch']}", file=sys.stderr)
    for name in man["order"]:
        rep = (man["stages"][name].get("outputs") or {}).get("report")
        if rep and not dry:
            print(f"[pipeline] report: {rep}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
