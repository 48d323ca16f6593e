"""Token-budget estimates from composed recipes; the seed document's worked example."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from analysis import estimate
from core.cli import call, load


def settings(**kw: object) -> OmegaConf:
    c = load("analysis", "estimate")
    for k, v in kw.items():
        c[k] = v
    return c


@pytest.fixture(scope="module")
def grpo() -> tuple:
    return estimate.compose_recipe("grpo", ["actor_rollout_ref.rollout.n=8"])


def test_seed_example(grpo: tuple) -> None:
    cfg, choices = grpo
    e = estimate.estimate(settings(recipe="grpo", prompts=2000, response_tokens=600), cfg, choices)
    assert e["generated_tokens_per_epoch"] == 9_600_000  # 2,000 x 8 x 600
    assert e["sft_tokens_per_epoch"] == 400_000  # 2,000 x 200
    assert e["rl_to_sft_ratio"] == 24
    assert e["gpu_hours_per_epoch"] == pytest.approx(9.6e6 / 2000 / 3600)
    text = estimate.format_estimate(e)
    assert "9.60M generated tokens vs 0.40M SFT tokens (24× SFT)" in text


def test_dapo_reads_recipe_values() -> None:
    cfg, choices = estimate.compose_recipe("dapo")
    e = estimate.estimate(settings(recipe="dapo", gen_batches=2.0), cfg, choices)
    assert (e["prompts_per_step"], e["answers_per_prompt"], e["response_tokens"]) == (512, 16, 20480)
    assert e["generated_tokens_per_step"] == 512 * 16 * 20480 * 2
    assert choices["dataset"] == "dapo_math_17k" and e["filter_enabled"]


def test_cli_passes_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        call(
            estimate.command,
            "analysis",
            "estimate",
            ["recipe=dapo", "scale=laptop", "response_tokens=40"],
            route=True,
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "16 prompts × 8 answers × 40 tokens" in out and "scale=laptop" in out
    assert "dynamic sampling is on" in out
    with pytest.raises(ValueError, match="unknown recipe 'nope'|nope"):
        call(estimate.command, "analysis", "estimate", ["recipe=nope"], route=True)
