"""Typed schemas of the composed config: the project's ``rlvr.*`` and ``local.*``, and veRL's own.

- :class:`RlvrConfig` and :class:`LocalConfig` (with :class:`core.model.ModelSpec`,
  :class:`SftConfig`, :class:`TaskConfig` and :class:`core.sweeps.SweepSpec`) are the contract of
  the project's sections. Their values live in the YAML (``conf/config.yaml`` holds every
  default, documented above each field); the dataclasses hold types and meaning only.
  :func:`schema_errors` rejects an unknown key by its full name (listing the known ones), a
  missing key and a value of the wrong type; :func:`local_config` returns the typed ``local``
  section the engine reads.
- :func:`type_errors` checks every node that carries a veRL ``_target_`` dataclass against that
  dataclass's field annotations: veRL instantiates its config dataclasses without checking types
  (``clip_ratio_high=abc`` or ``use_kl_loss=maybe`` are accepted and fail, or silently
  misbehave, much later). Unknown keys there are veRL's to reject (its dataclass conversion).
``None`` is accepted for any veRL field (many are typed ``int`` with a ``None`` default);
annotations that cannot be parsed are skipped, not guessed.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from omegaconf import DictConfig, ListConfig, OmegaConf

from core.model import ModelSpec
from core.sweeps import SweepSpec


@dataclass
class SftConfig:
    """``local.sft``: the cold-start SFT of the local engine (see ``recipes.local.coldstart``)."""

    seed: int
    lr: float
    betas: list[float]
    warmup_steps: int
    batch_size: int
    eval_every: int
    eval_n: int
    min_pass: float
    max_steps: int
    untagged_answer_rate: float


@dataclass
class CorpusConfig:
    """``local.pretrain.corpus``: the designed corpus (``data_pipelines.corpus.build_corpus``)."""

    n: int
    mix: dict[str, float]
    params: dict[str, Any]


@dataclass
class PretrainConfig:
    """``local.pretrain``: the laptop base model's pretraining (see ``recipes.local.pretrain``)."""

    seed: int
    tokenizer: str
    corpus: CorpusConfig
    steps: int
    batch_size: int
    chunks: int
    lr: float
    betas: list[float]
    warmup_steps: int
    probe_prompts: int
    probe_n: int


@dataclass
class TaskConfig:
    """``local.task``: the registered generator that writes missing data files."""

    name: str
    train_n: int
    val_n: int
    seed: int
    params: dict[str, Any]


@dataclass
class TeacherConfig:
    """``local.teacher``: the laptop teacher of on-policy distillation (see ``recipes.local.teacher``)."""

    recipe: str
    scale: str
    steps: int
    test_freq: int
    overrides: list[str]


@dataclass
class LocalConfig:
    """``local``: knobs of the local CPU engine only (veRL never sees them)."""

    threads: int
    eval_samples: int
    shuffle_rewards: bool
    progress: bool
    fast: bool
    model: ModelSpec
    sft: SftConfig
    task: TaskConfig | None
    pretrain: PretrainConfig | None = None
    micro_batch_tokens: int = 0
    teacher: TeacherConfig | None = None


@dataclass
class RlvrConfig:
    """``rlvr``: the project's own keys of a recipe."""

    recipe: str
    scale: str | None
    laptop_scale: str
    model_laptop_scale: str | None
    seed: int
    ref_reset_steps: int | None
    overlong_buffer_len: int
    sources: dict[str, str]
    deviations: dict[str, str]
    sweep: SweepSpec | None


SCHEMAS: dict[str, type] = {"rlvr": RlvrConfig, "local": LocalConfig}


def _ok(value: Any, tp: Any) -> bool:
    """Whether ``value`` (a plain Python value) fits annotation ``tp``; unknown -> True."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return any(_ok(value, a) for a in typing.get_args(tp))
    if value is None:
        return tp is type(None)
    if origin is typing.Literal:
        return value in typing.get_args(tp)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        return isinstance(value, (list, tuple, ListConfig))
    if origin is dict or tp is dict:
        return isinstance(value, (dict, DictConfig))
    return True


def _name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def _dataclass_of(tp: Any) -> type | None:
    """The dataclass ``tp`` is (``X`` or ``Optional[X]``), else None (``list[X]`` is not one)."""
    union = typing.get_origin(tp) in (Union, types.UnionType)
    for t in (tp, *(typing.get_args(tp) if union else ())):
        if dataclasses.is_dataclass(t):
            return t  # type: ignore[return-value]
    return None


def _item_dataclass_of(tp: Any) -> type | None:
    """The dataclass ``X`` of a ``list[X]`` annotation, else None."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is list and len(args) == 1 and dataclasses.is_dataclass(args[0]):
        return args[0]  # type: ignore[return-value]
    return None


