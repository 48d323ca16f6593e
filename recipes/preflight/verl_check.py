"""Pre-flight check ``verl_engine``: the dress rehearsal on veRL's own engine with the run's checkpoint.

:func:`check_verl_engine` runs :func:`recipes.preflight.verl_engine.rehearse` on
``actor_rollout_ref.model.path`` when it is on disk and at most :data:`MAX_PARAMS` parameters, and
turns the outcome into findings: a refusal by veRL's engine is a ``fail`` naming the key and the
fix; any other engine error a ``warn`` (it may be the CPU's, not the config's); a finite update an
``info`` with :func:`summary` (timings, metrics, every CPU change). Opt-in:
``python -m recipes.preflight ... checks=[..., verl_engine]``. Not covered: checkpoints that are not
on disk (nothing is downloaded) or too large for a CPU.
"""

from __future__ import annotations

import math

from recipes.preflight.context import Context, sel
from recipes.preflight.models import local_dir, model_shape
from recipes.preflight.verl_engine import Refused, Rehearsal, rehearse

#: The metrics :func:`summary` prints.
HEADLINE = ("actor/pg_loss", "grad_norm", "actor/pg_clipfrac", "actor/ppo_kl", "kl_loss", "lr")

#: Largest model the pre-flight check rehearses on CPU (parameters): fp32 weights, gradients and
#: AdamW moments take 16 bytes a parameter, so 1e9 is ~16 GB of RAM and minutes per step.
MAX_PARAMS = 1e9


def check_verl_engine(ctx: Context) -> dict[str, float]:
    """Pre-flight check ``verl_engine``: :func:`rehearse` on the run's own checkpoint when it is on
    disk and at most :data:`MAX_PARAMS` parameters (a finding says why it is skipped otherwise).
    A refusal is a ``fail`` naming the key; any other engine error a ``warn`` (it may be the CPU's)."""
    key = "actor_rollout_ref.model.path"
    path = str(sel(ctx.cfg, key))
    where = local_dir(path, "config.json")
    if where is None:
        ctx.report.add("verl_engine", "info", key, f"skipped: {path} is not on disk (no download on CPU)")
        return {"rehearsed": 0.0}
    shape, _ = model_shape(str(where))
    if shape is not None and shape.params > MAX_PARAMS:
        ctx.report.add(
            "verl_engine",
            "info",
            key,
            f"skipped: {shape.params / 1e9:.2f}B parameters > {MAX_PARAMS / 1e9:.0f}B "
            "(recipes.preflight.verl_check.MAX_PARAMS) is too large for a CPU rehearsal",
            "rehearse on a small checkpoint of the same family: actor_rollout_ref.model.path=<dir>",
        )
        return {"rehearsed": 0.0}
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
