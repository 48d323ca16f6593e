"""Recipes: composing, validating and launching RLVR recipes on veRL or the local CPU engine.

Heavy imports (veRL, torch) happen inside functions, so importing this package is cheap.
"""

import core  # noqa: F401 - first: pins the CPU arithmetic before this package imports torch (core.numerics)
