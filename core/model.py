"""The one model builder: a small Qwen2 built locally (no hub), or any HF causal LM on disk.

- :class:`ModelSpec`: the architecture of a locally built Qwen2 (fp32, tied embeddings; ~1M
  parameters by default). ``ModelSpec.from_dict`` rejects unknown keys by name.
- :data:`TOKENIZERS`: tokenizer builders by name, each returning a ``PreTrainedTokenizerFast``
  with a chat template: ``char`` (printable ASCII one token per character, specials
  ``<|bos|> <|eos|> <|pad|> <|unk|> <|system|> <|user|> <|assistant|>`` and the reasoning tags
  ``<think> </think> <answer> </answer>`` as single *non-special* tokens, so
  ``decode(skip_special_tokens=True)``, which veRL's reward managers use, keeps them) -- the
  laptop engine's tokenizer; ``byte`` (every byte one token, so any text including Chinese,
  ChatML specials and template). A new tokenizer (e.g. one trained on another corpus) is one
  more registered builder.
- :func:`build_model` / :func:`build_checkpoint`: a random-init ``Qwen2ForCausalLM`` for a spec
  and tokenizer, deterministic in ``seed``; :func:`load` / :func:`save`: any HF causal-LM
  checkpoint directory (``AutoModelForCausalLM``, tokenizer through veRL's ``hf_tokenizer``),
  optionally with the weights of a local-engine training state on top (:func:`load_state`);
  :func:`load_tokenizer`: a checkpoint's tokenizer as veRL builds it.
Not covered: downloading from the hub, non-causal models, quantised or sharded loading.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import shutil
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from core.numerics import numerics
from core.registry import Registry

if TYPE_CHECKING:
    import torch

SPECIALS = ["<|pad|>", "<|bos|>", "<|eos|>", "<|unk|>", "<|system|>", "<|user|>", "<|assistant|>"]
TAGS = ["<think>", "</think>", "<answer>", "</answer>"]
CHAT_TEMPLATE = (
    "{{ '<|bos|>' }}{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)
CHATML_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
]
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of a locally built Qwen2 (the laptop model's values: ``local.model`` in
    ``conf/config.yaml``; a pipeline's base models: ``models.<name>.local``).

    Attributes:
        hidden_size: width of the residual stream.
        num_hidden_layers: decoder layers.
        num_attention_heads: query heads.
        num_key_value_heads: key/value heads (grouped-query attention).
        intermediate_size: MLP width.
        max_position_embeddings: longest prompt + response the model is built for.
    """

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    max_position_embeddings: int

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> ModelSpec:
        """The spec from a mapping; unknown or missing keys raise ``ValueError`` naming them.

        >>> ModelSpec.from_dict({"hiden_size": 64})
        Traceback (most recent call last):
        ...
        ValueError: [local.model] unknown keys ['hiden_size'], missing keys ['hidden_size', 'intermediate_size', 'max_position_embeddings', 'num_attention_heads', 'num_hidden_layers', 'num_key_value_heads']
        """
        d = dict(d or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown, missing = sorted(set(d) - names), sorted(names - set(d))
        if unknown or missing:
            raise ValueError(f"[local.model] unknown keys {unknown}, missing keys {missing}")
        return cls(**d)

    def key(self, *extra: Any) -> str:
        """A short stable hash of the spec (and ``extra``), for cache directory names."""
        blob = json.dumps([dataclasses.asdict(self), *extra], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


TOKENIZERS: Registry[Callable[[], Any]] = Registry("tokenizer")


def _byte_level_chars() -> dict[int, str]:
    """GPT-2's byte -> unicode map (the ByteLevel alphabet: space is 'Ġ')."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def _char_fast(vocab_list: list[str], merges: list[tuple[str, str]]) -> Any:
    """A ByteLevel BPE over ``vocab_list`` and ``merges`` with the laptop specials, tags and chat template."""
    from transformers import PreTrainedTokenizerFast  # ~2 s (pulls torch): only building a tokenizer needs it

    vocab = {t: i for i, t in enumerate(vocab_list)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<|unk|>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in SPECIALS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAGS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        unk_token="<|unk|>",
        additional_special_tokens=SPECIALS[4:],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def _printable(bmap: dict[int, str]) -> list[str]:
    return [bmap[ord(c)] for c in string.printable if c not in "\t\n\r\x0b\x0c"]


@TOKENIZERS.register("char")
def char_tokenizer() -> Any:
    """The character tokenizer (pad id 0, eos ``<|eos|>``, left padding).

    A byte-level BPE with single-character vocabulary and no merges: transformers 5 reloads any
    Qwen2 checkpoint's tokenizer as ``Qwen2Tokenizer`` (ByteLevel pre-tokenizer), and this form
    tokenizes identically under both classes (checked in tests/local/test_sampler.py).
    """
    return _char_fast(SPECIALS + TAGS + _printable(_byte_level_chars()), [])


def char_tokenizer_for(extra: str) -> Any:
    """A character tokenizer that also spells ``extra``'s characters as one token each, and any
    other text byte by byte (never ``<|unk|>``).

    The :func:`char_tokenizer` vocabulary (same ids) + the 256 ByteLevel byte symbols + one merge
    chain per multi-byte character of ``extra`` (a 3-byte CJK character: 2 merges), so it stays a
    byte-level BPE that reloads as ``Qwen2Tokenizer``. Merges only join bytes of one character
    (lead byte + continuation bytes), so they never cross a character boundary.
    """
    bmap = _byte_level_chars()
    vocab_list = SPECIALS + TAGS + _printable(bmap)
    vocab_list += [c for c in bmap.values() if c not in set(vocab_list)]
    merges: list[tuple[str, str]] = []
    for ch in sorted(set(extra)):
        spelled = [bmap[b] for b in ch.encode()]
        for i in range(1, len(spelled)):
            left, right = "".join(spelled[:i]), spelled[i]
            if left + right not in vocab_list:
                merges.append((left, right))
                vocab_list.append(left + right)
    return _char_fast(vocab_list, merges)


@TOKENIZERS.register("byte")
def byte_tokenizer() -> Any:
    """256 byte tokens + ChatML specials and the R1 tags, ChatML chat template (any text tokenizes)."""
    from transformers import PreTrainedTokenizerFast  # ~2 s: see char_tokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {t: i for i, t in enumerate(CHATML_SPECIALS + alphabet)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(CHATML_SPECIALS[:3])
    tok.add_tokens(CHATML_SPECIALS[3:])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None
    )
    fast.chat_template = CHATML
    return fast


def build_tokenizer(name: str = "char") -> Any:
    """A registered tokenizer by name (:data:`TOKENIZERS`)."""
    return TOKENIZERS.get(name)()


def build_model(spec: ModelSpec, tokenizer: Any, seed: int) -> torch.nn.Module:
    """A random-init fp32 ``Qwen2ForCausalLM`` for ``spec`` and ``tokenizer``; deterministic in ``seed``."""
    import torch  # ~3 s: specs and tokenizers do not need it (recipes.run --help reads the schema)
    from transformers import Qwen2Config, Qwen2ForCausalLM  # ~2 s, with torch

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        torch_dtype="float32",
        use_cache=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.config.attn_implementation = "sdpa"
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def build_checkpoint(
    path: str | Path,
    spec: ModelSpec,
    tokenizer: str = "char",
    seed: int = 0,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Build a random-init model with a registered tokenizer and save it at ``path`` (atomically)."""
    path = Path(path)
    tok = build_tokenizer(tokenizer)
    tmp = path.with_name(path.name + ".tmp")
    save(build_model(spec, tok, seed), tok, tmp, meta)
    tmp.rename(path)
    return path


def load_tokenizer(path: str | Path, chat_template: str | None = None) -> Any:
    """A checkpoint's tokenizer as veRL builds it (``hf_tokenizer``: a missing pad token becomes EOS;
    ``chat_template`` replaces the saved one, as ``actor_rollout_ref.model.custom_chat_template``
    does), padding on the left."""
    from verl.utils import hf_tokenizer  # ~10 s (veRL): only loading needs it

    tokenizer = hf_tokenizer(str(path))
    if chat_template:
        tokenizer.chat_template = chat_template
    tokenizer.padding_side = "left"
    return tokenizer


def load(
    path: str | Path,
    state_file: str | Path | None = None,
    tokenizer_path: str | Path | None = None,
    chat_template: str | None = None,
) -> tuple[torch.nn.Module, Any]:
    """Any HF causal-LM directory as (fp32 model in eval mode, tokenizer padding on the left).

    The tokenizer (from ``tokenizer_path``, default ``path``) comes through :func:`load_tokenizer`.
    Attention runs with SDPA, or the architecture's eager attention when it has no SDPA kernel.
    With ``state_file`` the ``"model"`` weights of a local-engine training state replace the saved ones.
    """
    import torch  # ~3 s: see build_model
    from transformers import AutoModelForCausalLM  # ~2 s, with torch

    tokenizer = load_tokenizer(tokenizer_path or path, chat_template)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=torch.float32, attn_implementation="sdpa"
        )
    except ValueError as e:  # transformers refuses SDPA for architectures without it
        if "sdpa" not in str(e).lower():
            raise
        model = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=torch.float32, attn_implementation="eager"
        )
    if state_file:
        load_state(model, state_file)
    return model.eval(), tokenizer