def _value(node: DictConfig, key: Any) -> tuple[bool, Any]:
    """(resolvable, value) of ``node[key]``; missing (``???``) or broken interpolations are skipped."""
    child = node._get_node(key)
    if child is None or child._is_missing():
        return False, None
    try:
        return True, node[key]
    except Exception:  # noqa: BLE001 - an interpolation that does not resolve: not ours to judge here
        return False, None


def schema_errors(node: Any, cls: type, prefix: str) -> list[str]:
    """Every unknown key, missing key and mistyped value of ``node`` against dataclass ``cls``.

    >>> schema_errors(OmegaConf.create({"lr": "x"}), SftConfig, "local.sft")[:2]
    ['[local.sft.seed] missing; fix: set it (local.sft is typed by SftConfig)', "[local.sft.lr] expected float, got 'x' (str)"]
    """
    if not isinstance(node, DictConfig):
        return [f"[{prefix}] expected a mapping ({cls.__name__}), got {node!r}"]
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    errs = [
        f"[{prefix}.{k}] unknown key; known: {', '.join(sorted(fields))}" for k in node if k not in fields
    ]
    for name, f in fields.items():
        full = f"{prefix}.{name}"
        if name not in node:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                errs.append(f"[{full}] missing; fix: set it ({prefix} is typed by {cls.__name__})")
            continue
        ok, value = _value(node, name)
        if not ok:
            continue
        sub, item = _dataclass_of(hints[name]), _item_dataclass_of(hints[name])
        if item is not None and isinstance(value, ListConfig):
            for i, v in enumerate(value):
                errs += schema_errors(v, item, f"{full}[{i}]")
        elif sub is not None and isinstance(value, DictConfig):
            errs += schema_errors(value, sub, full)
        elif sub is not None and value is not None:
            errs.append(f"[{full}] expected a mapping ({sub.__name__}), got {value!r}")
        elif not _ok(value, hints[name]):
            errs.append(f"[{full}] expected {_name(hints[name])}, got {value!r} ({type(value).__name__})")
    return errs


def _load(target: str) -> type | None:
    module, _, name = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return obj if dataclasses.is_dataclass(obj) else None


def type_errors(cfg: DictConfig, prefix: str = "") -> list[str]:
    """Every ``[full.key] expected T, got V`` mismatch below ``cfg`` against veRL's dataclasses."""
    errors: list[str] = []
    cls = _load(str(cfg.get("_target_"))) if "_target_" in cfg else None
    hints: dict[str, Any] = {}
    if cls is not None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # noqa: BLE001 - forward refs we cannot resolve: skip, don't guess
            hints = {}
    for key in cfg.keys():
        full = f"{prefix}.{key}" if prefix else str(key)
        ok, value = _value(cfg, key)
        if not ok or full in SCHEMAS:
            continue
        if isinstance(value, DictConfig):
            errors.extend(type_errors(value, full))
        elif key in hints and value is not None and not _ok(value, hints[key]):
            errors.append(f"[{full}] expected {_name(hints[key])}, got {value!r} ({type(value).__name__})")
    return errors


