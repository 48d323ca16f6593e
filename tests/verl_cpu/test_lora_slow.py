"""LoRA and world-size-2 parallelism on veRL's trainer on this CPU, the long checks (``make test-all``).

LoRA, both of veRL's sync paths (``model.lora.merge``): the merged adapter reaches the rollout as full
weights, the unmerged one as the adapter itself (:mod:`verl_cpu.lora`); at every step the rollout's
log-probs are the actor's, and with the sync skipped they leave them. A LoRA run resumes from its
checkpoint, and ``verl.model_merger`` turns the checkpoint into the base model plus a peft adapter
whose policy is the one the trainer ended with. Parallelism at world size 2 (two gloo ranks): FSDP
parameter and optimizer offload with dynamic batch sizes runs with agreeing log-probs; Ulysses
sequence parallelism runs but computes other log-probs (its all-to-all is patched into
flash-attention only: the reason a CPU run keeps it at 1, ``recipes.launch_cpu``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_main_ppo import ROOT, SMALL, finite, run_verl, steps

from experiments.verl_cpu_features import COIN, LORA, SKIP

pytestmark = pytest.mark.slow

DIFF = "training/rollout_probs_diff_max"


@pytest.fixture(scope="module")
def model(tiny_checkpoint) -> Path:
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


def _run(model: Path, run_dir: Path, cache: Path, *extra: str) -> dict[int, dict]:
    args = ["recipe=grpo", f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}", *SMALL, *COIN]
    p = run_verl([*args, *extra], cache, timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    return steps(run_dir)


@pytest.mark.parametrize("merge", [True, False])
def test_lora_rollout_log_probs_are_the_actors_at_every_step_and_not_without_the_sync(
    model: Path, tmp_path: Path, merge: bool
) -> None:
    lora = [*LORA, f"actor_rollout_ref.model.lora.merge={merge}"]
    synced = _run(model, tmp_path / "synced", tmp_path / "cache", *lora)
    for s in (1, 2):
        assert finite(synced[s], "actor/pg_loss", "actor/grad_norm", DIFF), synced[s]
        assert synced[s][DIFF] < 1e-4, (s, synced[s][DIFF])
    assert (
        tmp_path / "synced" / "checkpoints" / "global_step_2" / "actor" / "lora_train_meta.json"
    ).is_file()
    dropped = _run(model, tmp_path / "dropped", tmp_path / "cache", *lora, SKIP)
    # step 1 samples with the initial weights either way; step 2's rollout missed the first update
    assert dropped[2][DIFF] > 1e-3 and dropped[2][DIFF] > 100 * synced[2][DIFF], (dropped[2], synced[2])


def test_a_lora_run_resumes_and_the_model_merger_writes_its_adapter(model: Path, tmp_path: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    run_dir, cache = tmp_path / "run", tmp_path / "cache"
    _run(model, run_dir, cache, *LORA)
    more = ["trainer.total_training_steps=3", "trainer.test_freq=3", "trainer.save_freq=3"]
    by_step = _run(model, run_dir, cache, *LORA, *more)
    assert "Resuming from" in (run_dir / "train.log").read_text()
    assert sorted(by_step)[-1] == 3 and by_step[3][DIFF] < 1e-4, by_step[3]
    target = tmp_path / "merged"
    ckpt = run_dir / "checkpoints" / "global_step_3" / "actor"
    p = subprocess.run(
        [sys.executable, "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
        + ["--local_dir", str(ckpt), "--target_dir", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert (target / "lora_adapter" / "adapter_config.json").is_file()
    ids = torch.tensor([[3, 17, 40, 5, 9, 11]])
    base = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)
    with torch.no_grad():
        before = base(input_ids=ids).logits
        tuned = PeftModel.from_pretrained(base, target / "lora_adapter").eval()
        after = tuned(input_ids=ids).logits
    # the adapter is the trained one (three steps at lr 5e-2 moved it off its zero init)
    assert (after - before).abs().max().item() > 1e-3


def test_offload_and_dynamic_batch_sizes_run_at_world_size_two(model: Path, tmp_path: Path) -> None:
    budget = "128"  # tokens per rank per micro-batch: the gpu_node budget scaled to these lengths
    by_step = _run(
        model,
        tmp_path / "run",
        tmp_path / "cache",
        "trainer.n_gpus_per_node=2",
        "actor_rollout_ref.actor.fsdp_config.param_offload=True",
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True",
        "actor_rollout_ref.ref.fsdp_config.param_offload=True",
        "actor_rollout_ref.actor.use_dynamic_bsz=True",
        f"actor_rollout_ref.actor.ppo_max_token_len_per_gpu={budget}",
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True",
        f"actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu={budget}",
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True",
        f"actor_rollout_ref.ref.log_prob_max_token_len_per_gpu={budget}",
    )
    for s in (1, 2):
        assert finite(by_step[s], "actor/pg_loss", "actor/grad_norm", "actor/kl_loss", DIFF), by_step[s]
        assert by_step[s][DIFF] < 1e-4, (s, by_step[s][DIFF])


def test_the_trainer_rehearsal_rehearses_a_lora_recipe(tmp_path: Path) -> None:
    """opd with its source's LoRA rank (the pre-flight's ``verl_trainer`` check) runs one step on veRL's
    trainer instead of being skipped."""
    from core.compose import compose
    from recipes.launch_cpu import refusal
    from recipes.preflight.verl_trainer import rehearse

    cfg = compose(["recipe=opd", "scale=gpu_node", "actor_rollout_ref.model.lora_rank=128"])
    assert refusal(cfg) is None
    res = rehearse(cfg, tmp_path / "opd")
    assert res["code"] == 0 and finite(res["metrics"], "actor/pg_loss", "actor/grad_norm"), res["failure"]
