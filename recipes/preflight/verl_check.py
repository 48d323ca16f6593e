"""Pre-flight check ``verl_engine``: the dress rehearsal on veRL's own engine with the run's checkpoint.

:func:`check_verl_engine` runs :func:`recipes.preflight.verl_engine.rehearse` on
``actor_rollout_ref.model.path`` when it is on disk and at most :data:`MAX_PARAMS` parameters (else
on a tiny stand-in with the recipe's config, :func:`stand_in`, and says so), and
turns the outcome into findings: a refusal by veRL's engine is a ``fail`` naming the key and the
fix; any other engine error a ``warn`` (it may be the CPU's, not the config's); a finite update an
``info`` with :func:`summary` (timings, metrics, every CPU change). Opt-in:
``python -m recipes.preflight ... checks=[..., verl_engine]``. Not covered: a checkpoint that is not
on disk (nothing is downloaded) or too large for a CPU is not itself loaded: its config runs on the stand-in.
The whole trainer (generation, rewards, the critic, the weight sync) is ``verl_trainer``'s
(:mod:`recipes.preflight.verl_trainer`).
"""

from __future__ import annotations

import math
from pathlib import Path

from recipes.preflight.context import Context, sel
from recipes.preflight.models import local_dir, model_shape
from recipes.preflight.verl_engine import Refused, Rehearsal, rehearse

#: The metrics :func:`summary` prints.
HEADLINE = ("actor/pg_loss", "grad_norm", "actor/pg_clipfrac", "actor/ppo_kl", "kl_loss", "lr")

#: Largest model the pre-flight check rehearses on CPU (parameters): fp32 weights, gradients and
#: AdamW moments take 16 bytes a parameter, so 1e9 is ~16 GB of RAM and minutes per step.
MAX_PARAMS = 1e9


def stand_in(ctx: Context) -> Path:
    """A tiny random Qwen2 with a ChatML byte tokenizer in ``<run dir>/verl_stand_in`` (built once):
    the model a rehearsal runs the recipe's config on when its own checkpoint cannot run here."""
    from core import model as models  # torch: only a stand-in build needs it

    out = Path(str(ctx.settings.get("run_dir") or sel(ctx.cfg, "run_dir") or "outputs/preflight")).resolve()
    path = out / "verl_stand_in"
    if not (path / "config.json").is_file():
        models.build_checkpoint(path, models.ModelSpec(64, 2, 4, 2, 128, 256), "byte", seed=0)
    return path


def check_verl_engine(ctx: Context) -> dict[str, float]:
    """Pre-flight check ``verl_engine``: :func:`rehearse` on the run's own checkpoint when it is on
    disk and at most :data:`MAX_PARAMS` parameters, else on a tiny stand-in with the recipe's config
    (the finding says which). A refusal is a ``fail`` naming the key; any other engine error a
    ``warn`` (it may be the CPU's)."""
    key = "actor_rollout_ref.model.path"
    path = str(sel(ctx.cfg, key))
    where = local_dir(path, "config.json")
    shape, _ = model_shape(str(where)) if where is not None else (None, "")
    instead = ""
    if where is None:
        instead = f"{path} is not on disk (nothing is downloaded on CPU)"
    elif shape is not None and shape.params > MAX_PARAMS:
        instead = (
            f"{path} has {shape.params / 1e9:.2f}B parameters > {MAX_PARAMS / 1e9:.0f}B "
            "(recipes.preflight.verl_check.MAX_PARAMS), too large for a CPU"
        )
    if instead:
        where = stand_in(ctx)
        ctx.report.add(
            "verl_engine",
            "info",
            key,
            f"{instead}: the recipe's actor/ref config runs on a tiny Qwen2 stand-in ({where}) instead",
            "rehearse your own architecture with a small checkpoint of the same family: "
            "actor_rollout_ref.model.path=<dir>",
        )
    try:
        res = rehearse(ctx.cfg, where)
    except Refused as e:
        ctx.report.add("verl_engine", "fail", e.key, f"veRL's engine refuses this config: {e.message}", e.fix)
        return {"rehearsed": 0.0}
    except Exception as e:  # noqa: BLE001 - reported: it may be a CPU limitation, not the config
        ctx.report.add(
            "verl_engine",
            "warn",
            "actor_rollout_ref.actor",
            f"veRL's engine failed on CPU: {type(e).__name__}: {str(e)[:300]}",
            "run the same config on one GPU (make gpu-smoke shows the GPU path works)",
        )
        return {"rehearsed": 0.0}
    ctx.report.facts["verl_engine"] = res.as_dict()
    bad = [k for k in ("actor/pg_loss", "grad_norm") if not math.isfinite(res.metrics.get(k, float("nan")))]
    if bad or res.weight_change == 0:
        ctx.report.add(
            "verl_engine",
            "fail",
            "actor_rollout_ref.actor",
            f"one update on veRL's engine gave non-finite {bad} or unchanged weights "
            f"(max change {res.weight_change:.3g})",
            "check actor_rollout_ref.actor.optim.lr and the loss settings",
        )
    else:
        ctx.report.add("verl_engine", "info", "actor_rollout_ref.actor", summary(res))
    return {"rehearsed": 1.0, **{f"{k}_s": v for k, v in res.timings.items()}}


def summary(res: Rehearsal) -> str:
    """Human-readable lines: timings, the headline metrics, and each CPU change."""
    t = ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items())
    m = ", ".join(f"{k}={res.metrics[k]:.4g}" for k in HEADLINE if k in res.metrics)
    lines = [f"veRL engine on CPU: {t}; {m}; max weight change {res.weight_change:.3g}"]
    for key, (recipe, sp, given) in res.budgets.items():
        lines.append(
            f"  budget {key}: {recipe} x sp {sp} (given to veRL at sp 1, scaled to the lengths: {given})"
        )
    lines += [f"  CPU change {k}: {v}" for k, v in res.cpu_changes.items()]
    return "\n".join(lines)
