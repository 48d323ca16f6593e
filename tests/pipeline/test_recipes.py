"""The recipe files this feature adds compose, validate on both engines and cite every key."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from recipes.compose import compose
from recipes.validate import validate


@pytest.fixture(scope="module")
def r1r():
    return compose(["recipe=r1_reasoning"])


def test_r1_reasoning_is_r1_zero_plus_language_consistency(r1r) -> None:
    zero = compose(["recipe=r1_zero"])
    kw = r1r.reward.custom_reward_function.reward_kwargs
    assert kw.lang_weight == 0.5 and kw.target_lang == "en"
    for key in (
        "actor_rollout_ref.rollout.n",
        "data.train_batch_size",
        "actor_rollout_ref.actor.optim.lr",
        "actor_rollout_ref.actor.kl_loss_coef",
        "rlvr.ref_reset_steps",
        "data.max_response_length",
    ):
        assert OmegaConf.select(r1r, key) == OmegaConf.select(zero, key), key


def test_r1_reasoning_cites_its_keys_and_validates(r1r) -> None:
    for key in r1r.rlvr.sources:
        assert OmegaConf.select(r1r, key) is not None, key
    validate(r1r, "verl")
    validate(compose(["recipe=r1_reasoning", "scale=laptop"]), "local")


def test_language_consistency_reaches_the_score() -> None:
    from rewards import compute_score

    kw = dict(format_weight=0.1, lang_weight=0.5, target_lang="en")
    worded = compute_score("arithmetic", "<think>add columns: 4+4+0=08</think><answer>8</answer>", "8", **kw)
    bare = compute_score("arithmetic", "<think>4+4+0=08</think><answer>8</answer>", "8", **kw)
    assert worded["score"] == pytest.approx(bare["score"] + 0.5)
