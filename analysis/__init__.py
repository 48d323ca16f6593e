"""Analysis for RLVR runs: sampling metrics, run readers, the diagnostic checklist, reports, W&B.

Importable core (light: numpy/scipy only)::

    from analysis import pass_at_k, maj_at_k, mean_at_k, bootstrap_ci
    pass_at_k(64, [0, 3, 64], 16)   # vectorised unbiased pass@k (Chen et al. 2021)

Commands (Hydra apps, ``--help`` on each; defaults documented in ``conf/analysis/<command>.yaml``):
``python -m analysis.evaluate`` (pass@k / maj@k / mean@k evaluation), ``python -m
analysis.diagnose`` (the checklist on one run), ``python -m analysis.report`` (compare arms of a
sweep), ``python -m analysis.ablations`` (the ablation report, ``docs/ablations.md``), ``python -m
analysis.estimate`` (generation vs SFT token budget of a recipe), ``python -m
analysis.wandb_report`` (runs into W&B). Run-directory readers and run grouping live in
``core.runs``; synthetic runs for tests in ``analysis.synthetic``.
"""

from analysis.metrics import (
    bootstrap_ci,
    hedges_g,
    maj_at_k,
    mean_at_k,
    pass_at_k,
    seeds_needed,
    t_ci,
    welch_diff_ci,
)

__all__ = [
    "pass_at_k",
    "maj_at_k",
    "mean_at_k",
    "bootstrap_ci",
    "t_ci",
    "hedges_g",
    "welch_diff_ci",
    "seeds_needed",
]
