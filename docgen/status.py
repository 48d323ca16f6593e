"""The ``results-status`` block: every registered experiment, the commit it was recorded at and the
CPU arithmetic it ran under (pinned by ``core.numerics``, or recorded before).

The registry is ``make results``'s (``experiments.registry``); this module only renders its table.
"""

from __future__ import annotations

from docgen.engine import Rendered
from experiments.registry import status


def results_status() -> Rendered:
    """Which results files were recorded at which commit and under which CPU arithmetic."""
    return Rendered(status().markdown())
