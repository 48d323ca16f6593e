"""One writer per folder: an exclusive lock file held while an experiment or a run writes into it.

Two experiment runs writing into the same run folders or the same ``results/<experiment>/`` at
once interleave their files (a run record of one beside the curves of the other, stale-record
cleanup deleting the other's fresh records). :func:`hold` takes an exclusive, non-blocking
``flock`` on ``<folder>/.lock`` for the duration of a ``with`` block and writes the holder's PID,
command and start time into it; a second process asking for the same folder fails at once with
:class:`FolderBusy`, naming the folder, the PID that holds it and the fix. The kernel drops the
lock when the holder exits, however it exits, so a killed run never leaves a stale lock.

Re-entrant: a process that already holds a folder (``hold`` nested in the same process) and the
child processes it starts (the holder exports the folder in ``RLVR_HELD_LOCKS``) pass through.

What it does not do: lock across machines on a network file system without ``flock`` support, or
stop a writer that does not ask for the lock.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "RLVR_HELD_LOCKS"
LOCK_NAME = ".lock"
_held: dict[Path, int] = {}  # folder -> nesting depth, in this process


class FolderBusy(RuntimeError):
    """Another process holds the folder's lock (the message names it, its PID and the fix)."""


def _inherited() -> set[Path]:
    return {Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p}


def holder(folder: Path) -> str:
    """What ``<folder>/.lock`` says about its holder (``pid=… command=… since=…``), or ``unknown``."""
    try:
        return (Path(folder) / LOCK_NAME).read_text().strip() or "unknown"
    except OSError:
        return "unknown"


def _busy(folder: Path, what: str, fix: str) -> FolderBusy:
    info = holder(folder)
    pid = next((w.removeprefix("pid=") for w in info.split() if w.startswith("pid=")), "?")
    return FolderBusy(
        f"[lock] {what} {folder} is in use by another run ({info}); two runs writing into the same "
        f"folders corrupt each other's results. Fix: wait for PID {pid} to finish (or stop it: "
        f"kill {pid}){', or ' + fix if fix else ''}."
    )


@contextmanager
def hold(folder: Path | str, what: str = "folder", fix: str = "") -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created if missing) for the ``with`` block.

    Raises :class:`FolderBusy` at once if another process holds it; ``what`` names the folder's
    role in that message (``results folder``, ``run folder``) and ``fix`` adds a way around it.
    """
    folder = Path(folder).resolve()
    if folder in _held or folder in _inherited():
        _held[folder] = _held.get(folder, 0) + 1
        try:
            yield folder
        finally:
            _held[folder] -= 1
            if not _held[folder]:
                del _held[folder]
        return
    folder.mkdir(parents=True, exist_ok=True)
    fh = open(folder / LOCK_NAME, "a+")  # noqa: SIM115 -- held open for the whole block
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(folder, what, fix) from None
        fh.seek(0)
        fh.truncate()
        cmd = shlex.join(["python", *sys.argv]) if sys.argv and sys.argv[0] else "python"
        fh.write(f"pid={os.getpid()} since={time.strftime('%Y-%m-%dT%H:%M:%S%z')} command={cmd}\n")
        fh.flush()
        _held[folder] = 1
        before = os.environ.get(ENV)
        os.environ[ENV] = os.pathsep.join(p for p in (before, str(folder)) if p)
        try:
            yield folder
        finally:
            del _held[folder]
            if before is None:
                os.environ.pop(ENV, None)
            else:
                os.environ[ENV] = before
            fh.seek(0)
            fh.truncate()  # no holder any more (the file stays: deleting it would race a waiter)
    finally:
        fh.close()
