"""Benchmarks (not tests): speed and error-rate measurements, run as ``python -m benchmarks.<name>``.

Verifier (``bench_rewards`` over ``devset/`` and ``heldout/``), local engine (``bench_engine``,
``profile_engine``), analysis, data filter and pre-flight timings. Each records its numbers in
``results/``. The experiment drivers (``make results``) are ``experiments``; the docs rendered from
the results are ``docgen``.
"""

import core  # noqa: F401 - first: pins the CPU arithmetic before this package imports torch (core.numerics)
