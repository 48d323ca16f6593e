"""Which run a pre-flight judges: the run on GPU nodes, or the CPU run veRL's trainer makes here.

``engine=verl`` on a machine without a GPU can mean two runs (``recipes.preflight.__main__.decide``, ``target=auto``):

- **the CPU run**, what ``make run ENGINE=verl`` runs on this machine: a profile that asks for no
  GPU (``trainer.n_gpus_per_node=0``: the laptop profiles, which ``make run`` and the pre-flight pick
  when no scale is given). The checks judge the config with ``make run``'s CPU changes applied
  (:func:`recipes.launch_cpu.apply`);
- **a GPU run planned from here** (a laptop or a cluster's login node, before renting GPUs): a
  profile that asks for GPUs (``scale=gpu_node``, ``scale=multi_node``). Validation, lengths and the
  memory plan judge the config the GPU nodes will run, unchanged.

``target=gpu`` judges the GPU run whatever the profile (with no scale given: the published config);
``target=cpu`` judges the CPU run ``make run ENGINE=verl`` would make of any profile here. With CUDA
GPUs here, or for a dry run, the run is the GPU run; ``engine=local`` is the local engine's CPU run.
The opt-in rehearsals (``verl_engine``, ``verl_trainer``) always run a CPU copy of their own
(:data:`REHEARSED_ON`). :func:`describe` names the config a check judged from the config itself (the
CPU changes set ``trainer.device=cpu``), so ``recipes.run``'s pre-flight of a CPU launch says so too.
Not covered: choosing the engine (:func:`recipes.run.resolve_engine`).
"""

from __future__ import annotations

from omegaconf import DictConfig

from recipes.preflight.context import sel

#: The values of the pre-flight key ``target``.
TARGETS = ("auto", "cpu", "gpu")

#: What the opt-in rehearsals judge, whatever the target: a CPU copy of the config.
REHEARSED_ON = {
    "verl_engine": "a CPU copy: the actor/ref sections on veRL's engine in one process (recipes.preflight.verl_cpu)",
    "verl_trainer": "a CPU copy at the rehearsal's size, with make run's CPU changes (recipes.launch_cpu)",
}


def known(asked: str) -> str:
    """``asked`` when it is one of :data:`TARGETS`, else a ``ValueError`` naming ``target``."""
    if asked not in TARGETS:
        raise ValueError(f"[target] unknown target {asked!r}; fix: target=auto, target=cpu or target=gpu")
    return asked


def describe(cfg: DictConfig, engine: str) -> str:
    """The run a config is, as the report names it."""
    scale = cfg.rlvr.scale or "published"
    if engine != "verl":
        return f"the local engine's run on this CPU (scale={scale})"
    if sel(cfg, "trainer.device") == "cpu":
        return (
            f"the CPU run of veRL's trainer on this machine (scale={scale}, make run's CPU changes applied)"
        )
    gpus, nodes = int(sel(cfg, "trainer.n_gpus_per_node") or 0), int(sel(cfg, "trainer.nnodes") or 1)
    return f"the GPU run (scale={scale}: {gpus} GPUs x {nodes} node{'s' * (nodes != 1)})"


def judged(check: str, cfg: DictConfig, engine: str) -> str:
    """The config ``check`` judges: a rehearsal's CPU copy, else the config itself."""
    return REHEARSED_ON.get(check) or describe(cfg, engine)
