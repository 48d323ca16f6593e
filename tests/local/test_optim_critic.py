"""The optimizer, the ORZ critic and prompt truncation of the local engine read the veRL keys they claim.

Each check watches what reaches torch (the optimizer's hyper-parameters, the number of optimizer
steps, the clip norm, the value-clip range handed to veRL's value loss) rather than the config:
CISPO's Adam eps through ``optim.override_optimizer_config``; the critic's lr / warm-up / betas /
weight decay / grad clip / value clip / mini-batches and epochs as ORZ sets them (16 critic updates
per rollout against the actor's one); ``data.truncation`` and ``data.filter_overlong_prompts``.
"""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from omegaconf import OmegaConf

from core import model as models
from core.compose import compose
from core.data import chat_ids
from core.sampler import Rollout
from recipes.local import algo, critic
from recipes.local.data import load_split

pytestmark = pytest.mark.usefixtures("hydra_ctx")  # one Hydra context for the module


def test_cispo_adam_eps_reaches_the_optimizer() -> None:
    params = [torch.nn.Parameter(torch.zeros(2))]
    for scale in ([], ["scale=laptop"]):
        opt, _ = algo.optimizer(params, compose(["recipe=cispo", *scale]).actor_rollout_ref.actor.optim, 10)
        assert opt.defaults["eps"] == 1e-15  # MiniMax-M1 sec. 3.2, at any scale
    opt, _ = algo.optimizer(params, compose(["recipe=cispo"]).actor_rollout_ref.actor.optim, 10)
    assert opt.defaults["betas"] == (0.9, 0.95) and opt.defaults["weight_decay"] == 0.1
    opt, _ = algo.optimizer(params, compose(["recipe=dapo"]).actor_rollout_ref.actor.optim, 10)
    assert opt.defaults["eps"] == 1e-8  # torch's default where the recipe sets none


@pytest.fixture(scope="module")
def tiny_dir(tiny_checkpoint):
    return tiny_checkpoint((32, 1, 2, 1, 64, 64))  # built once per session (tests/conftest.py)


def _rollout(bs: int, n: int, R: int = 5) -> tuple[Rollout, SimpleNamespace]:
    g = torch.Generator().manual_seed(0)
    B = bs * n
    mask = torch.ones(B, R, dtype=torch.long)
    ro = Rollout(
        torch.full((B, 4), 30), torch.ones(B, 4, dtype=torch.long), torch.full((B, R), 31), mask, None
    )
    batch = SimpleNamespace(
        batch={"values": torch.randn(B, R, generator=g), "returns": torch.randn(B, R, generator=g)}
    )
    return ro, batch


def test_orz_critic_trains_as_orz_sets_it(tiny_dir, monkeypatch) -> None:
    """Published orz_ppo on a 16-prompt batch: 16 critic updates per rollout, ORZ's optimizer and clips."""
    cfg = compose(
        [
            "recipe=orz_ppo",
            "data.train_batch_size=16",
            "actor_rollout_ref.rollout.n=2",
            f"critic.model.path={tiny_dir}",
            "critic.optim.clip_grad=0.7",  # a value no default has: it must reach clip_grad_norm_
        ]
    )
    c = critic.Critic(cfg, total_steps=20)
    d = c.opt.defaults
    assert (d["lr"], d["betas"], d["weight_decay"]) == (5e-6, (0.9, 0.95), 0.0)
    seen = {"steps": 0, "clip": [], "range": []}
    real_step, real_clip, real_loss = c.opt.step, torch.nn.utils.clip_grad_norm_, critic.compute_value_loss
    monkeypatch.setattr(
        c.opt, "step", lambda *a, **k: seen.__setitem__("steps", seen["steps"] + 1) or real_step()
    )
    monkeypatch.setattr(
        torch.nn.utils, "clip_grad_norm_", lambda p, m, *a, **k: seen["clip"].append(m) or real_clip(p, m)
    )
    monkeypatch.setattr(
        critic,
        "compute_value_loss",
        lambda **kw: seen["range"].append(kw["cliprange_value"]) or real_loss(**kw),
    )
    lrs = []
    for _ in range(5):  # ORZ's critic warm-up: 4 rollouts, linear from 0
        ro, batch = _rollout(16, 2)
        lrs.append(c.update(ro, batch, n=2)["critic/lr"])
    assert seen["steps"] == 5 * 16  # critic.ppo_mini_batch_size = 16 / 16 = 1 prompt, one pass
    assert set(seen["clip"]) == {0.7} and set(seen["range"]) == {0.2}
    assert lrs == pytest.approx([0.0, 1.25e-6, 2.5e-6, 3.75e-6, 5e-6])


def _write(path, prompts: list[str]) -> None:
    rows = [
        {
            "prompt": [{"role": "user", "content": p}],
            "data_source": "arithmetic",
            "reward_model": {"style": "rule", "ground_truth": "1"},
            "extra_info": {"index": i},
        }
        for i, p in enumerate(prompts)
    ]
    pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.mark.parametrize("mode", ["error", "left", "right", "middle", "filter"])
def test_prompt_truncation_as_verl_keys_say(tmp_path, capsys, mode) -> None:
    tok = models.build_tokenizer("char")
    f = tmp_path / "train.parquet"
    _write(f, ["1+1", "12345678901234567890+1", "2+2"])
    full = chat_ids(tok, [{"role": "user", "content": "12345678901234567890+1"}])
    short = len(chat_ids(tok, [{"role": "user", "content": "1+1"}]))
    limit = short + 4
    assert len(full) > limit
    data = {
        "train_files": str(f),
        "max_prompt_length": limit,
        "truncation": "error" if mode == "filter" else mode,
    }
    data["filter_overlong_prompts"] = mode == "filter"
    cfg = OmegaConf.create({"data": data})
    if mode == "error":
        with pytest.raises(ValueError, match=rf"row 1 of {f}.*data\.truncation=left"):
            load_split(cfg, "train_files", tok)
        return
    out = load_split(cfg, "train_files", tok)
    if mode == "filter":
        assert [p.text for p in out] == ["1+1", "2+2"]
        assert "1 prompts longer than data.max_prompt_length" in capsys.readouterr().out
        return
    ids = out[1].ids
    want = {
        "left": full[-limit:],
        "right": full[:limit],
        "middle": full[: limit // 2] + full[-(limit - limit // 2) :],
    }
    assert ids == want[mode] and len(out) == 3 and len(out[0].ids) == short
    assert "1 truncated" in capsys.readouterr().out
