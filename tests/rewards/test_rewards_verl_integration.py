"""veRL 0.9.1 loads ``rewards.compute_score`` through its own loader (the modules' doctests run through
pytest's ``--doctest-modules``, configured in pyproject.toml)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

import rewards

PATH = "pkg://rewards"  # reward.custom_reward_function.path


def test_verl_loads_the_custom_reward_function() -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn

    cfg = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": PATH,
                    "name": "compute_score",
                    "reward_kwargs": {"format_weight": 0.1, "timeout_s": 1.0},
                }
            }
        }
    )
    fn = get_custom_reward_fn(cfg)
    r = fn(
        data_source="arithmetic",
        solution_str="<think>1+1=2</think><answer>2</answer>",
        ground_truth="2",
        extra_info={},
    )
    assert r["score"] == pytest.approx(1.1) and r["acc"]
    r = fn(
        data_source="lighteval/MATH",
        solution_str=r"\boxed{\frac{1}{2}}",
        ground_truth="0.5",
        extra_info={"index": 3},
    )
    assert r["acc"]


def test_naive_reward_manager_with_our_function(char_tokenizer) -> None:
    import numpy as np
    import torch
    from verl import DataProto
    from verl.workers.reward_manager.naive import NaiveRewardManager

    texts = [r"The answer is \boxed{2\sqrt{3}}", r"\boxed{3} or \boxed{4}"]
    resp = torch.zeros(2, 48, dtype=torch.long)
    mask = torch.zeros(2, 48, dtype=torch.long)
    for i, t in enumerate(texts):
        ids = char_tokenizer.encode(t)
        resp[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = 1
    data = DataProto.from_dict(
        tensors={
            "prompts": torch.full((2, 3), 5),
            "responses": resp,
            "attention_mask": torch.cat([torch.ones(2, 3, dtype=torch.long), mask], 1),
        },
        non_tensors={
            "data_source": np.array(["math", "math"], dtype=object),
            "reward_model": np.array([{"ground_truth": r"\sqrt{12}"}, {"ground_truth": "3"}], dtype=object),
            "extra_info": np.array([{}, {}], dtype=object),
        },
    )
    out = NaiveRewardManager(char_tokenizer, 0, rewards.compute_score)(data, return_dict=True)
    assert out["reward_tensor"].sum(-1).tolist() == [1.0, 0.0]
    assert list(out["reward_extra_info"]["acc"]) == [True, False]
