"""The ``cpu_gloo`` checkpoint engine: the actor's weights to standalone CPU rollout replicas over gloo.

veRL 0.9.1's async trainers sync weights to rollout replicas that live in processes of their own
through a :class:`~verl.checkpoint_engine.base.CheckpointEngine` chosen by
``actor_rollout_ref.rollout.checkpoint_engine.backend`` (``naive`` passes them in-process and only
serves colocated replicas; the separate-async trainer refuses it,
``verl/trainer/ppo/v1/trainer_separate_async.py:68``). The built-in engines move weights over
NCCL, NIXL, HCCL or Mooncake, all GPU transports. :class:`GlooCheckpointEngine` is registered
with veRL's ``CheckpointEngineRegistry`` as :data:`NAME` and does what veRL's NCCL engine does,
with a torch gloo process group over TCP:

- ``prepare``: actor rank 0 (the master) picks a free port for a ``TCPStore``;
- ``build_topology``: a group of actor rank 0 plus every rollout worker (actor ranks > 0 only walk
  the weight generator, which is collective over the FSDP group);
- ``init_process_group``: a fresh ``ProcessGroupGloo`` for this sync (torn down in ``finalize``);
- ``send_weights`` / ``receive_weights``: buckets of at most ``bucket_size`` bytes (a larger tensor
  travels alone), each broadcast as a size header, a pickled name/dtype/shape table and the bytes.

The receiving side yields ``(name, tensor)`` pairs to the rollout's server adapter
(:class:`verl_cpu.rollout.CPUServerAdapter`), which loads them with the trainer's ``global_steps``
as the server's weight version. Not covered: chunking one tensor across buckets, several nodes
(the store binds the master's node address; nothing else limits it), delta updates.
"""

from __future__ import annotations

import datetime
import pickle
from collections.abc import Generator, Iterable
from typing import Any

import ray
import torch
import torch.distributed as dist
from verl.checkpoint_engine.base import CheckpointEngine, CheckpointEngineRegistry
from verl.utils.net_utils import get_free_port

from verl_cpu.platform import CHECKPOINT_ENGINE

#: The backend's name: ``actor_rollout_ref.rollout.checkpoint_engine.backend=cpu_gloo``.
NAME = CHECKPOINT_ENGINE

#: Seconds a rank waits for the others (store rendezvous and each broadcast).
TIMEOUT_S = 600


def _bucket_bytes(bucket: list[tuple[str, torch.Tensor]]) -> tuple[list[tuple[Any, ...]], torch.Tensor]:
    """The table (name, dtype, shape, offset, nbytes per tensor) and the concatenated bytes of a bucket."""
    table, parts, offset = [], [], 0
    for name, t in bucket:
        flat = t.reshape(-1).view(torch.uint8)
        table.append((name, t.dtype, tuple(t.shape), offset, flat.numel()))
        parts.append(flat)
        offset += flat.numel()
    payload = torch.cat(parts) if parts else torch.empty(0, dtype=torch.uint8)
    return table, payload


def _unpack(
    table: list[tuple[str, torch.dtype, tuple[int, ...], int, int]], payload: torch.Tensor
) -> Generator:
    for name, dtype, shape, offset, nbytes in table:
        yield name, payload[offset : offset + nbytes].view(dtype).reshape(shape)


