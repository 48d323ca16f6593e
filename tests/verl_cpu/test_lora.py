"""LoRA on veRL's trainer on this CPU, the fast checks: the rollout server applies the adapter veRL's
unmerged sync sends exactly as peft's model computes it, and a LoRA rank on modules the model lacks
stops with one error line before Ray starts. The runs themselves are in ``test_lora_slow.py``."""

from __future__ import annotations

import asyncio
import copy
from types import SimpleNamespace

import pytest
import torch
from peft import LoraConfig, TaskType, get_peft_model
from peft.utils.save_and_load import get_peft_model_state_dict
from test_main_ppo import run_verl

from verl_cpu.server import CPURolloutServer


@pytest.fixture(scope="module")
def ckpt(tiny_checkpoint):
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


def _trained_peft(ckpt):
    """The actor's side: a peft LoRA model on the checkpoint, its adapter moved off its zero init."""
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    cfg = LoraConfig(
        task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8, target_modules="all-linear", bias="none"
    )
    peft_model = get_peft_model(copy.deepcopy(base), cfg)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return base, peft_model.eval()


def test_the_server_applies_the_unmerged_sync_as_peft_computes_it(ckpt) -> None:
    """veRL's unmerged sync, as ``engine_workers.update_weights`` sends it: the base weights once (vLLM's
    ``base_layer`` names), then the adapter with its config as a dict; the server's logits are then the
    peft model's, and a second adapter replaces the first."""
    from verl.utils.fsdp_utils import replace_lora_wrapper

    base, peft_model = _trained_peft(ckpt)
    peft_cfg = peft_model.peft_config["default"]
    config = SimpleNamespace(prompt_length=32, response_length=8, max_model_len=None, seed=0)
    srv = CPURolloutServer(config, SimpleNamespace(local_path=str(ckpt)), replica_rank=0)
    base_state = {replace_lora_wrapper(k, peft_cfg): v for k, v in base.state_dict().items()}
    assert any(".base_layer." in k for k in base_state)
    ids = torch.tensor([[3, 17, 40, 5, 9, 11]])
    with torch.no_grad():
        want = peft_model(input_ids=ids).logits

    async def sync() -> tuple[int, int]:
        full = await srv.update_weights(
            base_state, global_steps=0, peft_config=peft_cfg, base_sync_done=False
        )
        lora = await srv.update_weights(
            get_peft_model_state_dict(peft_model),
            global_steps=1,
            peft_config=peft_cfg.to_dict(),
            base_sync_done=True,
        )
        return full, lora

    full, lora = asyncio.run(sync())
    assert full == len(base_state) and lora == 2 * 7 * 2  # A and B of 7 linear layers in each of 2 layers
    with torch.no_grad():
        got = srv.model(input_ids=ids).logits
        plain = base(input_ids=ids).logits
    assert (got - want).abs().max().item() < 1e-5
    assert (got - plain).abs().max().item() > 1e-2  # the adapter matters: a check that could fail
    # the next step's adapter replaces this one
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.mul_(-1.0)
        want = peft_model(input_ids=ids).logits
    asyncio.run(srv.update_weights(get_peft_model_state_dict(peft_model), peft_config=peft_cfg))
    with torch.no_grad():
        assert (srv.model(input_ids=ids).logits - want).abs().max().item() < 1e-5


