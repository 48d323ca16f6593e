"""Stopping processes by pid, the one way the project's clusters do it (never by name, never ``ray stop``).

:func:`terminate` sends SIGTERM to the given processes, waits up to ``grace`` seconds for them to
end (psutil polls each one at most every 40 ms, so it returns as soon as the last one is gone),
then SIGKILLs the survivors and waits for those as well. :func:`send` signals one process and
ignores one that is already gone. Users: :mod:`core.clusters.ray_local`,
:mod:`core.clusters.slurm_local` and the Slurm job's node keeper (``recipes.cluster.slurm``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterable

import psutil

#: Seconds :func:`terminate` waits for SIGKILLed processes (the kernel ends them at once).
KILL_WAIT = 5.0


def send(p: psutil.Process, sig: int) -> None:
    """Send ``sig`` to ``p``; nothing when it is gone already or not ours to signal."""
    try:
        p.send_signal(sig)
    except psutil.Error:
        pass


def terminate(procs: Iterable[psutil.Process], grace: float) -> list[psutil.Process]:
    """SIGTERM ``procs``, SIGKILL the ones still alive after ``grace`` seconds; returns those still
    alive after the SIGKILL (empty when every one ended)."""
    procs = list(procs)
    for p in procs:
        send(p, signal.SIGTERM)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        send(p, signal.SIGKILL)
    _, left = psutil.wait_procs(alive, timeout=KILL_WAIT)
    return left
