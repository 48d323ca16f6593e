"""Run a pipeline's stages in order with one manifest, resuming at the first unfinished stage.

The stage registry :data:`STAGES` maps a kind (``task``, ``traces``, ``sft``, ``rl``, ``rejection``,
``mix``, ``eval``) to a function ``fn(ctx: StageContext) -> dict`` that does the work in
``ctx.run_dir`` and returns the stage's outputs (``model``: an HF checkpoint directory, ``data``: a
parquet file, ``commands``: the launch commands on veRL, ``metrics``...). :func:`run_pipeline`
writes ``pipeline.json`` in the pipeline directory after every change: per stage its kind, run
directory, status (``pending``/``running``/``done``/``failed``/``prepared``), inputs, outputs,
timings (wall and process CPU seconds: on a shared machine the first is inflated by other load) and a *fingerprint* (hash of the stage spec, engine, seed and the fingerprints of its
inputs). A stage whose status is ``done`` with an unchanged fingerprint is skipped; a changed
stage reruns and so, through the fingerprints, does everything downstream of it. A killed run is
resumed by running the same command (the interrupted stage restarts; RL stages additionally
resume from their own checkpoints). With ``dry_run`` every stage only composes, validates and
writes its configs and commands (``prepared``); on veRL ``pipeline_launch.sh`` chains them.
Not covered: running stages in parallel, or several processes driving one pipeline directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core.fingerprint import source_hash
from core.model import ModelSpec, build_checkpoint
from core.registry import Registry
from recipes.pipeline.spec import StagePlan, plan

# Sources every stage's outputs depend on; part of each stage's fingerprint.
CODE = ("core", "recipes", "rewards", "data_pipelines", "conf")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass
class StageContext:
    """Everything a stage function gets: its plan, directories, engine and resolved inputs."""

    plan: StagePlan
    cfg: DictConfig
    pipeline_dir: Path
    run_dir: Path
    engine: str
    dry_run: bool
    inputs: dict[str, Any]

    @property
    def spec(self) -> dict[str, Any]:
        return self.plan.spec

    def opt(self, key: str, default: Any = None) -> Any:
        """A stage key, with ``local:``/``verl:`` engine-specific sections taking precedence."""
        eng = self.spec.get(self.engine) or {}
        if isinstance(eng, dict) and key in eng:
            return eng[key]
        return self.spec.get(key, default)

    def need(self, key: str) -> Any:
        v = self.opt(key)
        if v is None:
            raise ValueError(
                f"[conf/pipeline/{self.cfg.name}.yaml: stages.{self.plan.base}.{key}] is required "
                f"for kind={self.plan.kind} on engine={self.engine}"
            )
        return v

    def input(self, key: str) -> Any:
        """The resolved output dict of the referenced stage (or base model) for ``key``."""
        if key not in self.inputs:
            raise ValueError(
                f"[conf/pipeline/{self.cfg.name}.yaml: stages.{self.plan.base}.{key}] is required "
                f"for kind={self.plan.kind}: name an earlier stage"
            )
        return self.inputs[key]


StageFn = Callable[[StageContext], dict[str, Any]]
STAGES: Registry[StageFn] = Registry("pipeline stage kind")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _hash(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


class Manifest:
    """``pipeline.json``: the state of every stage, written atomically after each change."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        old = json.loads(path.read_text()) if path.is_file() else {}
        self.data: dict[str, Any] = {**old, **header, "stages": old.get("stages", {})}
        self.data.setdefault("created", _now())

    def stage(self, name: str) -> dict[str, Any]:
        return self.data["stages"].setdefault(name, {"status": "pending"})

    def save(self) -> None:
        self.data["updated"] = _now()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        os.replace(tmp, self.path)


def base_model(ctx: StageContext, name: str) -> dict[str, Any]:
    """A pipeline base model: on veRL its path/hub name; locally a random-init Qwen2 (built once)."""
    spec = OmegaConf.to_container(ctx.cfg.models[name], resolve=True)
    if ctx.engine == "verl":
        return {"model": str(spec["verl"]), "fingerprint": _hash(spec["verl"])}
    mspec = ModelSpec.from_dict(spec.get("local") or {})
    seed = ctx.plan.seed
    path = ctx.pipeline_dir / "models" / f"{name}-{mspec.key(seed)}"
    if not (path / "config.json").is_file() and not ctx.dry_run:
        build_checkpoint(path, mspec, "char", seed)
    return {"model": str(path), "fingerprint": mspec.key(seed), "num_params_spec": spec.get("local")}


def _resolve_inputs(ctx_base: StageContext, refs: dict[str, Any], outputs: dict[str, dict[str, Any]]) -> dict:
    def one(r: dict[str, Any]) -> Any:
        if "base" in r:
            return base_model(ctx_base, r["base"])
        if "stage" in r:
            return outputs[r["stage"]]
        return [outputs[s] for s in r["stages"]]

    out: dict[str, Any] = {}
    for key, r in refs.items():
        out[key] = {lbl: one(x) for lbl, x in r.items()} if key == "models" else one(r)
    return out


def _input_fingerprints(inputs: dict[str, Any]) -> Any:
    def fp(x: Any) -> Any:
        if isinstance(x, list):
            return [fp(i) for i in x]
        if isinstance(x, dict) and "fingerprint" in x:
            return x["fingerprint"]
        if isinstance(x, dict):
            return {k: fp(v) for k, v in x.items()}
        return x

    return fp(inputs)


def _outputs_exist(out: dict[str, Any]) -> bool:
    return all(Path(str(out[k])).exists() for k in ("model", "data", "report") if out.get(k))


