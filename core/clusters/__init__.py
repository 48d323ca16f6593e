"""Clusters the project starts and stops itself on one machine (for tests and rehearsals).

- :mod:`core.clusters.ray_local`: a multi-node Ray cluster (a head and worker nodes, each its own
  raylet) in its own temp dir on free ports, stopped by the process ids it started, never by
  ``ray stop``.
- :mod:`core.clusters.slurm_local`: a multi-node Slurm cluster (munged, slurmctld, one ``slurmd -N``
  per node) with its key, ``slurm.conf``, state and logs in its own folder, installed through
  apt-get when absent, stopped by the process ids it started.

What a veRL run checks on a cluster before it joins one is :mod:`recipes.cluster`.
"""
