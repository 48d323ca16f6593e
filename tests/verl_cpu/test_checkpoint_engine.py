"""The ``cpu_gloo`` checkpoint engine (verl_cpu.checkpoint_engine) between two real processes: the
sender's state dict arrives whole (names, dtypes, shapes, bytes), in several buckets, and veRL's
registry hands out the engine by its backend name."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
from typing import Any

import pytest
import torch


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {
        "embed.weight": torch.randn(50, 8, generator=g),
        "layer.bias": torch.randn(8, generator=g, dtype=torch.float64),
        "counts": torch.arange(7, dtype=torch.int64),
        "empty": torch.zeros(0),
        "big": torch.randn(300, generator=g),  # larger than the bucket: travels alone
    }


def _receiver(master: dict[str, Any], steps: int, out: Any) -> None:
    from verl_cpu.checkpoint_engine import GlooCheckpointEngine

    eng = GlooCheckpointEngine(bucket_size=1024)
    eng.init_process_group(rank=1, world_size=2, master=master)
    got = {name: t.clone() for name, t in eng.receive_weights(global_steps=steps)}
    eng.finalize()
    out.put({k: (v.dtype, tuple(v.shape), v.tolist()) for k, v in got.items()})


def test_a_state_dict_crosses_between_two_processes_bucket_by_bucket() -> None:
    from verl.checkpoint_engine import CheckpointEngineRegistry

    from verl_cpu.checkpoint_engine import NAME, GlooCheckpointEngine

    assert CheckpointEngineRegistry.get(NAME) is GlooCheckpointEngine
    sender = GlooCheckpointEngine(bucket_size=1024, is_master=True)
    master = sender.prepare()
    actor_kw, rollout_kw = GlooCheckpointEngine.build_topology(2, 1, [master, None, None])
    assert actor_kw["rank"] == [0, -1] and rollout_kw["rank"] == [1]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_receiver, args=(master, 7, out))
    proc.start()
    try:
        sender.init_process_group(rank=0, world_size=2, master=master)
        state = _state()
        asyncio.run(sender.send_weights(iter(state.items()), global_steps=7))
        got = out.get(timeout=600)  # a loaded machine: spawning and importing veRL takes minutes
    finally:
        proc.join(timeout=120)
        if proc.is_alive():
            proc.kill()
    sender.finalize()
    assert proc.exitcode == 0
    assert set(got) == set(state)
    for name, t in state.items():
        assert got[name] == (t.dtype, tuple(t.shape), t.tolist()), name
    assert sender.sent == {"global_steps": 7, "tensors": 5, "bytes": sum(t.nbytes for t in state.values())}


def test_a_receiver_refuses_the_weights_of_another_step() -> None:
    from verl_cpu.checkpoint_engine import GlooCheckpointEngine

    eng = GlooCheckpointEngine(bucket_size=1024)
    with pytest.raises(RuntimeError, match="only rollout workers receive"):
        next(eng.receive_weights(global_steps=1))
