"""The GPU rules (recipes.validate.gpu): a config that would trip one of veRL's run-time checks is
refused before launch with its full key and the fix, and every recipe's defaults pass them."""

from __future__ import annotations

import pytest

from core.compose import compose, options
from core.resolvers import token_budget
from recipes.validate import RULES

GPU_RULES = (
    "token_budgets",
    "log_prob_batching",
    "critic_ulysses_key",
    "gpu_batch_split",
    "rollout_parallel",
    "grad_clip_set",
    "resume_keys",
    "verl_critic_config",
    "verl_distillation_config",
)


def gpu_errors(cfg) -> list[str]:
    return [e for name in GPU_RULES for e in RULES.get(name).check(cfg)]


@pytest.mark.parametrize("scale", [None, "gpu_node", "multi_node"])
@pytest.mark.parametrize("recipe", options("recipe"))
def test_every_recipe_passes_the_gpu_rules(hydra_ctx, recipe: str, scale: str | None) -> None:
    cfg = compose([f"recipe={recipe}", "engine=verl", *([f"scale={scale}"] if scale else [])])
    assert not gpu_errors(cfg)


def test_token_budget_resolver() -> None:
    assert token_budget(2048, 20480) == 22528 and token_budget(2048, 20480, 8) == 2816
    with pytest.raises(ValueError, match="rlvr.token_budget"):
        token_budget(2048, 20480, 0)


A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"


@pytest.mark.parametrize(
    "overrides,key,needle",
    [
        # seqlen_balancing.py: budget x Ulysses < prompt + response
        (["scale=gpu_node", f"{A}.ppo_max_token_len_per_gpu=1024"], f"{A}.ppo_max_token_len_per_gpu", "fix:"),
        (
            ["scale=gpu_node", f"{R}.log_prob_max_token_len_per_gpu=2000"],
            f"{R}.log_prob_max_token_len_per_gpu",
            "2048",
        ),
        (
            [
                "recipe=r1_zero",
                "scale=gpu_node",
                "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=16384",
            ],
            "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
            "16384",
        ),
        (["scale=gpu_node", f"{A}.ppo_max_token_len_per_gpu=null"], f"{A}.ppo_max_token_len_per_gpu", "None"),
        # engine_workers.py: the rollout's log-prob batching follows the actor's
        (["scale=gpu_node", f"{R}.log_prob_use_dynamic_bsz=false"], f"{R}.log_prob_use_dynamic_bsz", "fix:"),
        # seqlen_balancing.py (equal split), engine_workers.py (mini-batch over dp), engine/utils.py (micro)
        (["scale=gpu_node", "trainer.n_gpus_per_node=7"], "data.train_batch_size", "7 GPUs"),
        ([f"{A}.ppo_mini_batch_size=1", f"{R}.n=4", "trainer.nnodes=2"], f"{A}.ppo_mini_batch_size", "16"),
        ([f"{A}.ppo_micro_batch_size_per_gpu=3"], f"{A}.ppo_micro_batch_size_per_gpu", "divide"),
        ([f"{A}.ppo_micro_batch_size_per_gpu=null"], f"{A}.ppo_micro_batch_size_per_gpu", "None"),
        ([f"{A}.ulysses_sequence_parallel_size=3"], f"{A}.ulysses_sequence_parallel_size", "divide"),
        # engine_workers.py: rollout tensor parallelism over the GPUs
        (
            [
                "trainer.n_gpus_per_node=6",
                "data.train_batch_size=96",
                f"{R}.tensor_model_parallel_size=4",
                "preflight=false",
            ],
            f"{R}.tensor_model_parallel_size",
            "6 GPUs",
        ),
        (
            ["trainer.n_gpus_per_node=6", "data.train_batch_size=96", f"{R}.data_parallel_size=4"],
            f"{R}.tensor_model_parallel_size",
            "data_parallel_size=4",
        ),
        # fsdp/transformer_impl.py: clip_grad asserted at every step
        ([f"{A}.optim.clip_grad=null"], f"{A}.optim.clip_grad", "1.0"),
        # ray_trainer.py: resumption
        (["trainer.resume_mode=resume_path"], "trainer.resume_from_path", "global_step_"),
        (["trainer.default_hdfs_dir=hdfs://x"], "trainer.default_hdfs_dir", "NotImplementedError"),
        # critic: veRL's critic dataclass, its Ulysses key and remove-padding requirement
        (
            [
                "recipe=orz_ppo",
                "critic.ulysses_sequence_parallel_size=4",
                "critic.fsdp.ulysses_sequence_parallel_size=1",
            ],
            "critic.ulysses_sequence_parallel_size",
            "critic.fsdp",
        ),
        (["recipe=orz_ppo", "critic.ppo_mini_batch_size=256"], "critic", "train_batch_size"),
        (
            ["recipe=orz_ppo", "critic.model.use_remove_padding=false"],
            "critic.model.use_remove_padding",
            "fix:",
        ),
        (["recipe=orz_ppo", "critic.optim.lr_scheduler_type=linear"], "critic", "AssertionError"),
        # distillation: veRL's distillation dataclass
        (
            ["recipe=opd", "distillation.teacher_models.teacher_model.model_path=null"],
            "distillation",
            "model_path",
        ),
    ],
)
def test_a_config_that_trips_a_verl_check_is_refused(hydra_ctx, overrides, key, needle) -> None:
    if not any(o.startswith("recipe=") for o in overrides):
        overrides = ["recipe=grpo", *overrides]
    errs = gpu_errors(compose(["engine=verl", *overrides]))
    hits = [e for e in errs if e.startswith(f"[{key}]")]
    assert hits, errs
    assert any(needle in e for e in hits), hits
