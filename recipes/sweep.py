"""Run one ablation sweep (``conf/sweep/<name>.yaml``) as a Hydra multirun, then its report.

``python -m recipes.sweep sweep=<name> [recipe=...] [scale=...] [launcher=local_parallel|slurm_gpu] [plan=true] [k=v ...]``

Does: read the sweep's axis and seeds from ``hydra.sweeper.params``, list the arms, launch
``python -m recipes.run -m sweep=<name> ...`` with a launcher (local: joblib, two processes on a
2-core machine; clusters: ``launcher=slurm_gpu`` through submitit) into ``multirun/<name>-<time>/``,
and finish with ``python -m analysis.report sweep=<dir>``. ``plan=true`` prints the arms only.
Does not: decide what a sweep contains (the YAML does) or compute statistics (``analysis``).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from recipes.compose import CONF_DIR, check_choice, options


def _compose_with_hydra(overrides: list[str]):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return compose("config", overrides=overrides, return_hydra_config=True)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        return compose("config", overrides=overrides, return_hydra_config=True)


def sweep_params(name: str, extra: list[str] = ()) -> dict[str, list[str]]:
    """``{override key: [values]}`` of a sweep, e.g. ``{"kl": ["none", "k3_0.01"], "rlvr.seed": [...]}``."""
    check_choice([f"sweep={name}"], "sweep")
    cfg = _compose_with_hydra([f"sweep={name}", *extra])
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    return {k: [v.strip() for v in str(vals).split(",")] for k, vals in params.items()}


def arms(name: str, extra: list[str] = ()) -> list[list[str]]:
    """Every arm of the sweep as a list of overrides (cartesian product of the params)."""
    params = sweep_params(name, extra)
    keys = list(params)
    return [[f"{k}={v}" for k, v in zip(keys, combo, strict=True)] for combo in itertools.product(*params.values())]


def main(argv: list[str]) -> int:
    args = dict(a.split("=", 1) for a in argv if "=" in a and a.split("=", 1)[0] in ("sweep", "launcher", "plan"))
    extra = [a for a in argv if a.split("=", 1)[0] not in ("sweep", "launcher", "plan")]
    name = args.get("sweep")
    if not name or name in ("-h", "--help"):
        print(__doc__ + f"\nsweeps: {', '.join(options('sweep'))}", file=sys.stderr)
        return 2
    try:
        plan = arms(name, extra)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"[sweep] {name}: {len(plan)} runs", file=sys.stderr)
    for a in plan:
        print("    " + " ".join(a), file=sys.stderr)
    if args.get("plan", "false").lower() == "true":
        return 0
    out = Path("multirun") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    launcher = args.get("launcher", "local_parallel")
    cmd = [sys.executable, "-m", "recipes.run", "-m", f"sweep={name}", f"hydra/launcher={launcher}",
           f"hydra.sweep.dir={out}", *extra]
    print("[sweep] " + " ".join(cmd), file=sys.stderr)
    code = subprocess.call(cmd)
    if code:
        print(f"error: the sweep exited with {code}; finished arms are in {out}", file=sys.stderr)
        return code
    report = [sys.executable, "-m", "analysis.report", f"sweep={out}"]
    print("[sweep] " + " ".join(report), file=sys.stderr)
    return subprocess.call(report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
