"""The learning targets at laptop scale (slow: minutes per run; outside ``make test``).

Each recipe x seed, at the recipe's own laptop profile (the base model for the recipes that start
from one in their papers), must end >= 15 points of held-out accuracy (256 samples, T=1) above its
start; a shuffled-reward control must not improve. Runs use the real cached base model / cold start
of ``${RLVR_CACHE:-~/.cache/rlvr}`` (built on first use). ``experiments/seed_table.py`` runs the same
grid in parallel, prints the table and records it in results/seed_table/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.compose import compose
from experiments.seed_table import laptop_scales
from recipes.local import run_local


def _run(tmp_path: Path, recipe: str, *overrides: str) -> dict:
    scale = laptop_scales([recipe], "recipe")[recipe]
    cfg = compose(
        [f"recipe={recipe}", f"scale={scale}", "local.progress=false", "trainer.logger=[file]", *overrides]
    )
    return run_local(cfg, tmp_path / "run")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("recipe", ["grpo", "dapo", "drgrpo", "cispo", "gspo", "orz_ppo", "r1_zero"])
def test_recipe_learns(recipe: str, seed: int, tmp_path: Path) -> None:
    out = _run(tmp_path, recipe, f"rlvr.seed={seed}")
    assert out["eval_samples"] >= 256
    assert out["end_acc"] >= out["start_acc"] + 0.15, out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_shuffled_rewards_do_not_improve(seed: int, tmp_path: Path) -> None:
    out = _run(tmp_path, "grpo", f"rlvr.seed={seed}", "local.shuffle_rewards=true")
    assert out["end_acc"] < out["start_acc"] + 0.05, out