def _open_manifest(
    cfg: DictConfig, plans: list[StagePlan], pipeline_dir: Path, engine: str, dry_run: bool, seed: int
) -> Manifest:
    """``pipeline.json`` with every stage listed from the start (pending until it runs)."""
    man = Manifest(
        pipeline_dir / "pipeline.json",
        {
            "pipeline": str(cfg.name),
            "engine": engine,
            "dry_run": dry_run,
            "seed": seed,
            "dir": str(pipeline_dir),
            "order": [p.name for p in plans],
            "argv": sys.argv,
            "config": OmegaConf.to_container(cfg, resolve=False),
        },
    )
    for i, p in enumerate(plans):
        man.stage(p.name).update(
            {
                "kind": p.kind,
                "index": i,
                "run_dir": str(pipeline_dir / f"{i:02d}-{p.name}"),
                "seed": p.seed,
                "inputs": p.refs,
            }
        )
    man.save()
    return man


def _run_stage(man: Manifest, ctx: StageContext, spec_fp: str) -> dict[str, Any]:
    """Run one stage, recording running / failed / done (or prepared) with timings in the manifest."""
    p, rec = ctx.plan, man.stage(ctx.plan.name)
    rec.update({"status": "running", "started": _now(), "fingerprint": spec_fp, "error": None})
    man.save()
    ctx.run_dir.mkdir(parents=True, exist_ok=True)
    t0, c0 = time.time(), time.process_time()
    try:
        out = STAGES.get(p.kind)(ctx)
    except BaseException as e:
        rec.update(
            {
                "status": "failed",
                "seconds": round(time.time() - t0, 1),
                "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()[-4000:],
            }
        )
        man.save()
        if isinstance(e, KeyboardInterrupt):
            raise
        raise RuntimeError(
            f"[pipeline] stage {p.name!r} (kind={p.kind}) failed: {type(e).__name__}: {e}\n"
            f"  run dir: {ctx.run_dir}; rerun the same command to retry from this stage"
        ) from e
    out["fingerprint"] = spec_fp
    rec.update(
        {
            "status": "prepared" if ctx.dry_run else "done",
            "outputs": out,
            "finished": _now(),
            "seconds": round(time.time() - t0, 1),
            "cpu_seconds": round(time.process_time() - c0, 1),
        }
    )
    man.save()
    log(f"[pipeline] {p.name}: {rec['status']} in {rec['seconds']:.0f}s ({rec['cpu_seconds']:.0f}s CPU)")
    return out


def run_pipeline(
    cfg: DictConfig, pipeline_dir: Path, engine: str, dry_run: bool = False, seed: int = 0
) -> dict[str, Any]:
    """Run (or, with ``dry_run``, prepare) every stage of ``cfg``; return the manifest dict.

    Stages already ``done`` with the same fingerprint are skipped. Raises ``RuntimeError`` naming
    the failed stage and its run directory after recording the failure in ``pipeline.json``.
    """
    plans = plan(cfg, STAGES.names(), seed)
    code = source_hash(CODE)  # a code change runs every stage again: results never mix code versions
    pipeline_dir.mkdir(parents=True, exist_ok=True)
    man = _open_manifest(cfg, plans, pipeline_dir, engine, dry_run, seed)
    outputs: dict[str, dict[str, Any]] = {}
    t_run = time.time()
    for i, p in enumerate(plans):
        run_dir = pipeline_dir / f"{i:02d}-{p.name}"
        ctx = StageContext(p, cfg, pipeline_dir, run_dir, engine, dry_run, {})
        ctx.inputs = _resolve_inputs(ctx, p.refs, outputs)
        spec_fp = _hash([p.kind, p.spec, engine, p.seed, _input_fingerprints(ctx.inputs), code])
        rec = man.stage(p.name)
        done = rec.get("status") == "done" and rec.get("fingerprint") == spec_fp and not dry_run
        if done and engine == "local" and not _outputs_exist(rec.get("outputs") or {}):
            log(f"[pipeline] {p.name}: marked done but its outputs are gone; running it again")
            done = False
        if done:
            log(f"[pipeline] {p.name}: done ({rec.get('seconds', 0):.0f}s), skipped")
            outputs[p.name] = rec["outputs"]
            continue
        if rec.get("status") == "done":
            log(f"[pipeline] {p.name}: its spec or inputs changed since it ran; running it again")
        log(
            f"[pipeline] stage {i + 1}/{len(plans)} {p.name} (kind={p.kind}, engine={engine}"
            f"{', dry run' if dry_run else ''}) -> {run_dir}"
        )
        outputs[p.name] = _run_stage(man, ctx, spec_fp)
    man.data["seconds_this_invocation"] = round(time.time() - t_run, 1)
    for key in ("seconds", "cpu_seconds"):  # wall time is inflated by other load; CPU time much less so
        man.data[f"{key}_all_stages"] = round(
            sum(s.get(key) or 0 for n, s in man.data["stages"].items() if n in man.data["order"]), 1
        )
    if any("commands" in o for o in outputs.values()):
        _write_launch(pipeline_dir, plans, outputs)
        man.data["launch"] = str(pipeline_dir / "pipeline_launch.sh")
    man.save()
    return man.data


def _write_launch(pipeline_dir: Path, plans: list[StagePlan], outputs: dict[str, dict[str, Any]]) -> None:
    lines = [
        "#!/usr/bin/env bash",
        "# Every stage of this pipeline in order (written by recipes.pipeline).",
        "set -euo pipefail",
    ]
    for p in plans:
        cmds = outputs.get(p.name, {}).get("commands")
        if not cmds:
            continue
        lines.append(f"\n# --- {p.name} ({p.kind})")
        lines += [c if isinstance(c, str) else shlex.join(c) for c in cmds]
    path = pipeline_dir / "pipeline_launch.sh"
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o755)
