"""The run manifest ``run.json``: what a run was, so it can be compared and reproduced.

Records recipe, engine, scale, seed, the resolved config path, the Hydra overrides, the git
commit (and whether the tree was dirty), package versions and sha256 hashes of the data files
that exist. Does not record metrics (``metrics.jsonl``) or checkpoints.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import versions
from core.data import sha256_file
from core.results import git_state


def data_hashes(cfg: DictConfig) -> dict[str, str | None]:
    """sha256 of each train/val file (None when the file does not exist yet)."""
    out: dict[str, str | None] = {}
    for key in ("train_files", "val_files"):
        files = cfg.data.get(key)
        for f in [files] if isinstance(files, str) else list(files or []):
            p = Path(str(f)).expanduser()
            out[str(f)] = sha256_file(p) if p.is_file() else None
    return out


def write_manifest(
    run_dir: Path,
    cfg: DictConfig,
    *,
    engine: str,
    overrides: list[str],
    scale_changes: list[tuple[str, Any, Any]],
    launch: list[str] | None = None,
) -> dict[str, Any]:
    """Write ``run_dir/run.json`` and return its content."""
    commit, dirty = git_state()
    manifest = {
        "recipe": cfg.rlvr.recipe,
        "engine": engine,
        "scale": cfg.rlvr.scale,
        "seed": cfg.rlvr.seed,
        "config_path": str(run_dir / "config.yaml"),
        "overrides": overrides,
        "scale_changes": [{"key": k, "published": a, "used": b} for k, a, b in scale_changes],
        "git_commit": commit,
        "git_dirty": dirty,
        "versions": versions(),
        "data_hashes": data_hashes(cfg),
        "launch": launch,
        "argv": sys.argv,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return manifest
