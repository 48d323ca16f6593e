"""W&B: grouping and tags for runs, offline upload of a run dir, and a W&B Report of a sweep.

- ``run_settings(run, axes)``: the ``wandb.init`` keyword arguments that group the runs of one
  sweep (``group`` = the multirun directory name, else the recipe) and tag them with the recipe
  and ``axis=value`` for each swept axis. Engines and ``log_run`` use the same function.
- ``log_run(run, axes, mode="offline")`` (CLI: ``python -m analysis.wandb_report sweep=<dir>``):
  replays ``metrics.jsonl`` into a W&B run; offline it
  needs no API key and writes under ``<dir>/wandb`` (``wandb sync`` uploads it later).
- ``build_report(...)``: a ``wandb_workspaces`` Report (one line plot per logged panel metric,
  grouped by the swept axes, mean with min-max band). Building touches no network;
  ``publish_report`` then saves it (needs network and an API key: ``PUBLISH=wandb``); a Report
  exists only on the server, so without ``WANDB_API_KEY`` ``check_publish`` refuses in one line
  before anything is written.
It does not download anything from W&B.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from analysis.panels import PANEL_ORDER, PANELS
from core.cli import UsageError, hydra_main
from core.runs import Run, find_runs, group_runs


def sweep_group(run: Run) -> str:
    """Group name: the multirun directory (parent of a job dir with ``.hydra``), else the recipe."""
    if (run.path / ".hydra").is_dir() and (run.path.parent / "multirun.yaml").exists():
        return run.path.parent.name
    return run.recipe or "runs"


def axis_key(axis: str) -> str:
    """Config key under ``axes`` holding an axis value (dots would nest in W&B config)."""
    return axis.replace(".", "__")


DEFAULT_PROJECT = "rlvr-recipes"  # one project for all runs, so any two can be compared


def run_settings(
    run: Run, axes: list[str], group: str | None = None, project: str = DEFAULT_PROJECT
) -> dict[str, Any]:
    """``wandb.init`` kwargs: project, group, name, tags (recipe + axis=value) and config.

    The axis values also go to ``config.axes.<axis>`` so W&B panels can group by them.
    """
    values = {a: run.overrides.get(a, run.recipe if a == "recipe" else "(default)") for a in axes}
    tags = [t for t in [run.recipe, f"scale={run.manifest.get('scale') or run.cfg('rlvr.scale')}"] if t]
    tags += [f"{a}={v}" for a, v in values.items()]
    return {
        "project": project,
        "group": group or sweep_group(run),
        "name": run.name,
        "tags": [t[:64] for t in tags],  # W&B limits tag length to 64 characters
        "config": {
            **run.config,
            "rlvr_manifest": run.manifest,
            "axes": {axis_key(a): v for a, v in values.items()},
        },
        "job_type": "train",
    }


def log_run(
    run: Run,
    axes: list[str],
    mode: str = "offline",
    root: str | Path | None = None,
    group: str | None = None,
    project: str = DEFAULT_PROJECT,
) -> Path:
    """Replay a run dir's metrics into W&B (offline by default); returns the W&B run directory."""
    import wandb  # ~1.5 s; only replaying runs needs it, not the Markdown report that imports this module

    settings = run_settings(run, axes, group, project)
    root = Path(root or run.path)
    wb = wandb.init(
        mode=mode,
        dir=str(root),
        reinit="create_new",
        settings=wandb.Settings(silent=True, x_disable_stats=True),
        **settings,
    )
    by_step: dict[int, dict[str, float]] = {}
    for key, s in run.metrics.items():
        for st, v in zip(s.steps.tolist(), s.values.tolist(), strict=True):
            by_step.setdefault(st, {})[key] = v
    for st in sorted(by_step):
        wb.log(by_step[st], step=st)
    out = Path(wb.dir).parent
    wb.finish()
    return out


