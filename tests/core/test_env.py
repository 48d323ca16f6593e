"""The shared process environment (:mod:`core.env`): caches default to the run cache unless the user
set them, and veRL's CPU warnings become one line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import env

REPO = Path(__file__).resolve().parents[2]


def test_cache_variables_default_to_the_run_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    monkeypatch.setenv("MPLCONFIGDIR", "/mine")
    for key in ("HF_DATASETS_CACHE", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR"):
        monkeypatch.delenv(key, raising=False)
    done = env.set_cache_env()
    assert os.environ["MPLCONFIGDIR"] == "/mine" and "MPLCONFIGDIR" not in done  # the user's own is kept
    assert os.environ["HF_DATASETS_CACHE"] == str(tmp_path / "hf" / "datasets")
    assert all(Path(os.environ[k]).is_relative_to(tmp_path) for k in done)
    assert env.in_cache(tmp_path / "data" / "x.parquet") and not env.in_cache(tmp_path.parent / "x.parquet")


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None, reason="a GPU machine: veRL finds its accelerator"
)
def test_verl_cpu_warnings_become_one_line() -> None:
    code = "import core, verl.workers.engine\nfrom verl.plugin.platform import get_platform\nget_platform()\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "No supported accelerator" not in err and "registered but not available" not in err
    assert "engine is not available" not in err
    assert err.count(env.CPU_LINE) == 1, err
