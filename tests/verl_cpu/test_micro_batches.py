"""The micro-batches a CPU run of veRL's trainer uses (``local.micro_batch_tokens``, recipes.launch_cpu).

With a budget (``local.micro_batch_tokens`` > 0; the default 0 keeps the config's own, as the
profile measured no faster step with one) the actor's update and the log-prob passes go in padded
micro-batches of up to the budget's tokens, each the largest divisor of a rank's rows within it
(veRL asserts a mini-batch splits evenly); a config's bigger micro-batch is kept, and veRL's
token-budget batching (``use_dynamic_bsz``) is left alone. On the keys a composed recipe has.
"""

from __future__ import annotations

from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf


def cpu_config(gpus: int = 0, tokens: int = 2048, dynamic: bool = False, log_prob: int = 8) -> DictConfig:
    """The grpo laptop profile's batch keys (16 prompts x 8 samples, mini-batch 16 prompts, 32 + 96
    tokens) with the CPU changes applied."""
    from recipes.launch_cpu import apply

    cfg = OmegaConf.create(
        {
            "data": {"max_prompt_length": 32, "max_response_length": 96, "train_batch_size": 16},
            "trainer": {"n_gpus_per_node": gpus, "nnodes": 1},
            "actor_rollout_ref": {
                "actor": {
                    "ppo_mini_batch_size": 16,
                    "ppo_micro_batch_size_per_gpu": 4,
                    "use_dynamic_bsz": dynamic,
                },
                "rollout": {
                    "n": 8,
                    "log_prob_micro_batch_size_per_gpu": log_prob,
                    "log_prob_use_dynamic_bsz": dynamic,
                },
                "ref": {"log_prob_micro_batch_size_per_gpu": log_prob},
                "model": {"use_remove_padding": True},
            },
            "local": {"threads": 1, "micro_batch_tokens": tokens},
        }
    )
    apply(cfg)
    return cfg


def micro(cfg: DictConfig) -> tuple[Any, ...]:
    a = cfg.actor_rollout_ref
    return (
        a.actor.ppo_micro_batch_size_per_gpu,
        a.rollout.log_prob_micro_batch_size_per_gpu,
        a.ref.log_prob_micro_batch_size_per_gpu,
        a.model.use_remove_padding,
    )


def test_the_largest_divisor_within_the_token_budget_padded() -> None:
    # 2048 tokens / 128 per sequence: 16 rows; the mini-batch (128 rows) and the batch (128) split in 8
    assert micro(cpu_config()) == (16, 16, 16, False)
    # world size 2: 64 rows per rank, still 16 per micro-batch; a budget of 1000 tokens: 7 rows fit,
    # the largest divisor of 128 within them is 4
    assert micro(cpu_config(gpus=2)) == (16, 16, 16, False)
    assert micro(cpu_config(tokens=1000))[:3] == (4, 8, 8)  # never below the config's own (4, 8)


@pytest.mark.parametrize("kw", [{"tokens": 0}, {"dynamic": True}], ids=["budget 0", "dynamic batch sizes"])
def test_the_configs_own_micro_batches_stay_when_asked(kw: dict[str, Any]) -> None:
    assert micro(cpu_config(**kw)) == (4, 8, 8, True)


def test_a_bigger_micro_batch_given_is_kept() -> None:
    assert micro(cpu_config(log_prob=64))[1:3] == (64, 64)


def test_a_cpu_run_trains_without_gradient_checkpointing() -> None:
    """veRL's default recomputes each layer's forward in the backward; a CPU run has the memory and
    not the arithmetic to spare: the actor's and (with GAE) the critic's models train without it."""
    from recipes.compose import compose
    from recipes.launch_cpu import apply

    keys = (
        "actor_rollout_ref.model.enable_gradient_checkpointing",
        "critic.model.enable_gradient_checkpointing",
    )
    for recipe, want in (("grpo", {keys[0]}), ("orz_ppo", set(keys))):
        cfg = compose([f"recipe={recipe}", "engine=verl"])
        assert all(OmegaConf.select(cfg, k) is True for k in keys)  # veRL's default, before
        changed = {k: after for k, before, after, _ in apply(cfg) if k in keys}
        assert changed == dict.fromkeys(want, False), recipe
        assert OmegaConf.select(cfg, keys[0]) is False
