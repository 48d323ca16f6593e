"""Experiment drivers: the commands that run what the docs cite and record it in ``results/``.

- :mod:`experiments.registry`: ``make results NAME=<experiment>``, every experiment with the one
  command that produces it (``python -m experiments.<driver> ...``, ``recipes.sweep``,
  ``recipes.pipeline``, ``benchmarks.<bench>``), and the status table of what is recorded;
- :mod:`experiments.seed_table`, :mod:`experiments.r1_zero_curves`: laptop runs per recipe x seed;
- :mod:`experiments.budget` (``make budget``) and :mod:`experiments.thinking_budget`: seed 002's
  thinking-budget curve;
- :mod:`experiments.rm_study` (with ``rm_common``, ``rm_labels``, ``rm_runs``, ``rm_opd``): seed
  004's reward-model experiments.

Results files record the command that wrote them as history: files recorded before this package
existed name ``python -m benchmarks.<driver>`` (``benchmarks.experiments`` for the registry), which is
now ``python -m experiments.<driver>`` (``experiments.registry``); nothing re-runs a recorded command
line, ``make results`` runs the registry's. Measurements of speed and error rates live in
``benchmarks``; rendering the docs from the results in ``docgen``. Nothing here imports either.
"""

import core  # noqa: F401 - first: pins the CPU arithmetic before this package imports torch (core.numerics)
