"""The ``cpu`` rollout backend: veRL's replica and worker-side adapter around :class:`CPURolloutServer`.

veRL 0.9.1 resolves a rollout backend twice by ``actor_rollout_ref.rollout.name``: the trainer side
through ``RolloutReplicaRegistry`` (``verl/workers/rollout/replica.py:388-390``, public) and the
worker side through ``_ROLLOUT_REGISTRY[(name, mode)]`` (``verl/workers/rollout/base.py:89-93``, a
private dict with no register function). :func:`register` adds ``cpu`` to the first; the patch ``rollout-table`` of :mod:`verl_cpu.patches`
to the second.

- :class:`CPUReplica` (trainer side): starts one :class:`~verl_cpu.server.CPURolloutServer` Ray actor
  per replica, named :func:`server_name`, in every mode veRL starts a replica in: hybrid (the actor's
  rollout, one replica per ``tensor_model_parallel_size`` trainer ranks), colocated (a distillation
  teacher or a reward model on its own resource pool) and standalone; on the node of the replica's
  first worker (on a multi-node Ray cluster the replicas spread over the nodes with their workers).
- :class:`CPUServerAdapter` (inside each trainer worker, ``ActorRolloutRefWorker``): receives the
  actor's weights from veRL's checkpoint engine (every rank iterates them, since FSDP gathers full
  tensors collectively) and the replica's leader rank sends them to its server; with a LoRA actor
  (unmerged sync) the tensors are the adapter and its ``peft_config`` goes along (:mod:`verl_cpu.lora`).
Not covered: tensor/pipeline parallel replicas (a replica is one process), partial rollouts.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import ray
import torch
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry

from verl_cpu.server import THREADS_ENV, CPURolloutServer

#: The backend's name: ``actor_rollout_ref.rollout.name=cpu``.
NAME = "cpu"
#: The negative control of the weight sync: with ``1`` the adapter receives the actor's weights and
#: drops them, so the rollout keeps sampling from the initial model (a test shows that the rollout's
#: log-probs then leave the actor's). Forwarded like any variable:
#: ``+ray_kwargs.ray_init.runtime_env.env_vars.VERL_CPU_SKIP_WEIGHT_SYNC='1'``.
SKIP_SYNC = "VERL_CPU_SKIP_WEIGHT_SYNC"
#: The async modes' negative control: the weight update of this one global step is received and
#: dropped, so the rollout keeps the previous weights and weight version (``verl_cpu.staleness``
#: then finds trajectories staler than the sampler allows).
DROP_UPDATE = "VERL_CPU_DROP_WEIGHT_UPDATE"


def server_name(replica_rank: int, kind: str = "", suffix: str = "") -> str:
    """The Ray actor name of a replica's server (``kind``: ``""``, ``teacher`` or ``reward``)."""
    return f"cpu_rollout_server{'_' + kind if kind else ''}_{replica_rank}{suffix}"


class CPUReplica(RolloutReplica):
    """A rollout replica served by one CPU process (see the module docstring)."""

    def _kind(self) -> str:
        return "teacher" if self.is_teacher_model else "reward" if self.is_reward_model else ""

    async def launch_servers(self) -> None:
        name = server_name(self.replica_rank, self._kind(), self.name_suffix)
        env = {k: os.environ[k] for k in (THREADS_ENV,) if k in os.environ}
        if self.is_reward_model:  # an HTTP server veRL's reward router forwards to (verl_cpu.reward_model)
            from verl_cpu.reward_model import launch  # aiohttp: only a reward model needs it

            server, self._server_address = await launch(
                name, self.config, self.model_config, self.replica_rank, env
            )
            self.servers, self._server_handle = [server], server
            return
        server = (
            ray.remote(CPURolloutServer)
            .options(
                name=name,
                num_cpus=0,
                max_concurrency=self.max_concurrency,
                runtime_env={"env_vars": env} if env else None,
                scheduling_strategy=await self._beside_workers(),
            )
            .remote(self.config, self.model_config, self.replica_rank)
        )
        await server.ready.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{name}:0"

    async def _beside_workers(self) -> NodeAffinitySchedulingStrategy | None:
        """On the node of the replica's first worker, as veRL's vLLM replicas are (on a cluster the
        replicas spread with their workers over the nodes); None when it has no workers yet."""
        if not self.workers:
            return None
        node = await self.workers[0].__ray_call__.remote(lambda w: ray.get_runtime_context().get_node_id())
        return NodeAffinitySchedulingStrategy(node_id=node, soft=False)

    def rollout_worker_use_gpu(self) -> bool:
        return True  # the colocated worker group asks for the logical GPU slots of its pool


class CPUServerAdapter(BaseRollout):
    """The worker-side half: hands the actor's weights to this rank's replica server (see module)."""

    def __init__(
        self, config: Any, model_config: Any, device_mesh: Any = None, replica_rank: int = -1, **kw: Any
    ) -> None:
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", 0))
        size = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        self.replica_rank = rank // size if replica_rank == -1 else replica_rank
        self.is_leader_rank = rank % size == 0
        self.sent = 0

    async def update_weights(
        self,
        weights: Generator[tuple[str, torch.Tensor], None, None],
        wire_format: str = "named_tensors",
        **kwargs: Any,
    ) -> None:
        if wire_format != "named_tensors":
            raise ValueError(
                f"[actor_rollout_ref.rollout.checkpoint_engine.backend] the cpu rollout takes full named tensors, "
                f"not {wire_format!r} (fix: checkpoint_engine.backend=naive)"
            )
        state = {name: t.detach().to("cpu", copy=True).contiguous() for name, t in weights}
        steps = kwargs.get("global_steps")
        dropped = steps is not None and os.environ.get(DROP_UPDATE) == str(steps)
        if not self.is_leader_rank or os.environ.get(SKIP_SYNC) == "1" or dropped:
            return
        server = ray.get_actor(server_name(self.replica_rank))
        self.sent = await server.update_weights.remote(
            state,
            global_steps=kwargs.get("global_steps"),
            peft_config=kwargs.get("peft_config"),
            base_sync_done=kwargs.get("base_sync_done", True),
        )

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None


def register() -> None:
    """Register ``cpu`` with veRL's replica registry (the worker-side table is patched:
    :mod:`verl_cpu.patches`, ``rollout-table``). Idempotent."""
    RolloutReplicaRegistry.register(NAME, lambda: CPUReplica)
