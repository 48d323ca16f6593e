"""The few places where veRL 0.9.1 assumes CUDA and no config reaches: one :class:`Patch` each.

Every patch names the veRL file and line it works around and why, and pins the code under it:
the sha256 of the patched object's source (:attr:`Patch.sha256`). :func:`apply` refuses to patch
another veRL version or changed code (:class:`PatchMismatch`, naming the patch and what differs),
so an upgrade of veRL stops with one clear error instead of patching blindly;
``tests/verl_cpu/test_patches.py`` fails when the code under a patch changes. A patch whose
module is not imported yet is applied when it is (:func:`when_imported`), so importing this
package costs no veRL import. What the patches do not cover: anything a config key or a registry
reaches (those are config changes, :mod:`recipes.launch_verl`, or registrations,
:mod:`verl_cpu.rollout`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.abc
import importlib.util
import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: The veRL version every patch below was written for and checked against.
VERL_VERSION = "0.9.1"


class PatchMismatch(RuntimeError):
    """veRL's code under a patch is not the code the patch was written for."""


@dataclass(frozen=True)
class Patch:
    """One patch of veRL internals.

    Attributes:
        name: short name (printed by the launch, used in errors).
        module: the veRL module whose attribute is replaced.
        attr: the attribute replaced (a function, class or dict).
        where: the veRL file and line whose assumption it works around.
        why: what fails without it, and what the patch does instead.
        sha256: sha256 (first 16 hex) of the dedented sources of the objects under the patch
            (:attr:`targets`): the code the patch was written against.
        checked: ``module:qualname`` of those objects, if not ``module:attr`` (e.g. the function whose
            default the patch changes at its call site).
        build: ``(module, original) -> replacement``.
    """

    name: str
    module: str
    attr: str
    where: str
    why: str
    sha256: str
    build: Callable[[ModuleType, Any], Any]
    checked: tuple[str, ...] = ()

    @property
    def targets(self) -> tuple[str, ...]:
        return self.checked or (f"{self.module}:{self.attr}",)


def source_sha(*targets: str) -> str:
    """sha256 (16 hex) of the dedented sources of veRL objects given as ``module:qualname``."""
    h = hashlib.sha256()
    for target in targets:
        mod, _, qualname = target.partition(":")
        obj: Any = importlib.import_module(mod)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        h.update(textwrap.dedent(inspect.getsource(obj)).encode())
    return h.hexdigest()[:16]


