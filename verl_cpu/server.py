"""The CPU rollout server: token-in/token-out generation for veRL's agent loop, batched, on the CPU.

One :class:`CPURolloutServer` is a Ray actor per rollout replica (:mod:`verl_cpu.rollout` starts it).
veRL's agent loop sends one ``generate`` request per sample, all of a step's requests at once
(``asyncio.gather`` in ``verl/experimental/agent_loop/agent_loop.py``); the server queues them,
waits until no new request has arrived for :data:`GATHER_S` seconds, and decodes the queue as
batches with the project's KV-cache sampler (:func:`core.sampler.generate`: left padding, finished
rows dropped from the batch and the cache, the ``n`` samples of one prompt sharing its prefill)
-- one batch per set of sampling settings (temperature, top-p, top-k). It honours
``max_tokens`` (capped by the rollout's response length and the model's context, as veRL's vLLM
server caps it), stops at every end-of-sequence id of the tokenizer and the model's generation
config, decodes greedily at temperature 0 (veRL's validation with ``do_sample=false``), and
returns the sampled tokens' log-probs under the temperature-scaled distribution (what veRL's actor
recomputes). ``prompt_logprobs`` (a distillation teacher's request) returns the log-prob of every
prompt token after the first in vLLM's layout, with the top-k alternatives when asked.

Weights come through veRL's own sync: the trainer's naive checkpoint engine hands the actor's
parameters to :class:`verl_cpu.rollout.CPUServerAdapter`, which sends them to :meth:`update_weights`.
Random state: one generator per server, seeded from the rollout seed and the replica rank; which
requests share a batch depends on when they arrive, so a run is repeatable up to that.
A LoRA actor's adapter (veRL's unmerged sync) is applied by :mod:`verl_cpu.lora`.
Not covered: multi-modal inputs, repetition penalties, stop strings, aborting a
request mid-decode (``abort_all_requests`` waits for the batch in flight).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import torch

#: Seconds without a new request before the queue is decoded (the agent loop's requests of one
#: step arrive within milliseconds of each other).
GATHER_S = 0.05

#: Longest wait for stragglers once a batch has started to gather, in seconds.
GATHER_MAX_S = 0.5

#: Environment variable with the torch thread count of rollout servers and trainer workers.
THREADS_ENV = "VERL_CPU_THREADS"


def set_threads() -> int:
    """Set torch's thread count from :data:`THREADS_ENV` (if set); returns the count in effect."""
    n = os.environ.get(THREADS_ENV)
    if n:
        torch.set_num_threads(int(n))
    return torch.get_num_threads()


@dataclass
class Request:
    """One queued ``generate`` call."""

    prompt: list[int]
    max_tokens: int
    key: tuple[float, float, int]
    done: asyncio.Future = field(repr=False)


def sampling_key(params: dict[str, Any]) -> tuple[float, float, int]:
    """(temperature, top_p, top_k) of a request; temperature 0 means greedy. Refuses what the
    sampler cannot do with a ``ValueError`` naming the setting."""
    rep = float(params.get("repetition_penalty", 1.0) or 1.0)
    if rep != 1.0:
        raise ValueError(
            f"[actor_rollout_ref.rollout.repetition_penalty] {rep}: the CPU rollout backend samples without "
            "repetition penalties (fix: 1.0)"
        )
    temp = float(params.get("temperature", 1.0))
    top_k = params.get("top_k", -1)
    return temp, float(params.get("top_p", 1.0)), -1 if top_k is None else int(top_k)


def _model_path(model_config: Any) -> str:
    """The local directory of veRL's model config (an ``HFModelConfig`` or a DictConfig with ``path``)."""
    for key in ("local_path", "path"):
        value = getattr(model_config, key, None)
        if value is None and hasattr(model_config, "get"):
            value = model_config.get(key)
        if value:
            return str(value)
    raise ValueError("[actor_rollout_ref.model.path] the rollout server got no model path")


