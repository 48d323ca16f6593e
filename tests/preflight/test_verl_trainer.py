"""The whole-trainer rehearsal's config (fast: no Ray) and its refusal to count a check it did not run.

The rehearsal itself (one step of main_ppo) runs in tests/verl_cpu/test_main_ppo_slow.py.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf, open_dict

from core.compose import compose
from recipes.preflight import settings
from recipes.preflight.context import Context
from recipes.preflight.report import Report
from recipes.preflight.verl_trainer import PROMPT, RESPONSE, check_verl_trainer, not_rehearsed, shape


def test_the_shape_keeps_updates_per_rollout_groups_and_budget_margins(hydra_ctx, tmp_path: Path) -> None:
    cfg = compose(["recipe=dapo", "scale=gpu_node"])
    out, changes = shape(cfg, tmp_path / "m", tmp_path / "d", tmp_path / "r")
    sel = lambda c, k: OmegaConf.select(c, k)  # noqa: E731
    a = "actor_rollout_ref.actor"
    assert sel(out, "data.max_prompt_length") == PROMPT and sel(out, "data.max_response_length") == RESPONSE
    assert sel(out, "actor_rollout_ref.rollout.n") == sel(cfg, "actor_rollout_ref.rollout.n")  # 16, kept
    updates = sel(cfg, "data.train_batch_size") // sel(cfg, f"{a}.ppo_mini_batch_size")
    assert sel(out, "data.train_batch_size") // sel(out, f"{a}.ppo_mini_batch_size") == updates == 16
    gen_ratio = sel(cfg, "data.gen_batch_size") / sel(cfg, "data.train_batch_size")
    assert sel(out, "data.gen_batch_size") / sel(out, "data.train_batch_size") == gen_ratio
    assert sel(out, "trainer.n_gpus_per_node") == 2
    # the budget keeps its margin over one sequence: budget x Ulysses size / (P + R), here exactly 1
    budget, sp = sel(cfg, f"{a}.ppo_max_token_len_per_gpu"), sel(cfg, f"{a}.ulysses_sequence_parallel_size")
    P, R = sel(cfg, "data.max_prompt_length"), sel(cfg, "data.max_response_length")
    assert sel(out, f"{a}.ppo_max_token_len_per_gpu") == budget * sp * (PROMPT + RESPONSE) // (P + R)
    # what veRL derives from the lengths follows them (the rollout's own lengths)
    assert sel(out, "actor_rollout_ref.rollout.response_length") == RESPONSE
    assert sel(out, "reward.custom_reward_function.path") == "pkg://recipes.preflight.rehearsal_reward"
    assert ("data.max_response_length", 20480, RESPONSE) in changes
    named = " ".join(not_rehearsed(cfg))
    assert "Ulysses" in named and "tensor-parallel" in named and "vllm" in named
    assert "offload" not in named  # FSDP offload runs on the CPU: the rehearsal runs it


def test_a_config_the_cpu_cannot_run_is_reported_as_not_run_never_as_passed(
    hydra_ctx, tmp_path: Path
) -> None:
    cfg = compose(["recipe=grpo", "engine=verl"])
    with open_dict(cfg):
        cfg.actor_rollout_ref.rollout.name = "hf"  # no rollout backend veRL or this project registers
    report = Report(recipe="grpo", engine="verl")
    out = check_verl_trainer(
        Context(cfg=cfg, engine="verl", settings=settings([f"run_dir={tmp_path}"]), report=report)
    )
    assert out == {"rehearsed": 0.0}
    assert [f.level for f in report.findings] == ["skip"]
    assert report.verdict == "incomplete" and report.exit_code == 1
    assert "SKIP [verl_trainer] actor_rollout_ref.rollout.name" in report.format()


def test_a_multi_node_config_is_shaped_to_one_machine_before_the_cpu_refusals(
    hydra_ctx, tmp_path: Path
) -> None:
    """The rehearsal runs the shape on one machine: the GPU run's node count is not a reason to skip it."""
    from recipes.launch_cpu import refusal

    cfg = compose(["recipe=orz_ppo", "engine=verl", "scale=multi_node"])
    assert cfg.trainer.nnodes == 4
    out, _ = shape(cfg, tmp_path / "model", tmp_path / "data", tmp_path / "run")
    assert out.trainer.nnodes == 1 and out.trainer.n_gpus_per_node == 2 and refusal(out) is None
