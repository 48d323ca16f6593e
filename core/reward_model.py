"""Discriminative reward models on disk: a token-classification head on the policy's backbone.

The form seed 004 §8 gives ORMs and PRMs: a causal LM whose LM head is replaced by a 2-way token
classifier (``AutoModelForTokenClassification``, e.g. ``Qwen2ForTokenClassification``), trained
with cross-entropy on labelled positions only (label ``-100`` elsewhere -- ``transformers``' own
token-classification loss). An ORM labels every response token with the outcome; a PRM labels
the last token of each step. The score of a position is ``P(label = 1)``.

- :func:`build` -- a new reward model from any HF causal-LM checkpoint directory (its backbone
  weights, a fresh 2-way head); :func:`save` / :func:`load` -- a standard HF checkpoint
  directory plus ``rlvr_rm.json`` (kind, step format, label source, vocabulary fingerprint, how
  it was trained). :func:`check_vocab` refuses a reward model whose vocabulary is not the
  policy's, naming the key and the fix. :func:`installed` is where ``make rm`` puts a reward model
  by default and ``reward_model=orm|prm`` reads it (``$RLVR_CACHE/rm/<kind>``); :func:`resolve`
  reads a kind name as that place and anything else as a directory.
- :func:`encode` -- a response text as token ids (+ EOS) with the character offset where each
  token ends; :func:`boundary_tokens` -- the token holding each step's last character.
- :func:`token_probs` -- ``P(good)`` at every response token for a batch of (prompt ids,
  response ids), right-padded so positions need no correction.
- :data:`AGGREGATIONS` -- a response's score from its token probabilities and step boundaries:
  ``last`` (the ORM reading: the last token), ``min_step`` and ``last_step`` (PRM readings), and
  ``mean_step``. With no step boundaries every PRM reading falls back to the last token.
Not covered: pairwise (Bradley-Terry) reward models, generative judges, serving (vLLM/SGLang).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from core.env import cache_root
from core.registry import Registry

META = "rlvr_rm.json"
KINDS = ("orm", "prm")
IGNORE = -100


@dataclass
class RMInfo:
    """What ``rlvr_rm.json`` records about a reward model (everything a scorer needs to read it)."""

    kind: str
    vocab: str
    step_format: str | None = None
    labels: str = "outcome"
    base_model: str = ""
    training: dict[str, Any] = field(default_factory=dict)


@dataclass
class RewardModel:
    """A loaded reward model: the token classifier, its tokenizer and its :class:`RMInfo`."""

    model: torch.nn.Module
    tokenizer: Any
    info: RMInfo
    path: Path | None = None


def vocab_fingerprint(tokenizer: Any) -> str:
    """A hash of the tokenizer's vocabulary (token -> id, added tokens included)."""
    blob = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def build(base: str | Path, kind: str, seed: int = 0) -> RewardModel:
    """A reward model on the backbone of the causal LM at ``base`` (fresh 2-way head, seeded)."""
    from transformers import AutoModelForTokenClassification  # ~2 s with torch: only building needs it
    from verl.utils import hf_tokenizer  # ~10 s (veRL): only loading needs it

    if kind not in KINDS:
        raise ValueError(f"[rm] kind={kind!r}; fix: one of {', '.join(KINDS)}")
    torch.manual_seed(seed)
    model = AutoModelForTokenClassification.from_pretrained(
        str(base), num_labels=2, id2label={0: "bad", 1: "good"}, label2id={"bad": 0, "good": 1}
    )
    model.config.classifier_dropout = 0.0
    model.dropout.p = 0.0
    tok = hf_tokenizer(str(base))
    return RewardModel(
        model.float(), tok, RMInfo(kind=kind, vocab=vocab_fingerprint(tok), base_model=str(base))
    )


def save(rm: RewardModel, path: str | Path) -> Path:
    """Write the HF checkpoint directory and ``rlvr_rm.json`` (atomically: a temp dir, then rename)."""
    import shutil  # only save() needs it

    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rm.model.save_pretrained(str(tmp))
    rm.tokenizer.save_pretrained(str(tmp))
    (tmp / META).write_text(json.dumps(asdict(rm.info), indent=1, default=str) + "\n")
    shutil.rmtree(path, ignore_errors=True)
    tmp.rename(path)
    rm.path = path
    return path


def installed(kind: str) -> Path:
    """Where ``make rm KIND=<kind>`` installs by default and ``reward_model=<kind>`` reads (``conf/reward_model/``)."""
    return cache_root() / "rm" / kind


def resolve(spec: str | Path) -> Path:
    """A reward model given as a kind (``orm``/``prm``: the installed one) or as a directory.

    >>> resolve("prm") == installed("prm"), resolve("reports/rm_prm")
    (True, PosixPath('reports/rm_prm'))
    """
    return installed(str(spec)) if str(spec) in KINDS else Path(str(spec)).expanduser()