def test_a_lora_rank_on_modules_the_model_lacks_stops_before_ray_starts(ckpt, tmp_path) -> None:
    from recipes.supervise import launched, run_key

    run_dir = tmp_path / "run"
    p = run_verl(
        [
            "recipe=grpo",
            f"actor_rollout_ref.model.path={ckpt}",
            f"run_dir={run_dir}",
            "++local.task.train_n=16",
            "++local.task.val_n=8",
            "actor_rollout_ref.model.lora_rank=8",
            "actor_rollout_ref.model.target_modules=[c_attn,c_proj]",
        ],
        tmp_path / "cache",
    )
    assert p.returncode == 2, p.stderr[-3000:]
    errors = [line for line in p.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, p.stderr[-3000:]
    assert "[actor_rollout_ref.model.target_modules]" in errors[0] and "c_attn" in errors[0]
    assert "fix:" in errors[0] and "target_modules=all-linear" in errors[0]
    assert "nothing was launched" in p.stderr and "Started a local Ray instance" not in p.stderr
    assert not (run_dir / "launch.sh").exists() and not launched(run_key(run_dir))


def test_the_smollm2_model_option_brings_its_own_profile() -> None:
    """``model=smollm2_135m`` without ``scale=`` runs ``laptop_smollm2`` (the laptop profiles' prompts
    do not fit its tokenizer); a scale given by the user still wins."""
    from recipes.run import prepare_config

    cfg, engine, _, overrides = prepare_config(["recipe=grpo", "model=smollm2_135m", "engine=local"])
    assert cfg.rlvr.scale == "laptop_smollm2" and "scale=laptop_smollm2" in overrides
    cfg, _, _, _ = prepare_config(["recipe=grpo", "engine=local"])
    assert cfg.rlvr.scale == "laptop_base"
    cfg, _, _, _ = prepare_config(["recipe=grpo", "model=smollm2_135m", "engine=local", "scale=laptop_base"])
    assert cfg.rlvr.scale == "laptop_base"
    from recipes.local.data import _profile_hint

    assert _profile_hint(cfg) == "; or scale=laptop_smollm2, the model's own profile"


def test_a_reference_reset_with_lora_is_refused_as_it_would_drop_the_adapter() -> None:
    """Each reset segment starts from verl.model_merger's output: the base weights, the adapter apart."""
    from core.compose import compose
    from recipes.validate.kl import ref_reset

    assert ref_reset(compose(["recipe=r1_zero"])) == []
    (err,) = ref_reset(compose(["recipe=r1_zero", "actor_rollout_ref.model.lora_rank=8"]))
    assert err.startswith("[rlvr.ref_reset_steps]") and "fix:" in err and "lora_rank=0" in err


def test_the_merged_sync_sends_the_merged_weights_in_the_trainers_dtype(ckpt, tmp_path, monkeypatch) -> None:
    """veRL's merged LoRA sync (``model.lora.merge=True``) through the ``merged-lora-fp32`` patch, on the
    FSDP2-wrapped peft model as the actor holds it (gloo, world size 1): every tensor it yields is fp32,
    the rollout server loading them computes the peft model's logits within 1e-5, and the actor's
    adapter is back in place afterwards (base weights restored, adapter still applied)."""
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from verl.plugin.platform import platform_manager
    from verl.workers.engine.fsdp import transformer_impl

    from verl_cpu import patches
    from verl_cpu.platform import PlatformCPU

    # veRL's CPU platform for this test only (as a worker has with VERL_PLATFORM=cpu), restored after
    monkeypatch.setattr(platform_manager, "_current_platform", PlatformCPU())

    (patch,) = [p for p in patches.PATCHES if p.name == "merged-lora-fp32"]

    class Engine(transformer_impl.FSDPEngine):  # the patch built on a subclass: veRL's class untouched
        pass

    base, peft_model = _trained_peft(ckpt)
    ids = torch.tensor([[3, 17, 40, 5, 9, 11]])
    with torch.no_grad():
        want = peft_model(input_ids=ids).logits
    owned = not dist.is_initialized()  # another test of this worker may have left one of world size 1
    if owned:
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    assert dist.get_world_size() == 1
    try:
        for layer in peft_model.base_model.model.model.layers:
            fully_shard(layer)
        fully_shard(peft_model)
        engine = Engine.__new__(Engine)
        engine.module, engine._is_offload_param = peft_model, False
        patch.build(transformer_impl, Engine)
        sent = dict(engine._merged_lora_per_tensor_param())
        with torch.no_grad():
            after = peft_model(input_ids=ids).logits
    finally:
        if owned:
            dist.destroy_process_group()
    assert sent and {t.dtype for t in sent.values()} == {torch.float32}
    assert not any("lora_" in k or "base_layer" in k for k in sent)
    config = SimpleNamespace(prompt_length=32, response_length=8, max_model_len=None, seed=0)
    srv = CPURolloutServer(config, SimpleNamespace(local_path=str(ckpt)), replica_rank=0)
    asyncio.run(srv.update_weights(sent, global_steps=1))
    with torch.no_grad():
        got = srv.model(input_ids=ids).logits
        plain = base(input_ids=ids).logits
    assert (got - want).abs().max().item() < 1e-5
    assert (got - plain).abs().max().item() > 1e-2  # the adapter is in the weights sent
    assert (after - want).abs().max().item() < 1e-5  # the actor is as before the sync
