"""A model-based reward on veRL's trainer on this CPU, the fast checks (no Ray).

The CPU backend's reward server (:mod:`verl_cpu.reward_model`) answers the request the project's reward
function sends (``recipes.learned_reward``, veRL's ``/classify``) with the reward model's own reading of
the text; a CPU launch with ``reward_model=orm`` gets the reward model's replica and pool; a reward model
the CPU backend cannot serve stops the launch before Ray with one ``error:`` line. The 2-step run on
veRL's trainer is in ``test_reward_model_slow.py``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import torch

from core import reward_model as rmod
from core.compose import compose
from recipes.learned_reward import compute_score
from verl_cpu.reward_model import CPURewardServer


@pytest.fixture(scope="module")
def policy(tiny_checkpoint) -> Path:
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


@pytest.fixture(scope="module")
def orm(policy: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rmod.save(rmod.build(policy, "orm", seed=1), tmp_path_factory.mktemp("rm") / "orm")


def _offline(path: Path, question: str, answer: str) -> float:
    """P(good) at the last token of the chat text, computed here from the checkpoint."""
    rm = rmod.load(path)
    chat = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    text = rm.tokenizer.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
    text = text.removeprefix(rm.tokenizer.bos_token or "")  # as veRL's request drops it
    ids = rm.tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        return float(rm.model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)[1])


def test_the_reward_server_answers_the_reward_functions_request_with_the_models_score(orm: Path) -> None:
    async def ask() -> tuple[list[dict], dict]:
        server = CPURewardServer(None, {"path": str(orm)})
        address = await server.start()
        rm = rmod.load(orm)
        out = []
        for solution in ("<answer>7</answer>", "<answer>8</answer>", "no answer"):
            out.append(
                await asyncio.to_thread(
                    compute_score,
                    "arithmetic",
                    solution,
                    "7",
                    {"question": "3+4"},
                    reward_router_address=address,
                    reward_model_tokenizer=rm.tokenizer,
                    reward_model_path=str(orm),
                )
            )
        stats = await server.get_stats()
        await server.runner.cleanup()
        return out, stats

    results, stats = asyncio.run(ask())
    assert stats["requests"] == 3
    offline = [_offline(orm, "3+4", s) for s in ("<answer>7</answer>", "<answer>8</answer>", "no answer")]
    for got, want in zip(results, offline, strict=True):
        assert abs(got["score"] - want) < 1e-6 and got["rm_score"] == got["score"]
    assert len({round(s, 6) for s in offline}) == 3  # the texts score differently: a mix-up would show
    assert [r["acc"] for r in results] == [True, False, False]  # the verifier still grades (the gold)


def test_a_cpu_launch_serves_the_reward_model_on_a_pool_of_its_own(hydra_ctx, orm: Path) -> None:
    from recipes import launch_cpu

    cfg = compose(["recipe=grpo", "engine=verl", "reward_model=orm", f"reward.reward_model.model_path={orm}"])
    assert launch_cpu.refusal(cfg) is None
    changed = {k: after for k, _, after, _ in launch_cpu.apply(cfg)}
    assert changed["reward.reward_model.rollout.name"] == "cpu"
    assert (
        cfg.reward.reward_model.enable_resource_pool is True and cfg.reward.reward_model.n_gpus_per_node == 1
    )
    assert cfg.ray_kwargs.ray_init.num_gpus == launch_cpu.world(cfg) + 1


def test_a_reward_model_the_cpu_cannot_serve_is_one_error_line_before_ray(
    policy: Path, orm: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from recipes import run
    from recipes.supervise import launched, run_key

    prm = rmod.save(rmod.build(policy, "prm"), tmp_path / "prm")
    key = r"\[reward\.reward_model\.model_path\]"
    cases = {
        str(tmp_path / "nowhere"): key
        + r" .*nowhere is not a reward-model checkpoint .*Fix: `make rm KIND=orm",
        str(policy): key + r" .* is not a reward model written by `make rm`.*fix: `make rm KIND=orm",
        str(prm): key + r" .*prm is a prm: .*Fix: reward_model=orm",
    }
    for path, pattern in cases.items():
        run_dir = tmp_path / "r"
        code = run.single(
            [
                "recipe=grpo",
                "engine=verl",
                "reward_model=orm",
                f"actor_rollout_ref.model.path={policy}",
                f"reward.reward_model.model_path={path}",
                f"run_dir={run_dir}",
            ]
        )
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1, (path, err[-1500:])
        assert re.search(pattern, errors[0]), (path, errors[0])
        assert not (run_dir / "launch.sh").exists() and not launched(run_key(run_dir))