#: The sections veRL turns into its dataclasses (``omega_conf_to_dataclass``, recursively): a key that
#: is no field of the node's ``_target_`` there is a ``TypeError`` at launch. Other ``_target_`` nodes
#: (the reference, the reward, the profiler) are read as mappings and take extra keys.
INSTANTIATED = ("algorithm", "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "critic")


def _fields_of(node: Any) -> list[str] | None:
    """Field names of the dataclass a node's ``_target_`` names; None when it names none."""
    cls = _load(str(node.get("_target_"))) if isinstance(node, DictConfig) and "_target_" in node else None
    return None if cls is None else [f.name for f in dataclasses.fields(cls)]


def _strict(full: str) -> bool:
    return any(full == r or full.startswith(r + ".") for r in INSTANTIATED)


def unknown_field_errors(cfg: DictConfig, prefix: str = "") -> list[str]:
    """``[full.key] unknown key ...; did you mean ...; fix: ...`` for every key veRL would refuse with
    a ``TypeError`` (no field of its section's dataclass, in a section veRL instantiates), e.g. one
    added with ``+``: ``+actor_rollout_ref.actor.clip_ratio_hgh=0.3``."""
    errors: list[str] = []
    fields = _fields_of(cfg) if _strict(prefix) else None
    for key in cfg.keys():
        full = f"{prefix}.{key}" if prefix else str(key)
        if fields is not None and key != "_target_" and key not in fields:
            cls = str(cfg.get("_target_")).rpartition(".")[2]
            hits = difflib.get_close_matches(str(key), fields, 1, cutoff=0.75)
            value = cfg._get_node(key)._value()
            hint = (
                f"; did you mean {prefix}.{hits[0]}? fix: {prefix}.{hits[0]}={value}"
                if hits
                else (
                    f"; fix: remove it (its fields: {', '.join(sorted(f for f in fields if f != '_target_'))})"
                )
            )
            errors.append(
                f"[{full}] unknown key: veRL's {cls} has no field {key!r} and would refuse it{hint}"
            )
            continue
        child = cfg._get_node(key)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            errors.extend(unknown_field_errors(child, full))
    return errors


def _schema_type(key: str) -> Any:
    """The annotation of a project key (``rlvr.*``, ``local.*``) from :data:`SCHEMAS`, else None."""
    head, _, rest = key.partition(".")
    tp: Any = SCHEMAS.get(head)
    for part in rest.split(".") if rest else []:
        cls = _dataclass_of(tp)
        if cls is None:
            return dict if (tp is dict or typing.get_origin(tp) is dict) else None
        tp = typing.get_type_hints(cls).get(part)
        if tp is None:
            return None
    return tp


def accepts_extra(cfg: DictConfig, key: str) -> bool:
    """Whether ``+key=...`` would be accepted by the whole stack: its section exists and is a free
    mapping (no project schema dataclass, and no veRL dataclass veRL instantiates).

    >>> from omegaconf import OmegaConf
    >>> accepts_extra(OmegaConf.create({"rlvr": {"sources": {}}}), "rlvr.sources.x")
    True
    >>> accepts_extra(OmegaConf.create({"rlvr": {"sources": {}}}), "rlvr.sourcez")
    False
    """
    parent = key.rpartition(".")[0]
    if not parent or not isinstance(OmegaConf.select(cfg, parent, default=None), DictConfig):
        return False
    if parent.split(".")[0] in SCHEMAS:
        tp = _schema_type(parent)
        return tp is not None and _dataclass_of(tp) is None
    node = OmegaConf.select(cfg, parent)
    return not (_strict(parent) and _fields_of(node) is not None)


def project_errors(cfg: DictConfig) -> list[str]:
    """:func:`schema_errors` of every project section present in ``cfg`` (``rlvr``, ``local``)."""
    return [e for key, cls in SCHEMAS.items() if key in cfg for e in schema_errors(cfg[key], cls, key)]


def local_config(cfg: DictConfig) -> LocalConfig:
    """The typed ``local`` section (resolved); raises ``ValueError`` listing every schema error."""
    errs = schema_errors(cfg.local, LocalConfig, "local")
    if errs:
        raise ValueError("invalid local section:\n  " + "\n  ".join(errs))
    d = OmegaConf.to_container(cfg.local, resolve=True)
    task = d.pop("task")
    pre = d.pop("pretrain", None)
    teacher = d.pop("teacher", None)
    return LocalConfig(
        **{k: v for k, v in d.items() if k not in ("model", "sft")},
        pretrain=None if pre is None else PretrainConfig(**{**pre, "corpus": CorpusConfig(**pre["corpus"])}),
        model=ModelSpec(**d["model"]),
        sft=SftConfig(**d["sft"]),
        task=None if task is None else TaskConfig(**task),
        teacher=None if teacher is None else TeacherConfig(**teacher),
    )
