"""Gradient checkpointing's cost on a CPU: one training micro-batch of SmolLM2-135M, with and without.

veRL's default (``actor_rollout_ref.model.enable_gradient_checkpointing: true``) recomputes each layer's
forward in the backward pass (``gradient_checkpointing_enable(use_reentrant=False)``,
``verl/workers/engine/fsdp/transformer_impl.py:336``); ``recipes.launch_cpu`` turns it off on a CPU.
This measures that cut side by side in one process: per round, the same micro-batch (``rows`` x
``tokens`` of random token ids; the response half's log-probs taken as veRL's loss takes them) forward
and backward with checkpointing off and on, the order alternating per round, at ``threads`` torch
threads. Medians over ``rounds`` and their ratio (on / off).

Recorded in ``results/bench_recompute/latest.json`` (``core.results``). A Hydra app
(``conf/command/bench_recompute.yaml``)::

    python -m benchmarks.bench_recompute [rows=4] [tokens=224] [rounds=5] [threads=1]

Not measured: veRL's whole update (its optimizer step and dispatch are the same either way), a GPU.
Needs ``make real-model``.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from omegaconf import DictConfig

from core import results
from core.cli import hydra_main


def _step(model: Any, ids: Any, recompute: bool) -> float:
    """One forward and backward of the micro-batch; its seconds."""
    import torch  # loaded by the caller already

    if recompute:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_disable()
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    logits = model(input_ids=ids).logits[:, ids.shape[1] // 2 - 1 : -1]
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, ids.shape[1] // 2 :, None])
    (-logp.mean()).backward()
    return time.perf_counter() - t0


def command(a: DictConfig) -> int:
    """Alternate the two arms ``rounds`` times, print and record the medians and their ratio."""
    import torch  # ~3 s: only when the benchmark runs
    from transformers import AutoModelForCausalLM  # see above

    from core import real_model  # the registry model, converted once into the cache

    torch.set_num_threads(int(a.threads))
    torch.manual_seed(0)
    path = real_model.ensure("smollm2_135m")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    model.train()
    ids = torch.randint(0, model.config.vocab_size, (int(a.rows), int(a.tokens)))
    _step(model, ids, False)  # warm-up
    times: dict[str, list[float]] = {"off": [], "on": []}
    load0 = os.getloadavg()
    for r in range(int(a.rounds)):
        for arm in ("off", "on") if r % 2 == 0 else ("on", "off"):
            times[arm].append(_step(model, ids, arm == "on"))
            print(f"[round {r + 1}] checkpointing {arm}: {times[arm][-1]:.2f} s")
    med = {arm: statistics.median(v) for arm, v in times.items()}
    ratio = med["on"] / med["off"]
    print(f"median: off {med['off']:.2f} s, on {med['on']:.2f} s: on / off = {ratio:.3f}")
    payload = {
        "settings": {k: int(a[k]) for k in ("rows", "tokens", "rounds", "threads")},
        "model": str(path),
        "seconds": times,
        "median_s": med,
        "on_over_off": ratio,
        "load_avg": {"before": list(load0), "after": list(os.getloadavg())},
    }
    print(f"recorded {results.write_table('bench_recompute', 'latest', payload)}")
    return 0


main = hydra_main("command", "bench_recompute", command)

if __name__ == "__main__":
    main()
