"""The ``results-status`` block: every registered experiment, the commit it was recorded at and the
CPU arithmetic it ran under (pinned by ``core.numerics``, or recorded before); and the
``results-inputs`` block: the base models and test splits the runs name, by hash; and the
``results-agreement`` block: the same run recorded by several experiments, compared.

The registry is ``make results``'s (``experiments.registry``); this module only renders its table.
"""

from __future__ import annotations

from docgen.engine import Rendered
from experiments.registry import agreement, inputs, status


def results_status() -> Rendered:
    """Which results files were recorded at which commit and under which CPU arithmetic."""
    return Rendered(status().markdown())


def results_inputs() -> Rendered:
    """The base models and test splits every experiment's runs name, by hash."""
    return Rendered(inputs().markdown())


def results_agreement() -> Rendered:
    """Runs recorded by several experiments at several commits, and whether their curves agree."""
    return Rendered(agreement().markdown())
