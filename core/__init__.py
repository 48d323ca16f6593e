"""What every package shares, and nothing else: the ``Registry``, the model builder
(``core.model``), the KV-cache sampler (``core.sampler``), the sampling-and-scoring layer
(``core.sampling``), prompt rows (``core.data``), run-directory readers and the one run-grouping
function (``core.runs``), Hydra composition of ``conf/`` (``core.compose``), the command-line
helpers (``core.cli``) and :func:`versions`.

Importing ``core`` first pins the CPU arithmetic (:func:`core.numerics.pin`), so a model built on
any x86 machine computes the same floats, then runs :func:`core.env.setup` once: library caches
default to the run cache (``$RLVR_CACHE``), never ``~``, and veRL's CPU warnings are filtered.
Every package's ``__init__`` imports ``core`` first, so every entry point pins before torch computes
and before veRL, ``datasets``, ``wandb`` or matplotlib (``tests/core/test_numerics.py`` checks it).

Arrows point down: ``analysis -> data_pipelines -> rewards -> core`` (``recipes`` may use all);
``core`` imports none of the project's other packages (``tests/test_architecture.py`` checks it).
"""

from core import numerics

numerics.pin()

from core import env  # noqa: E402 - after the pin
from core.versions import versions  # noqa: E402 - after the pin, before anything imports torch

env.setup()

__all__ = ["versions"]
