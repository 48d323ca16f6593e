"""Data pipelines: procedural tasks and hub datasets to veRL parquet, filtering, rejection sampling."""

import core  # noqa: F401 - first: pins the CPU arithmetic before this package imports torch (core.numerics)
