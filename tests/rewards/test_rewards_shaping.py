"""Shaping: format reward, DAPO overlong penalty (equal to veRL's dapo manager), language consistency."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

import rewards
from rewards.shaping import format_reward, language_consistency, overlong_penalty


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ("<think>2+2=4</think><answer>4</answer>", 1.0),
        ("  <think>\n2+2=4\n</think>\n<answer>4</answer>\n", 1.0),
        ("<think></think><answer>4</answer>", 0.0),
        ("<think> </think><answer>4</answer>", 0.0),
        ("<think>x</think><answer></answer>", 0.0),
        ("<answer>4</answer>", 0.0),
        ("<think>x</think>", 0.0),
        ("<answer>4</answer><think>x</think>", 0.0),
        ("<think>x</think><answer>4</answer><answer>5</answer>", 0.0),
        ("<think>x</think><think>y</think><answer>4</answer>", 0.0),
        ("preamble <think>x</think><answer>4</answer>", 0.0),
        ("<think>x</think><answer>4</answer> trailing text", 0.0),
    ],
)
def test_format_reward(text: str, fmt: float) -> None:
    assert format_reward(text) == fmt


def test_overlong_penalty_numbers() -> None:
    assert [overlong_penalty(n, 64, 32, 1.0) for n in (10, 32, 40, 52, 64)] == [0.0, 0.0, -0.25, -0.625, -1.0]
    assert overlong_penalty(48, 64, 32, 0.5) == -0.25
    with pytest.raises(ValueError, match="overlong_buffer_cfg"):
        overlong_penalty(10, 16, 32, 1.0)


def _batch(tok, texts: list[str], max_len: int):
    from verl import DataProto

    resp = torch.zeros(len(texts), max_len, dtype=torch.long)
    rmask = torch.zeros(len(texts), max_len, dtype=torch.long)
    for i, t in enumerate(texts):
        ids = tok.encode(t)[:max_len]
        resp[i, : len(ids)] = torch.tensor(ids)
        rmask[i, : len(ids)] = 1
    n = len(texts)
    return DataProto.from_dict(
        tensors={
            "prompts": torch.full((n, 4), 5),
            "responses": resp,
            "attention_mask": torch.cat([torch.ones(n, 4, dtype=torch.long), rmask], 1),
        },
        non_tensors={
            "data_source": np.array(["arithmetic"] * n, dtype=object),
            "reward_model": np.array([{"ground_truth": "12"}] * n, dtype=object),
            "extra_info": np.array([{} for _ in texts], dtype=object),
        },
    ), rmask.sum(-1).tolist()


def test_overlong_penalty_equals_verl_dapo_managers(char_tokenizer) -> None:
    """Both veRL 0.9.1 DAPO managers (legacy and reward-loop) add exactly our penalty to our score."""
    from verl.experimental.reward_loop.reward_manager.dapo import DAPORewardManager as LoopDAPO
    from verl.workers.reward_manager.dapo import DAPORewardManager

    max_len, buf = 64, 32
    texts = ["<answer>12</answer>" + "." * n for n in (0, 21, 33, 45, 60)]  # lengths 19, 40, 52, 64, 64
    data, lengths = _batch(char_tokenizer, texts, max_len)
    assert lengths[1:4] == [40, 52, 64]
    cfg = {"enable": True, "len": buf, "penalty_factor": 1.0, "log": True}
    ours = [
        rewards.compute_score("arithmetic", char_tokenizer.decode(data.batch["responses"][i][:n]), "12")[
            "score"
        ]
        + overlong_penalty(n, max_len, buf, 1.0)
        for i, n in enumerate(lengths)
    ]
    assert [overlong_penalty(n, max_len, buf, 1.0) for n in lengths[1:4]] == [-0.25, -0.625, -1.0]

    legacy = DAPORewardManager(
        char_tokenizer,
        0,
        rewards.compute_score,
        max_resp_len=max_len,
        overlong_buffer_cfg=OmegaConf.create(cfg),
    )
    got = legacy(data, return_dict=True)["reward_tensor"].sum(-1).tolist()
    assert got == pytest.approx(ours, abs=1e-6)

    conf = OmegaConf.create(
        {"reward": {"reward_kwargs": {"max_resp_len": max_len, "overlong_buffer_cfg": cfg}}}
    )

    async def run() -> list[float]:
        mgr = LoopDAPO(conf, char_tokenizer, rewards.compute_score)
        return [float((await mgr.run_single(data[i : i + 1]))["reward_score"]) for i in range(len(texts))]

    assert asyncio.run(run()) == pytest.approx(ours, abs=1e-6)


def test_language_consistency() -> None:
    zh = "<think>日工资是四百元，乘以二再乘以二</think><answer>1600</answer>"
    mixed = "<think>日工资 is 400 yuan, times 2 times 2</think><answer>1600</answer>"
    assert language_consistency(zh, "zh") == 1.0
    assert language_consistency(zh, "en") == 0.0
    assert 0.0 < language_consistency(mixed, "zh") < 0.5
    assert language_consistency("<think>12+3</think>", "en") == 0.0
    r = rewards.compute_score("overtime_pay", zh, "1600", lang_weight=0.1, target_lang="zh")
    assert r["lang"] == 1.0 and r["score"] == pytest.approx(1.1)
    with pytest.raises(ValueError, match="target_lang"):
        language_consistency(zh, "fr")