def build_report(
    runs: list[Run], axes: list[str], entity: str, project: str, title: str = "", group: str | None = None
) -> Any:
    """A ``wandb_workspaces`` Report of these runs (no network is touched); ``group`` as in
    ``run_settings`` (the W&B group the runs were logged under)."""
    import wandb_workspaces.reports.v2 as wr  # ~2 s; only publish=wandb builds a Report

    logged = []
    for name in PANEL_ORDER:
        for key in PANELS.get(name).keys:
            hit = next(
                (
                    k
                    for r in runs
                    for k in r.metrics
                    if k == key or (key.startswith("^") and re.search(key, k))
                ),
                None,
            )
            if hit:
                logged.append((PANELS.get(name).title, hit))
                break
    groups = [group] if group else sorted({sweep_group(r) for r in runs})
    runset = wr.Runset(
        entity=entity,
        project=project,
        name=", ".join(groups),
        filters=" or ".join(f"Metric('Group') == '{g}'" for g in groups),
        groupby=[f"config.axes.{axis_key(a)}" for a in axes],
    )
    plots = [
        wr.LinePlot(title=t, x="Step", y=[k], groupby_aggfunc="mean", groupby_rangefunc="minmax")
        for t, k in logged
    ]
    blocks = [
        wr.H1(title or f"RLVR sweep: {', '.join(groups)}"),
        wr.P(
            f"{len(runs)} runs; swept axes: {', '.join(axes) or 'none'}; lines are the mean over seeds, "
            "bands min-max. Built by analysis.report (PUBLISH=wandb)."
        ),
        wr.PanelGrid(runsets=[runset], panels=plots),
    ]
    return wr.Report(
        project=project,
        entity=entity,
        title=title or f"RLVR comparison: {', '.join(groups)}",
        description="Generated by rlvr-recipes analysis.report",
        blocks=blocks,
    )


class PublishKeyMissing(UsageError, RuntimeError):
    """``PUBLISH=wandb`` without ``WANDB_API_KEY`` (a user's mistake: one ``error:`` line)."""


def check_publish(cfg: DictConfig) -> None:
    """Refuse ``publish=wandb`` (``PUBLISH=wandb``) without ``WANDB_API_KEY``, before anything is written.

    A W&B Report lives on the W&B server: there is no offline Report to write (offline W&B is for
    runs: ``log_run``, ``logger=wandb``), so the honest answer is the variable to set.
    """
    if str(cfg.get("publish")).lower() == "wandb" and not os.environ.get("WANDB_API_KEY"):
        raise PublishKeyMissing(
            "PUBLISH=wandb saves a W&B Report on wandb.ai and needs WANDB_API_KEY; fix: export WANDB_API_KEY=<key> "
            "(https://wandb.ai/authorize), or leave PUBLISH unset for the HTML/Markdown report alone"
        )


def publish_report(runs: list[Run], axes: list[str], cfg: DictConfig) -> str:
    """Build and save the W&B Report; returns its URL. Needs ``WANDB_API_KEY`` and network."""
    check_publish(cfg)
    project = cfg.wandb_project or DEFAULT_PROJECT
    entity = cfg.wandb_entity or os.environ.get("WANDB_ENTITY", "")
    group = Path(str(cfg.sweep)).resolve().name if cfg.sweep else None
    report = build_report(runs, axes, entity=entity, project=str(project), group=group)
    report.save()
    return str(report.url)


def command(cfg: DictConfig) -> int:
    """Replay runs into W&B, grouped and tagged; print one line per run."""
    runs = [r for d in list(cfg.runs or []) + ([cfg.sweep] if cfg.sweep else []) for r in find_runs(str(d))]
    if not runs:
        raise UsageError("analysis.wandb_report: give runs=[<dir>,...] or sweep=<multirun dir> (try --help)")
    axes, _ = group_runs(runs)
    group = Path(str(cfg.sweep)).resolve().name if cfg.sweep else None  # one sweep = one W&B group
    for r in runs:
        s = run_settings(r, axes, group, str(cfg.project))
        out = log_run(r, axes, mode=str(cfg.mode), root=cfg.dir, group=group, project=str(cfg.project))
        print(f"{r.name}: group={s['group']} tags={s['tags']} -> {out}")
    return 0


main = hydra_main("analysis", "wandb", command)


if __name__ == "__main__":
    main()