def load_state(model: torch.nn.Module, state_file: str | Path) -> None:
    """Load a training-state file's ``"model"`` weights (the local engine's checkpoint format)."""
    import torch  # ~3 s: see build_model

    state = torch.load(state_file, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"] if "model" in state else state)


def save(
    model: torch.nn.Module, tokenizer: Any, path: str | Path, meta: dict[str, Any] | None = None
) -> None:
    """Save as a standard HF checkpoint directory (+ ``rlvr_meta.json`` when ``meta`` is given)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    if meta is not None:
        (path / "rlvr_meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def num_params(model: torch.nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def weights_sha256(path: Path) -> str:
    """sha256 over a checkpoint directory's weight files (``*.safetensors``, ``*.bin``), in name order."""
    h = hashlib.sha256()
    for f in sorted(p for p in Path(path).iterdir() if p.suffix in (".safetensors", ".bin")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def model_key(path: str | Path | None) -> dict[str, Any] | None:
    """What identifies a model the project built: its build key (builder, code hash, settings,
    arithmetic) and the sha256 of its weights, from its ``rlvr_meta.json``; None for a model it did not
    build (no stamp) or no path."""
    meta = Path(str(path or ""), "rlvr_meta.json")
    if not path or not meta.is_file():
        return None
    m = json.loads(meta.read_text())
    return {"build": m.get("build"), "weights_sha256": m.get("weights_sha256")}


def weights_changed(recorded: dict[str, Any] | None, path: str | Path) -> tuple[str, str] | None:
    """When ``path`` no longer holds the model a run recorded (``recorded``: its :func:`model_key` then,
    None for a model not built here): the weights sha256 then and now, 12 hex digits each (``none``:
    no build stamp). None when they are the same."""
    then = (recorded or {}).get("weights_sha256")
    now = (model_key(path) or {}).get("weights_sha256")
    return None if then == now else (str(then or "none")[:12], str(now or "none")[:12])


def builder_of(path: str | Path) -> str | None:
    """The ``builder`` a checkpoint directory's ``rlvr_meta.json`` build stamp names (None: no stamp,
    no builder, or unreadable -- a checkpoint :func:`cached_build` did not write)."""
    meta = Path(path) / "rlvr_meta.json"
    try:
        build = json.loads(meta.read_text()).get("build") if meta.is_file() else None
    except ValueError:
        return None
    return build.get("builder") if isinstance(build, dict) else None


def cached_build(
    path: Path,
    meta: dict[str, Any],
    build: Callable[[Path], dict[str, Any]],
    log: Callable[[str], None] = print,
) -> Path:
    """The checkpoint directory ``path``, built by ``build(tmp_dir) -> info`` unless its
    ``rlvr_meta.json`` records the same ``meta`` (file-locked; built aside, then moved into place).

    ``meta`` is extended with :func:`core.numerics.numerics` (the CPU arithmetic and torch version),
    so a model built under other kernels is rebuilt, and the meta file records ``weights_sha256``."""
    meta = {**meta, "numerics": numerics()}
    meta_file = path / "rlvr_meta.json"

    def cached() -> bool:
        return meta_file.is_file() and json.loads(meta_file.read_text()).get("build") == meta

    if cached():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached():
            return path
        other = builder_of(path)
        if (path / "config.json").is_file() and other != meta.get("builder"):
            # another builder's model (or a user's checkpoint): never replaced by this build
            raise ValueError(
                f"[actor_rollout_ref.model.path] {path} holds a model built by {other or 'someone else'}, not "
                f"by {meta.get('builder')}; building here would replace it. Fix: point "
                "actor_rollout_ref.model.path at another directory (a run uses a model it did not build as "
                "is), or move that model away"
            )
        if meta_file.is_file():
            log(f"[local] {path}: cached model was built from other code or settings; rebuilding")
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        info = build(tmp)
        info = {**info, "weights_sha256": weights_sha256(tmp)}
        (tmp / "rlvr_meta.json").write_text(json.dumps({"build": meta, **info}, indent=2, default=str) + "\n")
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)
    return path
