"""Model-based fallback: a second opinion for responses the rules refused, and a log of its flips.

What it does: ``compute_score(..., judge=...)`` calls ``second_opinion`` only when the rule verifier
said no (never to take credit away, never for the code / puzzle sources whose checks are exact).
The judge sees the gold and the response's final part and answers yes/no; a "yes" credits the
response with reason ``"judge: credited (rule: <rule reason>)"``. ``STATS`` counts how often it was
asked and how often it flipped a verdict (also logged on the ``rewards.judge`` logger), so a run can
report the judge's share of the reward.

Judges: any object with ``judge(gold: str, response: str) -> bool``, or a registered name with an
argument: ``"hf:<dir>"`` loads a Hugging Face causal LM from a local directory (``HFJudge``: one
forward pass: the logit of " yes" against " no" after a fixed prompt). On GPU the same prompt
belongs in veRL's reward-model path (a generative judge served next to the policy); that composition
is not part of this module.

What it does not do: decide anything the rules credited, batch calls, show the judge the question
(the prompt holds the gold and the response's last ``MAX_RESPONSE_CHARS`` characters only), or make a
small model a good judge -- a judge's own error rate has to be measured before it is trusted (a model
judge can be talked into "yes": "Pitfalls of rule- and model-based verifiers").

**Not measured.** No judge model's verdicts have been measured against real labels in this
repository: no results file holds a judge's false-positive or false-negative rate. What is tested
(``tests/rewards/test_rewards_judge.py``) is the wiring only, with hand-set tiny models whose verdict is
known in advance: a " yes" model credits, a " no" model refuses, the prompt sent holds the gold and the
response's end, and no rule-credited case reaches the judge. Turning a judge on changes the reward by
an amount nobody has measured; count its flips (``STATS``) and check them before trusting a run.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache
from typing import Any, Protocol

from core.registry import Registry

LOG = logging.getLogger("rewards.judge")
STATS = {"asked": 0, "flipped": 0}
_LOCK = threading.Lock()
JUDGE_SOURCES = frozenset({"math", "gsm8k", "overtime_pay", "arithmetic"})
PROMPT = (
    "Decide whether the response's final answer is mathematically equivalent to the reference answer.\n"
    "Reference answer: {gold}\nResponse (end): {response}\nEquivalent (yes or no)?"
)
MAX_RESPONSE_CHARS = 2000


class Judge(Protocol):
    def judge(self, gold: str, response: str) -> bool: ...


JUDGES: Registry[Any] = Registry("reward judge")


class HFJudge:
    """A local Hugging Face causal LM as a yes/no judge (one forward pass, no sampling)."""

    def __init__(self, path: str) -> None:
        import torch  # optional: torch/transformers only for a judge model
        from transformers import (
            AutoModelForCausalLM,
            AutoTokenizer,
        )  # optional: torch/transformers only for a judge model

        self.tok = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        ya = self.tok.encode(" yes", add_special_tokens=False)
        na = self.tok.encode(" no", add_special_tokens=False)
        k = next((i for i, (a, b) in enumerate(zip(ya, na, strict=False)) if a != b), None)
        if k is None:
            raise ValueError(f"[judge] tokenizer at {path} cannot tell ' yes' from ' no'")
        self.prefix, self.yes, self.no = (
            ya[:k],
            ya[k],
            na[k],
        )  # shared tokens (a byte-level space), then the choice

    def logits(self, gold: str, response: str) -> tuple[float, float]:
        """(logit of " yes", logit of " no") for the next token after the prompt."""
        import torch  # optional: torch/transformers only for a judge model

        text = PROMPT.format(gold=gold, response=response[-MAX_RESPONSE_CHARS:])
        ids = torch.tensor([self.tok.encode(text, add_special_tokens=False) + self.prefix])
        with torch.no_grad():
            last = self.model(input_ids=ids).logits[0, -1]
        return float(last[self.yes]), float(last[self.no])

    def judge(self, gold: str, response: str) -> bool:
        y, n = self.logits(gold, response)
        return y > n


@lru_cache(maxsize=4)
def _load_hf(path: str) -> HFJudge:
    return HFJudge(path)


JUDGES.add("hf", _load_hf)


def resolve_judge(spec: Any) -> Judge:
    """A judge object from ``spec``: an object with ``judge``, or ``"<name>:<argument>"`` (e.g. ``"hf:/ckpt"``)."""
    if hasattr(spec, "judge"):
        return spec
    if isinstance(spec, str) and ":" in spec:
        name, _, arg = spec.partition(":")
        return JUDGES.get(name)(arg)
    raise ValueError(
        f"[reward.custom_reward_function.reward_kwargs] judge ({spec!r}) must be '<name>:<argument>' "
        f"with name in {JUDGES.names()} (e.g. 'hf:/path/to/model') or an object with a judge() method"
    )


def second_opinion(
    spec: Any, source: str, text: str, ground_truth: Any, info: dict[str, Any], res: dict[str, Any]
) -> dict[str, Any]:
    """Ask the judge about a response the rules refused; count and log a flip."""
    if source not in JUDGE_SOURCES:
        return res
    judge = resolve_judge(spec)
    verdict = bool(judge.judge(str(ground_truth), text))
    with _LOCK:
        STATS["asked"] += 1
        STATS["flipped"] += verdict
        asked, flipped = STATS["asked"], STATS["flipped"]
    if verdict:
        LOG.info("judge flipped a verdict (%d of %d asked): rule said %r", flipped, asked, res.get("reason"))
        return {**res, "acc": True, "reason": f"judge: credited (rule: {res.get('reason', '')})"[:300]}
    return res