class CPURolloutServer:
    """A rollout replica's server (a Ray actor): see the module docstring."""

    def __init__(
        self, config: Any, model_config: Any, replica_rank: int = 0, seed: int | None = None
    ) -> None:
        from transformers import AutoModelForCausalLM, GenerationConfig  # in the server's own process
        from verl.utils import hf_tokenizer  # as above

        self.threads = set_threads()
        self.config = config
        self.replica_rank = int(replica_rank)
        path = _model_path(model_config)
        self.model = AutoModelForCausalLM.from_pretrained(
            path, torch_dtype=torch.float32, attn_implementation="sdpa"
        )
        self.model.eval()
        tok = hf_tokenizer(path)
        stops = {int(tok.eos_token_id)} if tok.eos_token_id is not None else set()
        try:
            gen = GenerationConfig.from_pretrained(path).eos_token_id
            stops |= {int(gen)} if isinstance(gen, int) else {int(g) for g in gen or []}
        except OSError:
            pass
        if not stops:
            raise ValueError(f"[actor_rollout_ref.model.path] {path}: the tokenizer defines no EOS token")
        self.stops = sorted(stops)
        self.pad_id = int(tok.pad_token_id if tok.pad_token_id is not None else self.stops[0])
        prompt_len = int(getattr(config, "prompt_length", 0) or 0)
        self.response_length = int(getattr(config, "response_length", 0) or 0)
        self.max_model_len = int(getattr(config, "max_model_len", 0) or 0) or (
            prompt_len + self.response_length
        )
        base = int(seed if seed is not None else getattr(config, "seed", 0) or 0)
        self.generator = torch.Generator().manual_seed(base * 1000 + self.replica_rank)
        self.global_steps = 0
        self.queue: list[Request] = []
        self.last_arrival = 0.0
        self.batcher: asyncio.Task | None = None
        self.stats = {"requests": 0, "batches": 0, "tokens": 0, "decode_s": 0.0}

    async def ready(self) -> dict[str, Any]:
        """The model's size and the settings in effect (the replica awaits this before serving)."""
        return {
            "params": sum(p.numel() for p in self.model.parameters()),
            "threads": self.threads,
            "stops": self.stops,
            "max_model_len": self.max_model_len,
        }

    # ------------------------------------------------------------------------------ generation
    def _cap(self, prompt: list[int], params: dict[str, Any]) -> int:
        room = self.max_model_len - len(prompt)
        if room < 1:
            raise ValueError(
                f"[data.max_prompt_length] a prompt of {len(prompt)} tokens leaves no room to generate within "
                f"{self.max_model_len} tokens (fix: raise actor_rollout_ref.rollout.max_model_len or shorten prompts)"
            )
        want = params.get("max_tokens", params.get("max_new_tokens"))
        cap = self.response_length if want is None else int(want)
        if self.response_length:
            cap = min(cap, self.response_length)
        return max(1, min(cap, room))

    async def generate(
        self,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        request_id: str = "",
        image_data: Any = None,
        video_data: Any = None,
        audio_data: Any = None,
        **kwargs: Any,
    ) -> Any:
        """veRL's token-in/token-out call: a ``TokenOutput`` for one prompt (see the module docstring)."""
        from verl.workers.rollout.replica import TokenOutput  # veRL's return type; loaded with the server

        if image_data is not None or video_data is not None or audio_data is not None:
            raise ValueError("[data] the CPU rollout backend serves text only (multi-modal data was sent)")
        prompt = [int(t) for t in prompt_ids]
        params = dict(sampling_params)
        if params.get("prompt_logprobs") is not None:
            return TokenOutput(
                token_ids=[],
                stop_reason="completed",
                num_preempted=0,
                extra_fields={
                    **self._prompt_logprobs(prompt, int(params["prompt_logprobs"])),
                    **self._extra(),
                },
            )
        req = Request(
            prompt,
            self._cap(prompt, params),
            sampling_key(params),
            asyncio.get_running_loop().create_future(),
        )
        self.queue.append(req)
        self.last_arrival = time.monotonic()
        if (
            self.batcher is None
            or self.batcher.done()
            or self.batcher.get_loop() is not asyncio.get_running_loop()
        ):
            self.batcher = asyncio.create_task(self._serve())
        tokens, logps, stop = await req.done
        return TokenOutput(
            token_ids=tokens,
            log_probs=logps if params.get("logprobs") else None,
            stop_reason=stop,
            num_preempted=0,
            extra_fields=self._extra(),
        )

    def _extra(self) -> dict[str, Any]:
        # veRL casts these with np.array(..., dtype=int) (verl/trainer/ppo/v1/trainer_base.py:1897)
        return {"global_steps": int(self.global_steps)}

    async def _serve(self) -> None:
        """Gather requests until the queue is quiet, decode them, repeat while any are queued."""
        while self.queue:
            start = time.monotonic()
            while time.monotonic() - self.last_arrival < GATHER_S and time.monotonic() - start < GATHER_MAX_S:
                await asyncio.sleep(GATHER_S / 5)
            batch, self.queue = self.queue, []
            groups: dict[tuple, list[Request]] = defaultdict(list)
            for r in batch:
                groups[r.key].append(r)
            for key, reqs in groups.items():
                try:
                    outs = await asyncio.to_thread(self._decode, key, reqs)
                except Exception as e:  # noqa: BLE001 - handed to every waiting caller
                    for r in reqs:
                        if not r.done.done():
                            r.done.set_exception(e)
                    continue
                for r, out in zip(reqs, outs, strict=True):
                    if not r.done.done():
                        r.done.set_result(out)

    def _decode(
        self, key: tuple[float, float, int], reqs: list[Request]
    ) -> list[tuple[list[int], list[float], str]]:
        """One batch through :func:`core.sampler.generate`; per request (tokens, log-probs, stop reason)."""
        from core.sampler import generate  # torch: loaded with the server

        temp, top_p, top_k = key
        t0 = time.perf_counter()
        uniq: dict[tuple[int, ...], list[int]] = {}
        for i, r in enumerate(reqs):
            uniq.setdefault(tuple(r.prompt), []).append(i)
        sizes = {len(v) for v in uniq.values()}
        if len(sizes) == 1:  # every prompt asked the same number of times: share each prompt's prefill
            n, prompts, order = sizes.pop(), [list(p) for p in uniq], [i for v in uniq.values() for i in v]
        else:
            n, prompts, order = 1, [r.prompt for r in reqs], list(range(len(reqs)))
        with torch.inference_mode():
            out = generate(
                self.model,
                prompts,
                n=n,
                max_new_tokens=max(r.max_tokens for r in reqs),
                eos_id=self.stops,
                pad_id=self.pad_id,
                temperature=temp if temp > 0 else 1.0,
                top_p=top_p,
                top_k=top_k,
                do_sample=temp > 0,
                generator=self.generator,
            )
        results: list[Any] = [None] * len(reqs)
        for row, i in enumerate(order):
            length = int(out.response_mask[row].sum())
            cap = reqs[i].max_tokens
            tokens = out.responses[row, : min(length, cap)].tolist()
            logps = out.old_log_probs[row, : len(tokens)].tolist()
            ended = bool(tokens) and tokens[-1] in self.stops
            results[i] = (tokens, logps, "completed" if ended else "length")
        self.stats["requests"] += len(reqs)
        self.stats["batches"] += 1
        self.stats["tokens"] += sum(len(r[0]) for r in results)
        self.stats["decode_s"] += time.perf_counter() - t0
        return results

    def _prompt_logprobs(self, prompt: list[int], k: int) -> dict[str, list[list[Any]]]:
        """vLLM's ``prompt_logprobs`` layout (``verl/workers/rollout/vllm_rollout/utils.py:540``): for each
        prompt token after the first, its log-prob (k=0) or the top-k ids and log-probs; then one dummy row."""
        with torch.inference_mode():
            ids = torch.tensor([prompt])
            logits = self.model(input_ids=ids).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        if k == 0:
            got = logp.gather(-1, ids[0, 1:, None])
            lps, tids = got.tolist(), ids[0, 1:, None].tolist()
        else:
            top = torch.topk(logp, k, dim=-1)
            lps, tids = top.values.tolist(), top.indices.tolist()
        width = max(k, 1)
        return {"prompt_ids": [*tids, [0] * width], "prompt_logprobs": [*lps, [0.0] * width]}

    # ------------------------------------------------------------------------------ weights
    async def update_weights(
        self,
        state: dict[str, torch.Tensor],
        global_steps: int | None = None,
        peft_config: Any = None,
        base_sync_done: bool = True,
    ) -> int:
        """Load the actor's parameters (names as in the HF model), or with ``peft_config`` a LoRA adapter
        (:mod:`verl_cpu.lora`); returns how many tensors were loaded. Refuses a full state that shares no
        name with the model or leaves a parameter out."""
        if peft_config is not None and base_sync_done:
            from verl_cpu.lora import apply_adapter  # peft: a LoRA run only

            loaded = apply_adapter(self.model, peft_config, state)
        else:
            loaded = self._load_full(state)
        if global_steps is not None:
            self.global_steps = int(global_steps)
        return loaded

    def _load_full(self, state: dict[str, torch.Tensor]) -> int:
        from verl_cpu.lora import own_name  # names only (the base weights of a LoRA model)

        own = dict(self.model.named_parameters())
        names = set(self.model.state_dict())
        state = {own_name(n, names): t for n, t in state.items()}
        unknown = sorted(set(state) - names)
        missing = sorted(
            n
            for n in own
            if n not in state and not self._tied(n) and ".lora_A." not in n and ".lora_B." not in n
        )
        if unknown or missing:
            raise ValueError(
                f"[verl_cpu] weight sync: {len(unknown)} names the rollout model lacks {unknown[:3]}, "
                f"{len(missing)} of its parameters not sent {missing[:3]}"
            )
        with torch.no_grad():
            self.model.load_state_dict(state, strict=False)
        return len(state)

    def _tied(self, name: str) -> bool:
        return name == "lm_head.weight" and bool(getattr(self.model.config, "tie_word_embeddings", False))

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = int(global_steps)

    async def get_stats(self) -> dict[str, Any]:
        """Requests, batches, tokens and decode seconds served so far."""
        return dict(self.stats)

    # ------------------------------------------------------------------------------ lifecycle
    # The CPU keeps weights and caches in RAM: what a GPU server frees and restores is a no-op here.
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

    async def start_profile(self, **kwargs: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None

    async def wait_for_requests_to_drain(self) -> None:
        while self.queue or (self.batcher is not None and not self.batcher.done()):
            await asyncio.sleep(0.01)

    async def abort_all_requests(
        self, reset_prefix_cache: bool = True, reject_request: bool = False
    ) -> dict[str, Any]:
        await self.wait_for_requests_to_drain()
        return {"aborted": 0}

    async def abort_request(self, request_id: str, reset_prefix_cache: bool = True) -> dict[str, Any]:
        return {"aborted": 0}

    async def resume_generation(self) -> None:
        return None
