"""Clusters the project starts and stops itself on one machine (for tests and rehearsals).

- :mod:`core.clusters.ray_local`: a multi-node Ray cluster (a head and worker nodes, each its own
  raylet) in its own temp dir on free ports, stopped by the process ids it started, never by
  ``ray stop``.

What a veRL run checks on a cluster before it joins one is :mod:`recipes.cluster`.
"""
