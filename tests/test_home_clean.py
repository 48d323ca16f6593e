"""Nothing is written where nobody asked: documented commands, run with ``HOME`` an empty folder and
``RLVR_CACHE`` another, leave ``HOME`` empty and ``git status`` of the repository unchanged.

The commands are the README's, kept short (fewer rows, samples and steps): ``make filter`` on a
task name, a local run with W&B logging (offline), ``make report RUNS=...``. (``make data`` is one
of the commands ``tests/test_documented_commands.py`` runs under the same conditions: an empty
``HOME`` and ``RLVR_CACHE``, these variables unset, ``git status`` compared.)
They run through ``make -o setup`` (``make setup`` itself installs packages: pip's own caches are
not this project's). Library caches (Hugging Face datasets, W&B, matplotlib, Triton, torch) must
land in ``RLVR_CACHE`` (:mod:`core.env`), W&B run files in the run directory, the report under the
ignored ``reports/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Variables that would move a cache away from HOME: unset, so the defaults are what is tested.
_CLEARED = (
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "MPLCONFIGDIR",
)
RUN = [
    "recipe=grpo",
    "scale=laptop",
    "logger=wandb",
    "trainer.total_training_steps=1",
    "local.task.train_n=64",
    "local.task.val_n=16",
    "local.sft.max_steps=4",
    "local.sft.eval_every=4",
    "local.sft.eval_n=4",
    "local.sft.min_pass=0.0",
    "local.eval_samples=8",
    "local.progress=false",
    "data.max_response_length=24",
]


def _status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


def _make(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ["make", "-s", "-o", "setup", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, (
        f"make {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout + done.stderr


def test_documented_commands_leave_home_and_the_repository_clean(tmp_path: Path) -> None:
    if shutil.which("make") is None or not (REPO / ".git").exists():
        pytest.skip("needs make and a git checkout")
    from core.model import ModelSpec, build_checkpoint

    home, cache, work = tmp_path / "home", tmp_path / "cache", tmp_path / "work"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED and not k.startswith("WANDB_")}
    env.update(HOME=str(home), RLVR_CACHE=str(cache), WANDB_MODE="offline", HF_HUB_OFFLINE="1")
    model = build_checkpoint(work / "model", ModelSpec(32, 1, 2, 1, 64, 256), tokenizer="byte", seed=0)
    before = _status()

    out = _make(
        env,
        "filter",
        "DATA=chain_sum",
        f"MODEL={model}",
        "N=2",
        "BAND=0.2,0.8",
        "ARGS=rows=16 progress=false",
    )
    assert f"{cache}/data/filter/" in out  # the task's prompts were generated into the run cache
    run_dir = work / "run"
    _make(env, "run", "RECIPE=grpo", f"RUN_DIR={run_dir}", f"ARGS={' '.join(RUN[1:])}")
    assert list((run_dir / "wandb").glob("offline-run-*")), "W&B run files belong in the run directory"
    out = _make(env, "report", f"RUNS={run_dir}")
    html = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("wrote html: "))
    folder = (REPO / html).parent  # relative to the repository, where make runs
    try:
        assert folder.parent == REPO / "reports", f"the report went to {folder}, not under reports/"
        assert sorted(home.rglob("*")) == [], "written into HOME"
        after = _status()
        assert after == before, (
            f"git status changed: {sorted(set(after.splitlines()) ^ set(before.splitlines()))}"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