def load(path: str | Path, key: str = "reward.reward_model.model_path") -> RewardModel:
    """A reward model directory written by :func:`save` (``key`` names the config key in errors)."""
    from transformers import AutoModelForTokenClassification  # ~2 s: see build
    from verl.utils import hf_tokenizer  # ~10 s: see build

    p = resolve(path)
    if not (p / META).is_file():
        raise FileNotFoundError(
            f"[{key}] {p} is not a reward model written by this project (no {META}); fix: train one with "
            "`make rm KIND=orm|prm DATA=<labelled samples> MODEL=<policy checkpoint>`"
        )
    info = RMInfo(**json.loads((p / META).read_text()))
    model = AutoModelForTokenClassification.from_pretrained(str(p), dtype=torch.float32).eval()
    return RewardModel(model, hf_tokenizer(str(p)), info, p)


def check_vocab(rm_info: RMInfo, policy_tokenizer: Any, key: str, policy: str) -> None:
    """Refuse a reward model whose vocabulary is not the policy's (token ids would mean other text)."""
    want = vocab_fingerprint(policy_tokenizer)
    if rm_info.vocab != want:
        raise ValueError(
            f"[{key}] the reward model's tokenizer (vocabulary {rm_info.vocab}) is not the policy's "
            f"({policy}: {want}); it would read other text than the policy wrote. Fix: train the reward "
            f"model on this policy's checkpoint (`make rm MODEL={policy} ...`) or point {key} at one that was"
        )


def encode(tokenizer: Any, text: str, eos: bool = True) -> tuple[list[int], list[int]]:
    """``(ids, ends)``: the response's token ids (+ EOS) and the character offset where each token ends.

    Offsets come from the fast tokenizer's offset mapping; the EOS token ends at ``len(text)``.
    """
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    ends = [int(e) for _, e in enc["offset_mapping"]]
    if eos:
        ids.append(int(tokenizer.eos_token_id))
        ends.append(len(text))
    return ids, ends


def boundary_tokens(ends: Sequence[int], step_ends: Sequence[int]) -> list[int]:
    """For each step ending at character ``e`` (exclusive), the first token whose span reaches ``e``.

    >>> boundary_tokens([1, 2, 4, 5], [2, 3, 5])
    [1, 2, 3]
    """
    out, j = [], 0
    for e in step_ends:
        while j < len(ends) - 1 and ends[j] < e:
            j += 1
        out.append(j)
    return out


@torch.no_grad()
def token_probs(
    rm: RewardModel, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], batch: int = 64
) -> list[torch.Tensor]:
    """``P(good)`` at each response token of each (prompt, response) pair (right padding)."""
    out: list[torch.Tensor] = []
    pad = rm.tokenizer.pad_token_id if rm.tokenizer.pad_token_id is not None else 0
    rm.model.eval()
    for i in range(0, len(prompts), batch):
        seqs = [
            list(p) + list(r) for p, r in zip(prompts[i : i + batch], responses[i : i + batch], strict=True)
        ]
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), int(pad), dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for j, s in enumerate(seqs):
            ids[j, : len(s)] = torch.tensor(s)
            mask[j, : len(s)] = 1
        probs = rm.model(input_ids=ids, attention_mask=mask).logits.float().softmax(-1)[..., 1]
        for j, p in enumerate(prompts[i : i + batch]):
            out.append(probs[j, len(p) : len(seqs[j])].clone())
    return out


Aggregate = Callable[[torch.Tensor, Sequence[int]], float]
AGGREGATIONS: Registry[Aggregate] = Registry("reward-model aggregation")


def _last(p: torch.Tensor, bounds: Sequence[int]) -> float:
    return float(p[-1]) if p.numel() else 0.0


def _steps(p: torch.Tensor, bounds: Sequence[int]) -> torch.Tensor:
    return p[list(bounds)] if bounds else p[-1:]


AGGREGATIONS.add("last", _last)
AGGREGATIONS.add("min_step", lambda p, b: float(_steps(p, b).min()) if p.numel() else 0.0)
AGGREGATIONS.add("last_step", lambda p, b: float(_steps(p, b)[-1]) if p.numel() else 0.0)
AGGREGATIONS.add("mean_step", lambda p, b: float(_steps(p, b).mean()) if p.numel() else 0.0)


def aggregate(name: str, probs: torch.Tensor, bounds: Sequence[int]) -> float:
    """The response score ``AGGREGATIONS[name](probs, bounds)`` (error naming the config key).

    >>> round(aggregate("min_step", torch.tensor([0.9, 0.2, 0.8, 0.7]), [0, 2]), 6)
    0.8
    """
    try:
        fn = AGGREGATIONS.get(name)
    except KeyError as e:
        raise ValueError(f"[rlvr.reward_model.aggregate] {e.args[0]}") from None
    return fn(probs, bounds)