@CheckpointEngineRegistry.register(NAME)
class GlooCheckpointEngine(CheckpointEngine):
    """See the module docstring. ``is_master``: actor rank 0 (veRL's actor worker passes it);
    rollout workers construct it with ``bucket_size`` only."""

    def __init__(self, bucket_size: int, is_master: bool = False, timeout_s: float = TIMEOUT_S) -> None:
        self.bucket_size = int(bucket_size)
        self.is_master = bool(is_master)
        self.timeout = datetime.timedelta(seconds=float(timeout_s))
        self.rank: int | None = None
        self.group: Any = None
        self.store: Any = None
        self.sent: dict[str, Any] = {}

    # ------------------------------------------------------------------------------ topology
    def prepare(self) -> dict[str, Any] | None:
        if not self.is_master:
            return None
        host = ray.util.get_node_ip_address().strip("[]")
        port, _ = get_free_port(host)
        return {"host": host, "port": int(port)}

    @classmethod
    def build_topology(
        cls, actor_wg_world_size: int, rollout_world_size: int, metadata: list[Any]
    ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        master = metadata[0]
        if not master:
            raise RuntimeError(
                f"[{NAME}] actor rank 0 is not the checkpoint engine's master (it has no store address)"
            )
        world = 1 + rollout_world_size
        actor = {
            "rank": [0] + [-1] * (actor_wg_world_size - 1),
            "world_size": [world] * actor_wg_world_size,
            "master": [master] * actor_wg_world_size,
        }
        rollout = {
            "rank": list(range(1, world)),
            "world_size": [world] * rollout_world_size,
            "master": [master] * rollout_world_size,
        }
        return actor, rollout

    def init_process_group(self, rank: int, world_size: int, master: dict[str, Any]) -> None:
        self.rank = int(rank)
        if self.rank < 0:
            return
        self.store = dist.TCPStore(
            master["host"],
            int(master["port"]),
            int(world_size),
            is_master=self.rank == 0,
            timeout=self.timeout,
        )
        self.group = dist.ProcessGroupGloo(self.store, self.rank, int(world_size), self.timeout)

    def finalize(self) -> None:
        self.group = None
        self.store = None
        self.rank = None

    # ------------------------------------------------------------------------------ transfer
    def _bcast(self, t: torch.Tensor) -> torch.Tensor:
        if t.numel():
            self.group.broadcast([t], dist.BroadcastOptions()).wait()
        return t

    def _send_bucket(
        self, bucket: list[tuple[str, torch.Tensor]], last: bool, global_steps: int | None
    ) -> None:
        table, payload = _bucket_bytes(bucket)
        header = pickle.dumps({"table": table, "last": last, "global_steps": global_steps})
        self._bcast(torch.tensor([len(header), payload.numel()], dtype=torch.int64))
        self._bcast(torch.frombuffer(bytearray(header), dtype=torch.uint8))
        self._bcast(payload)

    @torch.no_grad()
    async def send_weights(
        self, weights: Iterable[tuple[str, torch.Tensor]], global_steps: int | None = None
    ) -> dict[str, Any]:
        """Broadcast every (name, tensor) of ``weights`` to the rollout workers (actor rank 0); other
        actor ranks only walk the generator."""
        if self.rank is None:
            raise RuntimeError(f"[{NAME}] send_weights before init_process_group")
        if self.rank < 0:
            for _ in weights:
                pass
            return {}
        bucket: list[tuple[str, torch.Tensor]] = []
        size = tensors = total = 0
        for name, t in weights:
            t = t.detach().to("cpu").contiguous()
            if bucket and size + t.nbytes > self.bucket_size:
                self._send_bucket(bucket, False, global_steps)
                bucket, size = [], 0
            bucket.append((name, t))
            size += t.nbytes
            tensors += 1
            total += t.nbytes
        self._send_bucket(bucket, True, global_steps)
        self.sent = {"global_steps": global_steps, "tensors": tensors, "bytes": total}
        return {}

    @torch.no_grad()
    def receive_weights(
        self, global_steps: int | None = None
    ) -> Generator[tuple[str, torch.Tensor], None, None]:
        """Yield the broadcast (name, tensor) pairs until the sender's last bucket (a rollout worker)."""
        if self.rank is None or self.rank < 1:
            raise RuntimeError(f"[{NAME}] receive_weights on rank {self.rank}: only rollout workers receive")
        while True:
            sizes = self._bcast(torch.zeros(2, dtype=torch.int64))
            header = pickle.loads(
                self._bcast(torch.empty(int(sizes[0]), dtype=torch.uint8)).numpy().tobytes()
            )
            if header["global_steps"] != global_steps:
                raise RuntimeError(
                    f"[{NAME}] the rollout expected the weights of step {global_steps}, "
                    f"the trainer sent step {header['global_steps']}"
                )
            payload = self._bcast(torch.empty(int(sizes[1]), dtype=torch.uint8))
            yield from _unpack(header["table"], payload)
            if header["last"]:
                return
