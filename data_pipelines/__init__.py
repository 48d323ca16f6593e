"""Data pipelines: procedural tasks and hub datasets to veRL parquet, filtering, rejection sampling."""
