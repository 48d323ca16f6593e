"""The ``cpu`` backend's reward-model server: veRL's discriminative-RM request answered on the CPU.

veRL 0.9.1 serves a reward model as a rollout replica of ``reward.reward_model.rollout.name``
(``verl/experimental/reward_loop/reward_model.py``: ``get_rollout_replica_class``, then a router
process that forwards HTTP requests to each replica's ``server_address``). With ``name=cpu`` the
replica is :class:`verl_cpu.rollout.CPUReplica`, which starts a :class:`CPURewardServer` (a Ray actor)
instead of the rollout server when veRL asks for a reward model. The server

- loads a reward model written by :func:`core.reward_model.save` (a token classifier with
  ``rlvr_rm.json``) in fp32;
- listens on an HTTP port of this node and answers ``POST /classify`` in vLLM's pooling layout
  (``{"data": [{"probs": [...]}]}``): the request ``veRL``'s discriminative path sends
  (``RewardLoopWorker.compute_score_disrm``) and :mod:`recipes.learned_reward` sends. ``input`` is
  the chat-templated text, tokenized without special tokens; the answer is the class distribution
  at the last token (``use_activation``, default true: softmax; false: the raw logits, as vLLM);
- scores one request at a time, unbatched, so a score does not depend on what else was queued:
  :func:`score` is the whole computation, and an offline call of it on the same text gives the same
  number.

Not covered: a PRM's step readings (the request carries no step boundaries; the server reads the
last token of any model, and ``recipes.launch_cpu`` refuses a PRM), reward models of other
projects (a sequence-classification head), generative judges, batching.
"""

from __future__ import annotations

import asyncio
from typing import Any

import torch

from verl_cpu.server import _model_path, set_threads

#: The kinds of ``rlvr_rm.json`` the server reads as veRL reads a discriminative reward model.
SERVED_KINDS = ("orm",)


@torch.no_grad()
def score(rm: Any, text: str, activation: bool = True) -> list[float]:
    """The class distribution (``activation``) or logits of the reward model ``rm``
    (a :class:`core.reward_model.RewardModel`) at the last token of ``text``."""
    ids = rm.tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError("[reward.reward_model] an empty text was sent to the reward model")
    logits = rm.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    return (logits.softmax(-1) if activation else logits).tolist()


class CPURewardServer:
    """A reward-model replica's server (a Ray actor): see the module docstring."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int = 0) -> None:
        from core import reward_model as rmod  # transformers: in the server's own process

        self.threads = set_threads()
        self.replica_rank = int(replica_rank)
        self.rm = rmod.load(_model_path(model_config))
        if self.rm.info.kind not in SERVED_KINDS:
            raise ValueError(
                f"[reward.reward_model.model_path] a {self.rm.info.kind} is read at its step boundaries, which "
                f"veRL's /classify request does not carry (fix: an orm, `make rm KIND=orm ...`)"
            )
        self.lock = asyncio.Lock()
        self.runner: Any = None
        self.address = ""
        self.requests = 0

    async def start(self) -> str:
        """Listen on a free port of this node; returns ``host:port`` (the replica's ``server_address``)."""
        import ray  # the node's address
        from aiohttp import web  # veRL's own HTTP client/server library

        app = web.Application()
        app.router.add_post("/classify", self._classify)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        host = ray.util.get_node_ip_address()
        site = web.TCPSite(self.runner, host, 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.address = f"{host}:{port}"
        return self.address

    async def _classify(self, request: Any) -> Any:
        from aiohttp import web  # as in start

        body = await request.json()
        text = body.get("input")
        if not isinstance(text, str):
            return web.json_response({"error": "'input' must be one text"}, status=400)
        activation = bool(body.get("use_activation", True))
        async with self.lock:
            probs = await asyncio.to_thread(score, self.rm, text, activation)
        self.requests += 1
        return web.json_response({"object": "list", "data": [{"index": 0, "probs": probs}]})

    async def ready(self) -> dict[str, Any]:
        return {"kind": self.rm.info.kind, "threads": self.threads, "address": self.address}

    async def get_stats(self) -> dict[str, Any]:
        return {"requests": self.requests}

    # The weights never change and live in RAM: what a GPU server frees and restores is a no-op.
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def abort_all_requests(
        self, reset_prefix_cache: bool = True, reject_request: bool = False
    ) -> dict[str, Any]:
        return {"aborted": 0}

    async def resume_generation(self) -> None:
        return None

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


async def launch(name: str, config: Any, model_config: Any, replica_rank: int, env: dict[str, str]) -> tuple:
    """Start the server actor ``name`` and its HTTP port; returns (handle, ``host:port``)."""
    import ray  # the trainer's process

    server = (
        ray.remote(CPURewardServer)
        .options(name=name, num_cpus=0, max_concurrency=64, runtime_env={"env_vars": env} if env else None)
        .remote(config, model_config, replica_rank)
    )
    address = await server.start.remote()
    return server, address
