"""The reward function of a learned-reward run: the reward model's score as the reward, the verifier's accuracy as the gold.

``reward_model=orm`` / ``reward_model=prm`` point ``reward.custom_reward_function`` here. veRL 0.9.1
calls a custom reward function *instead of* its reward model, and hands it the reward model's
router (``reward_router_address``, ``reward_model_tokenizer``) when ``reward.reward_model.enable``
is on. :func:`compute_score` then

- grades the response with the project's verifier (``rewards.compute_score`` with the verifier
  group's ``reward_kwargs``): its ``acc`` is the gold accuracy every report reads;
- on veRL (a router address given): asks the reward-model server for its score with the request
  veRL's own discriminative path sends (``/classify`` on the chat-templated prompt + response,
  ``RewardLoopWorker.compute_score_disrm``), with the activation on (the project's reward models
  are 2-way classifiers, read as ``P(good)``: the softmax's last entry), and returns it as
  ``score`` -- the proxy reward;
- on the local engine (no router): returns the verifier's result; the engine's hook
  (``recipes.local.rm_reward``) replaces the score by the reward model's reading in one batch.

Every result carries the same keys (veRL stacks them across a batch): the verifier's keys plus
``rm_score`` and ``verifier_score``. On a CPU the reward-model server is :mod:`verl_cpu.reward_model`;
not executed with a GPU server (vLLM): that path is composed and validated by dry runs only.
"""

from __future__ import annotations

import json
import math
import urllib.request
from typing import Any

import rewards


def _classify(address: str, model: str, text: str, timeout: float = 60.0) -> float:
    """POST veRL's discriminative-RM request to the router and read the score as veRL does."""
    body = json.dumps({"model": model, "input": text, "use_activation": True}).encode()
    req = urllib.request.Request(f"http://{address}/classify", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the run's own router
        out = json.loads(resp.read())
    return float(out["data"][-1]["probs"][-1])


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    reward_router_address: str | None = None,
    reward_model_tokenizer: Any = None,
    reward_model_path: str | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The verifier's result, with ``score`` replaced by the reward model's when a router is given.

    >>> r = compute_score("arithmetic", "<think>1+1+0=02</think><answer>2</answer>", "2", {})
    >>> r["acc"], r["score"] == r["verifier_score"], math.isnan(r["rm_score"])
    (True, True, True)
    """
    gold = rewards.compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
    out = {**gold, "verifier_score": float(gold["score"]), "rm_score": float("nan")}
    if reward_router_address is None:
        return out
    question = (extra_info or {}).get("question", "")
    chat = [{"role": "user", "content": question}, {"role": "assistant", "content": solution_str}]
    text = reward_model_tokenizer.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
    bos = reward_model_tokenizer.bos_token
    if bos and text.startswith(bos):
        text = text[len(bos) :]
    out["rm_score"] = _classify(reward_router_address, str(reward_model_path or ""), text)
    out["score"] = out["rm_score"] if math.isfinite(out["rm_score"]) else 0.0
    return out
