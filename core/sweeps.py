"""The typed spec of an ablation sweep: ``rlvr.sweep`` in ``conf/sweep/<name>.yaml``.

A sweep file says what it tests before it runs: the swept axis, the claim, the baseline arm, the
primary metric (the verdict is based on it) and secondary metrics, the predicted direction and
the smallest effect of interest. ``recipes.validate`` checks the section against
:class:`SweepSpec`, ``recipes.sweep`` reads ``cold_start``, the ablation report
(``analysis.ablations``) reads the rest. Not covered: the swept values and seeds (they are
Hydra's ``hydra.sweeper.params`` in the same file).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from omegaconf import OmegaConf

from core.compose import CONF_DIR


@dataclass
class Metric:
    """A per-run value the report computes.

    Attributes:
        label: the row label in the report.
        key: the logged metric (``metrics.jsonl``); empty for the sample-based kinds.
        how: ``last`` (final logged value), ``mean`` (mean over logged steps: the area under the
            curve), ``tail`` (mean over the last 25% of steps), ``len_incorrect`` / ``len_correct``
            (mean length of wrong / right rollout samples over the last 25% of steps),
            ``strict_acc`` (the last held-out dump re-scored by the strict verifier).
    """

    label: str
    key: str = ""
    how: str = "last"


@dataclass
class Control:
    """A control sweep compared with one arm of this sweep, paired by seed."""

    sweep: str
    label: str
    arm: str


@dataclass
class Pilot:
    """The pilot that set a sweep's seed count: its own seeds (never reused in the sweep) and where
    its results are recorded (``results/<experiment>/``); ``decision`` says how the confirmatory
    seed count followed from the pilot's estimate (written after the pilot, before the sweep)."""

    experiment: str
    seeds: list[int] = field(default_factory=list)
    decision: str = ""


@dataclass
class SweepSpec:
    """``rlvr.sweep`` of a sweep file.

    Attributes:
        name: the sweep's file name.
        axis: the swept override key; arms are labelled ``<axis>=<value>``.
        metric: the primary metric (the verdict is based on it).
        title: the report's section title (null for a control sweep).
        claim: the claim tested, as the source states it.
        baseline: the arm the others are compared with, e.g. ``kl=none``.
        direction: sign the claim predicts for (arm - baseline) on the primary metric; 0: no claim.
        delta: smallest effect of interest on the primary metric (for the seeds-needed estimate).
        secondary: further metrics, reported without a verdict.
        control: an optional control sweep (see :class:`Control`).
        cold_start: ``default``: every arm of seed s starts from the default-task cold start of
            seed s (``recipes.sweep``); null: the sweep's own.
        arm_direction: per-arm exceptions to ``direction``, e.g. ``{agg=token_mean: 0}`` for an arm
            that is measured but carries no prediction.
        pilot: the pilot that set the seed count (see :class:`Pilot`), if any.
    """

    name: str
    axis: str
    metric: Metric
    title: str | None = None
    claim: str = ""
    baseline: str | None = None
    direction: int = 0
    delta: float = 0.0
    secondary: list[Metric] = field(default_factory=list)
    control: Control | None = None
    cold_start: str | None = None
    arm_direction: dict[str, int] = field(default_factory=dict)
    pilot: Pilot | None = None

    def direction_of(self, arm: str) -> int:
        """The predicted sign of (arm - baseline) for one arm."""
        return int(self.arm_direction.get(arm, self.direction))

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """The primary metric first, then the secondary ones."""
        return (self.metric, *self.secondary)


def typed(node: Any) -> SweepSpec:
    """A :class:`SweepSpec` from a mapping (unknown keys and wrong types raise, naming the key)."""
    merged = OmegaConf.merge(OmegaConf.structured(SweepSpec), node)
    return OmegaConf.to_object(merged)  # type: ignore[return-value]


def load(name: str) -> SweepSpec:
    """The spec of ``conf/sweep/<name>.yaml`` (read as written: no composition needed)."""
    path = CONF_DIR / "sweep" / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.yaml")))
        raise ValueError(f"unknown sweep {name!r}; available: {known} (files in conf/sweep/)")
    node = OmegaConf.select(OmegaConf.load(path), "rlvr.sweep")
    if node is None:
        raise ValueError(f"[conf/sweep/{name}.yaml: rlvr.sweep] missing: a sweep states its spec")
    return typed(node)


def params(name: str) -> dict[str, list[str]]:
    """The swept keys of ``conf/sweep/<name>.yaml`` and their values, as the file lists them."""
    raw = OmegaConf.load(CONF_DIR / "sweep" / f"{name}.yaml").hydra.sweeper.params
    return {str(k): [x.strip() for x in str(v).split(",")] for k, v in raw.items()}


def planned_runs(name: str, overrides: list[str] | tuple[str, ...] = ()) -> int:
    """Number of runs the sweep file defines (product of its ``hydra.sweeper.params`` lists), with
    any swept key the invocation's ``overrides`` replace (e.g. a pilot's ``rlvr.seed=100,101``)."""
    swept = params(name)
    for o in overrides:
        key, _, value = str(o).partition("=")
        if key in swept:
            swept[key] = value.split(",")
    return math.prod(len(v) for v in swept.values())
