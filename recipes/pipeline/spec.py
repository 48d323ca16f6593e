"""Pipeline specs: load ``conf/pipeline/<name>.yaml``, apply ``k=v`` overrides, expand seeds, check refs.

A pipeline file holds ``name``, optional ``models`` (named base models: a ``TinySpec`` dict for
the local engine and a model path/hub name for veRL), ``vars`` (free values the stages
interpolate, e.g. ``${vars.rl_steps}``) and an ordered list ``stages``; each stage has ``name``,
``kind`` (a key of :data:`recipes.pipeline.core.STAGES`), optional ``seeds`` (the stage runs once
per seed, as ``<name>.s<seed>``) and kind-specific keys. Values naming another stage's output are
*references*: ``model: <stage>`` / ``data: <stage>`` / ``models: {label: <stage>}``; ``base:<model>``
names a pipeline base model. A seeded stage referring to a seeded stage gets the same seed's
instance; an unseeded stage gets all instances. Errors name the file and the key.
Not covered: branching on results, stages that run in parallel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[2] / "conf" / "pipeline"
#: Stage keys whose (string) values are references to other stages' outputs.
REF_KEYS = ("model", "data", "extra_data", "eval_data", "init")


class PipelineError(ValueError):
    """A pipeline file or override that cannot run; the message names the file/key and the fix."""


@dataclass
class StagePlan:
    """One runnable stage instance (a seeded stage yields one per seed)."""

    name: str
    kind: str
    spec: dict[str, Any]
    seed: int
    base: str
    refs: dict[str, Any] = field(default_factory=dict)


def available() -> list[str]:
    return sorted(p.stem for p in CONF_DIR.glob("*.yaml"))


def load(name: str, overrides: list[str] | None = None) -> DictConfig:
    """The pipeline ``name`` (or a ``.yaml`` path) with dotlist ``overrides`` merged (``vars.rl_steps=10``)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else CONF_DIR / f"{name}.yaml"
    if not path.is_file():
        raise PipelineError(
            f"[pipeline] unknown pipeline {name!r}; available: {', '.join(available())} (files in {CONF_DIR})"
        )
    cfg = OmegaConf.load(path)
    for ov in overrides or []:
        key, sep, value = ov.partition("=")
        if not sep:
            raise PipelineError(f"[pipeline] override {ov!r} is not key=value")
        key = key.lstrip("+")
        if OmegaConf.select(cfg, key, default="<missing>") == "<missing>" and not ov.startswith("+"):
            raise PipelineError(
                f"[{key}] not a key of {path.name} (fix: check the spelling, or prefix "
                f"with + to add a new key)"
            )
        OmegaConf.update(cfg, key, yaml.safe_load(value) if value else value, force_add=True)
    return cfg


def _stage_list(cfg: DictConfig, file: str) -> list[dict[str, Any]]:
    stages = cfg.get("stages")
    if not isinstance(stages, ListConfig) or not stages:
        raise PipelineError(f"[{file}: stages] must be a non-empty list of stages")
    out = []
    for i, s in enumerate(stages):
        d = OmegaConf.to_container(s, resolve=True)
        for k in ("name", "kind"):
            if not d.get(k):
                raise PipelineError(f"[{file}: stages[{i}].{k}] is required")
        out.append(d)
    return out


def plan(cfg: DictConfig, known_kinds: list[str], default_seed: int = 0) -> list[StagePlan]:
    """Expand seeds and check every kind and reference; the ordered list of stage instances."""
    file = f"conf/pipeline/{cfg.get('name', '?')}.yaml"
    stages = _stage_list(cfg, file)
    models = set(cfg.models.keys()) if cfg.get("models") else set()
    seen: dict[str, list[StagePlan]] = {}
    out: list[StagePlan] = []
    for i, s in enumerate(stages):
        if s["kind"] not in known_kinds:
            raise PipelineError(
                f"[{file}: stages[{i}].kind] unknown stage kind {s['kind']!r}; known: "
                f"{', '.join(known_kinds)}"
            )
        if s["name"] in seen:
            raise PipelineError(f"[{file}: stages[{i}].name] {s['name']!r} is used twice")
        seeds = s.pop("seeds", None)
        instances = []
        for seed in [default_seed] if seeds is None else list(seeds):
            name = s["name"] if seeds is None else f"{s['name']}.s{seed}"
            sp = StagePlan(name, s["kind"], dict(s), int(seed), s["name"])
            sp.spec["seeded"] = seeds is not None
            for key in (*REF_KEYS, "models"):
                if key not in s:
                    continue
                val = s[key]
                if key == "models":
                    if not isinstance(val, dict):
                        raise PipelineError(f"[{file}: stages[{i}].models] must map labels to stage names")
                    sp.refs["models"] = {
                        lbl: _resolve(r, seen, models, seed, seeds is not None, file, i, key)
                        for lbl, r in val.items()
                    }
                elif isinstance(val, str):
                    sp.refs[key] = _resolve(val, seen, models, seed, seeds is not None, file, i, key)
            instances.append(sp)
        seen[s["name"]] = instances
        out += instances
    return out


def _resolve(
    ref: str,
    seen: dict[str, list[StagePlan]],
    models: set[str],
    seed: int,
    seeded: bool,
    file: str,
    i: int,
    key: str,
) -> Any:
    if ref.startswith("base:"):
        name = ref.split(":", 1)[1]
        if name not in models:
            raise PipelineError(
                f"[{file}: stages[{i}].{key}] {ref!r}: no model {name!r} under `models:` "
                f"(known: {', '.join(sorted(models)) or 'none'})"
            )
        return {"base": name}
    if ref not in seen:
        raise PipelineError(
            f"[{file}: stages[{i}].{key}] {ref!r} is not an earlier stage (fix: use the name of a "
            f"stage listed before this one, or base:<model>); earlier: {', '.join(seen) or 'none'}"
        )
    inst = seen[ref]
    if len(inst) == 1 and not inst[0].spec["seeded"]:
        return {"stage": inst[0].name}
    if seeded:
        match = [p for p in inst if p.seed == seed]
        if not match:
            raise PipelineError(
                f"[{file}: stages[{i}].{key}] {ref!r} has no instance for seed {seed} "
                f"(its seeds: {[p.seed for p in inst]})"
            )
        return {"stage": match[0].name}
    return {"stages": [p.name for p in inst]}
