"""Running veRL's trainer on a cluster of nodes: what the project checks and starts there.

- :mod:`recipes.cluster.ray_check`: an existing Ray cluster (``RAY_ADDRESS``) is checked against
  what the config asks for (``trainer.nnodes`` alive nodes with the GPUs and CPUs veRL's resource
  pools reserve) before a run starts; the resource flags every ``ray start`` of a node passes
  (:func:`~recipes.cluster.ray_check.node_start_args`); waiting until a cluster's nodes have joined
  (``python -m recipes.cluster.ray_check wait``).
- :mod:`recipes.cluster.slurm`: a run submitted to Slurm as one job (``cluster=slurm``) whose script
  starts Ray on the job's nodes, runs the run once on the first, and stops Ray on every node.

Starting and stopping the clusters themselves is :mod:`core.clusters`.
"""