# ------------------------------------------------------------------------------------------ patches
def _gloo_default(mod: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def initialize_global_process_group_ray(timeout_second: Any = None, backend: Any = None) -> Any:
        return original(timeout_second=timeout_second, backend=backend or "cpu:gloo")

    return initialize_global_process_group_ray


def _unpinned(mod: ModuleType, original: Any) -> Any:
    def CPUOffloadPolicy(pin_memory: bool = True) -> Any:  # noqa: N802 - stands in for the class
        return original(pin_memory=False)

    return CPUOffloadPolicy


def _with_cpu_rollout(mod: ModuleType, original: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    return {**original, ("cpu", "async"): "verl_cpu.rollout.CPUServerAdapter"}


#: Seconds between the replay buffer's checks for finished rollouts (veRL's fixed default: 2.0).
POLL_S = 0.05


def _fast_poll(mod: ModuleType, original: type) -> type:
    init = original.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        init(self, *args, **kwargs)
        self.poll_interval = float((self.sampler_kwargs or {}).get("poll_interval", POLL_S))

    original.__init__ = __init__
    return original


def _plain_chat_fallback(mod: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def create_continuous_token_builder(tokenizer: Any, **kwargs: Any) -> Any:
        chatml = "<|im_end|>" in str(getattr(tokenizer, "chat_template", "") or "")
        if not chatml and kwargs.get("model_family", "auto") == "auto" and kwargs.get("processor") is None:
            kwargs["model_family"] = "default"
        return original(tokenizer, **kwargs)

    return create_continuous_token_builder


def _sdpa_value_head(mod: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def load_valuehead_model(
        local_path: Any, torch_dtype: Any, model_config: Any, trust_remote_code: Any
    ) -> Any:
        from transformers import AutoModelForTokenClassification  # when the critic loads, as veRL does

        try:
            return AutoModelForTokenClassification.from_pretrained(
                pretrained_model_name_or_path=local_path,
                torch_dtype=torch_dtype,
                config=model_config,
                attn_implementation="sdpa",
                trust_remote_code=trust_remote_code,
            )
        except Exception:  # noqa: BLE001 - not a token-classification architecture: veRL's own fallback
            return original(local_path, torch_dtype, model_config, trust_remote_code)

    return load_valuehead_model


def _merged_lora_full_precision(mod: ModuleType, original: type) -> type:
    @functools.wraps(original._merged_lora_per_tensor_param)  # its source stays checkable (__wrapped__)
    def _merged_lora_per_tensor_param(self: Any) -> Any:
        # veRL's generator, line for line, with the cast to bfloat16 of the gathered tensors replaced by
        # a copy: the rollout receives the merged weights in the dtype the trainer holds them (as the
        # full-weight and unmerged paths send them). The copy is needed: at world size 1 full_tensor()
        # returns the local shard itself, which the context's restore overwrites with the base weights
        # (the cast copied it before)
        device = mod.get_device_id()
        try:
            with mod.merged_lora_context(self.module, backup_adapters=True):
                params = mod.normalize_peft_param_name(self.module.state_dict())
                params = mod.convert_weight_keys(
                    params, getattr(self.module, "_fsdp_wrapped_module", self.module)
                )
                for name, param in params.items():
                    yield (
                        name,
                        param.to(device, non_blocking=True).full_tensor().clone()
                        if isinstance(param, mod.DTensor)
                        else param.detach().clone(),
                    )
        finally:
            if self._is_offload_param:
                mod.offload_fsdp_model_to_cpu(self.module)

    original._merged_lora_per_tensor_param = _merged_lora_per_tensor_param
    return original


PATCHES: tuple[Patch, ...] = (
    Patch(
        name="gloo-process-group",
        module="verl.workers.engine_workers",
        attr="initialize_global_process_group_ray",
        where="verl/utils/distributed.py:89 (called at verl/workers/engine_workers.py:89)",
        why="the default backend is f'cpu:gloo,{device}:{nccl backend}', which on the CPU platform reads "
        "'cpu:gloo,cpu:gloo' and torch refuses ('Duplicate device type cpu'); the patch defaults it to 'cpu:gloo'",
        checked=("verl.utils.distributed:initialize_global_process_group_ray",),
        sha256="761a94d1a2e058d3",
        build=_gloo_default,
    ),
    Patch(
        name="unpinned-offload",
        module="verl.workers.engine.fsdp.transformer_impl",
        attr="CPUOffloadPolicy",
        where="verl/workers/engine/fsdp/transformer_impl.py:462",
        why="the forward-only engines (reference, teacher) are wrapped in FSDP2's CPUOffloadPolicy(pin_memory=True), "
        "and pinned memory needs CUDA ('Cannot access accelerator device'); the patch passes pin_memory=False",
        checked=("verl.workers.engine.fsdp.transformer_impl:FSDPEngine._build_fsdp_module",),
        sha256="41da6c4ed82d496a",
        build=_unpinned,
    ),
    Patch(
        name="rollout-table",
        module="verl.workers.rollout.base",
        attr="_ROLLOUT_REGISTRY",
        where="verl/workers/rollout/base.py:89-93",
        why="the worker side finds a rollout backend's adapter in the private dict _ROLLOUT_REGISTRY, which has no "
        "register function; the patch adds ('cpu', 'async') -> verl_cpu.rollout.CPUServerAdapter",
        checked=("verl.workers.rollout.base:get_rollout_class",),
        sha256="d0be5827f1214f04",
        build=_with_cpu_rollout,
    ),
    Patch(
        name="replay-poll",
        module="verl.trainer.ppo.v1.replay_buffer",
        attr="ReplayBuffer",
        where="verl/trainer/ppo/v1/replay_buffer.py:144,409",
        why="the V1 trainer's replay buffer sleeps poll_interval=2.0 s (a constructor default no config reaches) "
        "between checks for finished rollouts, once or more per step: on a GPU a rounding error, on a CPU step of "
        "~1 s most of it; the patch reads trainer.v1.sampler.sampler_kwargs.poll_interval, default 0.05 s",
        checked=("verl.trainer.ppo.v1.replay_buffer:ReplayBuffer.__init__",),
        sha256="34790114ebe5992e",
        build=_fast_poll,
    ),
    Patch(
        name="plain-chat-builder",
        module="verl.experimental.agent_loop.agent_loop",
        attr="create_continuous_token_builder",
        where="verl/utils/tokenizer/continuous_token_wiring.py:112-114 (model_type qwen2 -> the ChatML builder), "
        "verl/utils/tokenizer/continuous_token.py:554-558",
        why="the agent loop picks its token builder by config.json model_type alone: every qwen2 model gets the "
        "ChatML builder, which requires a one-token newline and <|im_end|>, so a Qwen2 with another chat template "
        "(the laptop cold start's character tokenizer) fails ('Expected Qwen newline to tokenize to one token'); "
        "the patch gives a tokenizer whose chat template has no <|im_end|> veRL's family-agnostic builder",
        checked=(
            "verl.utils.tokenizer.continuous_token_wiring:create_continuous_token_builder",
            "verl.utils.tokenizer.continuous_token:QwenContinuousTokenBuilder.__init__",
        ),
        sha256="92ba7f3ab8c253d1",
        build=_plain_chat_fallback,
    ),
    Patch(
        name="critic-sdpa",
        module="verl.utils.model",
        attr="load_valuehead_model",
        where="verl/utils/model.py:643-649",
        why="the critic's value model is loaded with attn_implementation='flash_attention_2' written into the call "
        "(no config reaches it); without flash-attention it falls back to trl's value head, another architecture "
        "(or fails without trl); the patch loads the same AutoModelForTokenClassification with SDPA attention",
        sha256="2371ca280654b53b",
        build=_sdpa_value_head,
    ),
    Patch(
        name="merged-lora-fp32",
        module="verl.workers.engine.fsdp.transformer_impl",
        attr="FSDPEngine",
        where="verl/workers/engine/fsdp/transformer_impl.py:1082",
        why="with model.lora.merge=True the merged weights sent to the rollout are cast to bfloat16 in the "
        "generator (no config reaches the dtype), so an fp32 CPU rollout samples from a rounded policy: rollout "
        "and actor log-probs differ by ~1e-2 where the full-weight and unmerged paths agree within 1e-5; the "
        "patch sends them in the trainer's own dtype, as those paths do",
        checked=("verl.workers.engine.fsdp.transformer_impl:FSDPEngine._merged_lora_per_tensor_param",),
        sha256="70e88d6b2db833da",
        build=_merged_lora_full_precision,
    ),
)


# ------------------------------------------------------------------------------------------ apply
_APPLIED: set[str] = set()


def check(patch: Patch) -> None:
    """Raise :class:`PatchMismatch` unless veRL is :data:`VERL_VERSION` and the code under ``patch``
    hashes to ``patch.sha256``."""
    import verl  # the installed veRL's version: checked when a patch is applied

    if verl.__version__ != VERL_VERSION:
        raise PatchMismatch(
            f"[verl_cpu] patch {patch.name!r} was written for veRL {VERL_VERSION}, this is veRL {verl.__version__}: "
            f"re-check {patch.where} and the hash in verl_cpu/patches.py (or install verl=={VERL_VERSION})"
        )
    got = source_sha(*patch.targets)
    if got != patch.sha256:
        raise PatchMismatch(
            f"[verl_cpu] patch {patch.name!r}: veRL's {', '.join(patch.targets)} changed (source sha256 {got}, the patch "
            f"was written against {patch.sha256}); re-check {patch.where} before updating the hash"
        )


def _patch_module(patch: Patch, mod: ModuleType) -> None:
    if patch.name in _APPLIED:
        return
    check(patch)
    original = getattr(mod, patch.attr)
    setattr(mod, patch.attr, patch.build(mod, original))
    _APPLIED.add(patch.name)


class _PostImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs ``hooks[name](module)`` right after module ``name`` executes (a post-import hook)."""

    def __init__(self) -> None:
        self.hooks: dict[str, list[Callable[[ModuleType], None]]] = {}
        self._busy: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in self.hooks or name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None:
            return None
        inner = spec.loader
        hooks = self.hooks.pop(name)

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return inner.create_module(spec)

            def exec_module(self, module: ModuleType) -> None:
                inner.exec_module(module)
                for hook in hooks:
                    hook(module)

        spec.loader = Loader()
        return spec


_FINDER = _PostImport()


def when_imported(name: str, hook: Callable[[ModuleType], None]) -> None:
    """``hook(module)`` now if ``name`` is imported, else right after it is."""
    if name in sys.modules:
        hook(sys.modules[name])
        return
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    _FINDER.hooks.setdefault(name, []).append(hook)


def apply() -> list[str]:
    """Apply every patch (now, or when its module is imported); returns their names. Idempotent."""
    for patch in PATCHES:
        when_imported(patch.module, functools.partial(_patch_module, patch))
    return [p.name for p in PATCHES]


def applied() -> list[str]:
    """The patches applied in this process so far."""
    return sorted(_APPLIED)
