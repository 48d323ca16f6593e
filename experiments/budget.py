"""``make budget MODEL=<checkpoint|run dir> [BUDGETS=0,8,32]``: seed 002's thinking-budget curve.

For the model (a run directory's latest checkpoint, or an HF checkpoint) and, next to it, the base
model it was trained from, :mod:`analysis.thinking_budget` samples ``n`` responses per held-out
prompt with the engine's own sampler (``core.sampling``: the local KV-cache sampler for the
laptop models), cuts the reasoning at each hard budget N, forces the answer with the template's
close-think + answer-open text and scores it with ``rewards.compute_score``. Prints, per model,
held-out accuracy per budget and difficulty level with 95% intervals and one sentence per curve
(where it rises, plateaus and whether it falls); writes ``budget.json`` / ``budget.md`` /
``budget.png`` to ``out`` and, with ``results=<name>``, ``results/<name>/budget.json``.
A Hydra app (``conf/command/budget.yaml``)::

    python -m experiments.budget model=runs/r1_zero-s0 'budgets=[0,8,32,96]'

Does not train anything (``experiments.thinking_budget`` trains the run it evaluates).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from analysis import thinking_budget as tb
from analysis.evaluate import check_run_base, resolve_model
from analysis.thinking_budget import curve_table, draw
from core import results
from core.cli import hydra_main, require
from core.data import load_prompts, sha256_file
from core.runs import Run
from core.sampling import Settings, auto_sampler_name, make_sampler
from rewards import compute_score


def _run_cfg(model: str, key: str) -> Any:
    p = Path(model)
    return Run(p).cfg(key) if (p / "config.yaml").is_file() else None


def models(cfg: DictConfig) -> dict[str, tuple[str, str | None]]:
    """``{"base": (path, None), "rl": (path, training-state file or None)}`` named by ``base`` and ``model``."""
    rl = resolve_model(str(cfg.model))
    out: dict[str, tuple[str, str | None]] = {}
    if cfg.base == "auto":
        base = _run_cfg(str(cfg.model), "actor_rollout_ref.model.path")
        if base:  # the base the run started from, refused if it was rebuilt since the run
            base = Path(str(base)).expanduser()
            check_run_base(Path(str(cfg.model)), base)
            out["base"] = (str(base), None)
    elif cfg.base:
        out["base"] = resolve_model(str(cfg.base))
    if out.get("base") == rl:
        raise ValueError(
            f"[budget] model={cfg.model} has no checkpoint of its own (it resolves to its base model {rl[0]})"
        )
    return {**out, "rl": rl}


def data_settings(cfg: DictConfig) -> tuple[str, int]:
    """(held-out parquet, prompt length limit) from the config or, for ``auto``, the run's config."""
    data = cfg.data
    if data == "auto":
        data = _run_cfg(str(cfg.model), "data.val_files")
        if isinstance(data, list):
            data = data[0]
        if not data:
            raise ValueError(
                f"[budget] data=auto needs a run directory as model= (got {cfg.model}); pass data=<parquet>"
            )
    limit = cfg.max_prompt_length
    if limit == "auto":
        limit = _run_cfg(str(cfg.model), "data.max_prompt_length") or 1024
    return str(Path(str(data)).expanduser()), int(limit)


def evaluate_one(cfg: DictConfig, path: str, state: str | None, data: str, max_prompt: int) -> dict[str, Any]:
    """The budget curve of one model: :func:`analysis.thinking_budget.summarise` plus timings."""
    name = auto_sampler_name(path) if cfg.sampler == "auto" else str(cfg.sampler)
    settings = Settings(temperature=float(cfg.temperature), top_p=float(cfg.top_p), seed=int(cfg.seed))
    sampler = make_sampler(name, path, settings, state)
    prompts = load_prompts(data, sampler.tokenizer, max_prompt, limit=cfg.limit or None)
    budgets = [int(b) for b in cfg.budgets]
    t0, c0 = time.perf_counter(), time.process_time()
    samples = tb.budget_samples(
        sampler, prompts, int(cfg.n), budgets, int(cfg.max_answer), str(cfg.force_text), list(cfg.markers)
    )
    tb.score(samples, prompts, compute_score)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "model": path,
        "checkpoint_state": state,
        "sampler": name,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "groups": tb.summarise(samples, prompts, budgets, int(cfg.bootstrap), int(cfg.seed)),
    }


def evaluate(cfg: DictConfig) -> dict[str, Any]:
    """Every model of :func:`models` on the held-out data; the settings recorded with the curves."""
    torch.set_num_threads(int(cfg.threads))
    data, max_prompt = data_settings(cfg)
    settings = OmegaConf.to_container(cfg, resolve=True)
    settings.update({"data": data, "data_sha256": sha256_file(data), "max_prompt_length": max_prompt})  # type: ignore[union-attr]
    curves = {label: evaluate_one(cfg, p, s, data, max_prompt) for label, (p, s) in models(cfg).items()}
    return {"settings": settings, "models": curves}


def tables(result: dict[str, Any]) -> str:
    """Markdown: per model, the level x budget table (accuracy [95% CI]) and one shape line per curve."""
    parts = []
    for label, m in result["models"].items():
        state = f" + {m['checkpoint_state']}" if m["checkpoint_state"] else ""
        shapes = "\n".join(f"- {g}: {tb.describe(v)}" for g, v in m["groups"].items())
        parts.append(f"### {label}: {m['model']}{state}\n\n{curve_table(m)}\n\n{shapes}")
    return "\n\n".join(parts)


def _out_dir(cfg: DictConfig) -> Path:
    if cfg.out:
        return Path(str(cfg.out))
    p = Path(str(cfg.model))
    return (
        p / "budget" if (p / "run.json").exists() or (p / "config.yaml").exists() else Path("budget") / p.name
    )


def command(cfg: DictConfig) -> int:
    require(cfg, "model", command="experiments.budget")
    result = evaluate(cfg)
    text = tables(result)
    print(text)
    out = _out_dir(cfg)
    out.mkdir(parents=True, exist_ok=True)
    (out / "budget.json").write_text(json.dumps(results.rounded(result), indent=1) + "\n")
    (out / "budget.md").write_text(f"# Thinking-budget curve: {cfg.model}\n\n{text}\n")
    draw(result["models"]).savefig(out / "budget.png", dpi=110)
    print(f"wrote {out}/budget.json, budget.md, budget.png")
    if cfg.results:
        print(f"recorded {results.write_table(str(cfg.results), 'budget', result)}")
    return 0


main = hydra_main("command", "budget", command)


if __name__ == "__main__":
    main()
