"""Learned rewards and on-policy distillation are refused before launch when their inputs are wrong.

Each bad config names its key and the fix: a reward model or teacher with another vocabulary than
the policy's, a directory that is not a reward model, a reward function that would ignore the
reward model, a missing teacher, a top-k distillation loss on the local engine. The good configs
(``recipe=opd`` on veRL, ``reward_model=orm`` with a ``make rm`` checkpoint) pass.
"""

from __future__ import annotations

import pytest

from core import model as models
from core import reward_model as rmod
from recipes.compose import compose
from recipes.validate import ConfigError, validate
from recipes.validate.models import RM_KEY, TEACHER_KEY

SPEC = models.ModelSpec(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=64,
    max_position_embeddings=128,
)
LOCAL = ["engine=local", "scale=laptop"]


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, tiny_checkpoint):
    """A char policy, a byte-vocabulary model, an ORM on each, as ``make rm`` writes them."""
    d = tmp_path_factory.mktemp("rules_rm")
    char = tiny_checkpoint(SPEC, "char", seed=0)  # built once per session (tests/conftest.py)
    byte = tiny_checkpoint(SPEC, "byte", seed=0)
    rm_char = rmod.save(rmod.build(char, "orm"), d / "rm_char")
    rm_byte = rmod.save(rmod.build(byte, "orm"), d / "rm_byte")
    return {"char": char, "byte": byte, "rm_char": rm_char, "rm_byte": rm_byte, "dir": d}


def errors(overrides: list[str], engine: str) -> str:
    with pytest.raises(ConfigError) as info:
        validate(compose(overrides), engine)
    return str(info.value)


def test_reward_model_with_another_vocabulary_is_refused(hydra_ctx, ckpts):
    msg = errors(
        [
            "recipe=grpo",
            *LOCAL,
            f"actor_rollout_ref.model.path={ckpts['char']}",
            "reward_model=orm",
            f"{RM_KEY}={ckpts['rm_byte']}",
        ],
        "local",
    )
    assert f"[{RM_KEY}]" in msg and "not the policy's" in msg and "Fix:" in msg


def test_reward_model_of_the_policy_passes(hydra_ctx, ckpts):
    validate(
        compose(
            [
                "recipe=grpo",
                *LOCAL,
                f"actor_rollout_ref.model.path={ckpts['char']}",
                "reward_model=orm",
                f"{RM_KEY}={ckpts['rm_char']}",
            ]
        ),
        "local",
    )


def test_a_directory_that_is_not_a_reward_model_is_refused(hydra_ctx, ckpts):
    msg = errors(["recipe=grpo", *LOCAL, "reward_model=prm", f"{RM_KEY}={ckpts['char']}"], "local")
    assert "no rlvr_rm.json" in msg and "make rm" in msg


def test_reward_model_without_path_or_with_another_reward_function(hydra_ctx, ckpts):
    msg = errors(["recipe=grpo", "reward_model=orm", f"{RM_KEY}=null"], "verl")
    assert f"[{RM_KEY}] reward.reward_model.enable=true without a model" in msg
    msg = errors(
        [
            "recipe=grpo",
            *LOCAL,
            "reward_model=orm",
            f"{RM_KEY}={ckpts['rm_char']}",
            "reward.custom_reward_function.path=pkg://rewards",
        ],
        "local",
    )
    assert "[reward.custom_reward_function.path]" in msg and "pkg://recipes.learned_reward" in msg


def test_missing_teacher_is_refused(hydra_ctx, ckpts):
    msg = errors(["recipe=opd", f"{TEACHER_KEY}=null"], "verl")
    assert f"[{TEACHER_KEY}] distillation.enabled=true without a teacher" in msg
    absent = ckpts["dir"] / "no_teacher_here"
    # the local engine builds a missing teacher where local.teacher says how (recipes.local.teacher) ...
    validate(compose(["recipe=opd", *LOCAL, f"{TEACHER_KEY}={absent}"]), "local")
    # ... and refuses one it is not told to build
    msg = errors(["recipe=opd", *LOCAL, f"{TEACHER_KEY}={absent}", "local.teacher=null"], "local")
    assert f"[{TEACHER_KEY}] {absent} is not an HF checkpoint directory" in msg and "local.teacher" in msg


def test_teacher_with_another_vocabulary_is_refused(hydra_ctx, ckpts):
    msg = errors(
        [
            "recipe=opd",
            *LOCAL,
            f"actor_rollout_ref.model.path={ckpts['char']}",
            f"{TEACHER_KEY}={ckpts['byte']}",
        ],
        "local",
    )
    assert f"[{TEACHER_KEY}] the teacher's vocabulary" in msg and "not the policy's" in msg


def test_topk_distillation_loss_is_refused_locally(hydra_ctx, ckpts):
    msg = errors(
        [
            "recipe=opd",
            *LOCAL,
            f"actor_rollout_ref.model.path={ckpts['char']}",
            f"{TEACHER_KEY}={ckpts['char']}",
            "distillation.distillation_loss.loss_mode=forward_kl_topk",
        ],
        "local",
    )
    assert "[distillation.distillation_loss.loss_mode]" in msg and "engine=verl" in msg


def test_opd_recipe_validates_for_verl(hydra_ctx):
    cfg = compose(["recipe=opd"])
    validate(cfg, "verl")
    d = cfg.distillation
    assert d.enabled and d.distillation_loss.loss_mode == "k1" and not d.distillation_loss.use_task_rewards
