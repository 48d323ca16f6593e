"""LoRA on the CPU rollout: the adapter veRL's unmerged weight sync sends, applied to the server's model.

veRL 0.9.1 syncs a LoRA actor (``actor_rollout_ref.model.lora_rank>0``) two ways
(``verl/workers/engine_workers.py``, ``update_weights``):

- ``model.lora.merge=True``: the engine merges the adapter into the base weights and sends full
  HF-named tensors (``peft_config=None``); the server loads them as any full sync, nothing here.
- ``model.lora.merge=False`` (the default): the first sync sends the base weights, named as vLLM
  expects them (``...q_proj.base_layer.weight`` for an adapted layer, ``replace_lora_wrapper``),
  and every sync sends the adapter alone (peft's ``get_peft_model_state_dict`` names,
  ``base_model.model.<module>.lora_A.weight``) with its ``LoraConfig``. :func:`apply_adapter`
  injects peft's LoRA layers into the server's model once (``peft.inject_adapter_in_model``, the
  same layers the actor trains) and loads the adapter into them; :func:`own_name` maps a sent
  name to the server model's parameter, before and after the injection.

The model stays a plain ``transformers`` model with peft's LoRA layers in it, so the sampler and the
prompt log-probs call it unchanged. Not covered: several adapters at once, DoRA, ``target_parameters``
(LoRA on bare ``nn.Parameter``s), adapters whose config changes between syncs.
"""

from __future__ import annotations

from typing import Any

import torch

#: The adapter name peft gives the one adapter veRL trains.
ADAPTER = "default"
_PEFT_PREFIX = "base_model.model."


def has_adapter(model: torch.nn.Module) -> bool:
    """Whether peft's LoRA layers are injected in ``model``."""
    return any(".lora_A." in name for name, _ in model.named_parameters())


def own_name(name: str, params: set[str]) -> str:
    """The name of the server model's parameter that a synced tensor ``name`` fills: veRL's base-layer
    (``.base_layer.``) and peft (``base_model.model.``, no adapter name) spellings mapped to ``params``,
    the model's own names; unchanged when nothing maps."""
    if name in params:
        return name
    bare = name.removeprefix(_PEFT_PREFIX)
    for candidate in (
        bare,
        bare.replace(".base_layer.", "."),
        bare.replace(".lora_A.", f".lora_A.{ADAPTER}.").replace(".lora_B.", f".lora_B.{ADAPTER}."),
    ):
        if candidate in params:
            return candidate
        stem, _, leaf = candidate.rpartition(".")
        with_base = f"{stem}.base_layer.{leaf}"
        if with_base in params:
            return with_base
    return name


def lora_config(peft_config: Any) -> Any:
    """A peft ``LoraConfig`` from what the engine sends: the config itself or its ``to_dict()``
    (``verl/workers/engine/fsdp/transformer_impl.py:1060``)."""
    from peft import LoraConfig  # as above

    if isinstance(peft_config, LoraConfig):
        return peft_config
    fields = LoraConfig.__dataclass_fields__
    return LoraConfig(**{k: v for k, v in dict(peft_config).items() if k in fields and fields[k].init})


def apply_adapter(model: torch.nn.Module, peft_config: Any, state: dict[str, torch.Tensor]) -> int:
    """Inject LoRA layers for ``peft_config`` into ``model`` (first call only) and load the adapter
    ``state`` into them; returns how many tensors were loaded. Raises ``ValueError`` naming what does
    not fit (a tensor no LoRA layer takes, or a LoRA layer the state leaves out)."""
    from peft import inject_adapter_in_model  # peft: only a LoRA run loads it

    if not has_adapter(model):
        inject_adapter_in_model(lora_config(peft_config), model, adapter_name=ADAPTER)
        model.eval()
    params = {n for n, _ in model.named_parameters()}
    lora = {n for n in params if ".lora_A." in n or ".lora_B." in n}
    mapped = {own_name(n, params): t for n, t in state.items()}
    unknown = sorted(n for n in mapped if n not in lora)
    missing = sorted(lora - set(mapped))
    if unknown or missing:
        raise ValueError(
            f"[actor_rollout_ref.model.target_modules] LoRA sync: {len(unknown)} adapter tensors the rollout "
            f"model has no LoRA layer for {unknown[:3]}, {len(missing)} LoRA layers not sent {missing[:3]}"
        )
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, tensor in mapped.items():
            own[name].copy_(tensor.to(own[name].dtype))
    return len(mapped)


def target_error(model_path: str, lora: dict[str, Any]) -> str | None:
    """Whether peft finds the LoRA targets in the model at ``model_path`` (built on the meta device:
    no weights are read); ``lora`` holds ``lora_rank``, ``lora_alpha``, ``target_modules`` and
    ``exclude_modules`` as in ``actor_rollout_ref.model``. Returns peft's refusal, or None."""
    from peft import LoraConfig, inject_adapter_in_model  # peft, transformers: a LoRA launch only
    from transformers import AutoConfig, AutoModelForCausalLM  # as above

    config = AutoConfig.from_pretrained(model_path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    try:
        inject_adapter_in_model(
            LoraConfig(
                r=int(lora["lora_rank"]),
                lora_alpha=int(lora.get("lora_alpha") or 16),
                target_modules=lora.get("target_modules"),
                exclude_modules=lora.get("exclude_modules"),
                bias="none",
            ),
            model,
        )
    except ValueError as e:
        return str(e).splitlines()[0]
    return None
