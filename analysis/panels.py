"""The metric panels of comparison reports: what a curve shows and which logged keys feed it.

:data:`PANELS` maps a panel name to a :class:`Panel` (title, candidate metric keys -- the first
one a run logged wins, ``^...`` is a regex -- and which direction is better); ``PANEL_ORDER`` is
the reading order. The HTML/Markdown report (``analysis.report``) and the W&B Report
(``analysis.wandb_report``) draw the same panels. Not covered: computing the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.registry import Registry
from core.runs import ZERO_VAR_KEYS, Run


@dataclass(frozen=True)
class Panel:
    title: str
    keys: tuple[str, ...]  # first logged wins; "^..." is a regex
    higher_is_better: bool | None = None


PANELS: Registry[Panel] = Registry("panel")
_IN_ORDER = {
    "val_accuracy": Panel(
        "validation accuracy", ("^val-core/.*/acc/mean@", "^val-core/.*/reward/mean@"), True
    ),
    "score": Panel("training score (critic/score/mean)", ("critic/score/mean",), True),
    "reward": Panel("training reward (critic/rewards/mean)", ("critic/rewards/mean",), True),
    "unfiltered_score": Panel(
        "unfiltered score (before dynamic sampling)", ("rlvr/unfiltered_score/mean",), True
    ),
    "response_length": Panel("response length", ("response_length/mean",)),
    "entropy": Panel("entropy", ("actor/entropy",)),
    "clipfrac": Panel("clip fraction", ("actor/pg_clipfrac",)),
    "ppo_kl": Panel("KL to old policy (actor/ppo_kl)", ("actor/ppo_kl",)),
    "kl_loss": Panel("KL to reference (actor/kl_loss)", ("actor/kl_loss", "critic/kl")),
    "zero_var": Panel("share of zero-variance groups", ZERO_VAR_KEYS, False),
    "gen_batches": Panel("generation batches per step", ("rlvr/gen_batches", "train/num_gen_batches"), False),
    "probs_diff": Panel("rollout vs training prob diff", ("training/rollout_probs_diff_mean",), False),
}
for _name, _panel in _IN_ORDER.items():
    PANELS.add(_name, _panel)
PANEL_ORDER = list(_IN_ORDER)


def panels_for(runs: list[Run]) -> list[tuple[str, Panel]]:
    """The registered panels in order, with the validation-accuracy panel split into one panel
    per logged ``val-core/<data_source>/acc/mean@N`` key (several held-out sets)."""
    val_keys = sorted({k for r in runs for k in r.metrics if re.match(r"val-core/.*/acc/mean@", k)})
    out: list[tuple[str, Panel]] = []
    for name in PANEL_ORDER:
        if name == "val_accuracy" and len(val_keys) > 1:
            out += [(f"val_{i}", Panel(f"validation {k}", (k,), True)) for i, k in enumerate(val_keys)]
        else:
            out.append((name, PANELS.get(name)))
    return out
