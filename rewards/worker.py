"""Hard time limits without forking per call: a small pool of persistent worker processes.

What it does: ``call(op, args, timeout_s)`` sends a JSON request to an idle worker process
(started once with ``subprocess.Popen``; it imports SymPy and latex2sympy up front) and waits for
the reply with ``select`` -- which works from any thread and inside daemonic processes, unlike
``signal.alarm`` or ``multiprocessing`` children. A worker that misses the deadline is killed
(its whole process group) and replaced at once, so the caller gets ``TimeoutError`` after
``timeout_s``.
Workers run under an address-space limit (``REWARDS_WORKER_MEM_MB``, default 2048), exit when
their parent's pipe closes, and are killed at interpreter exit. After ``os.fork`` the child
process builds its own pool.

The limit is **CPU time** of the worker (read from ``/proc``; wall time where ``/proc`` is missing):
a call is cut once the worker has computed for ``timeout_s`` seconds, or once ``wall_s`` seconds
(default ``REWARDS_WALL_FACTOR`` = 4 times ``timeout_s``) have passed -- so a right answer is not
turned into a timeout because other processes hold the CPU, and a verdict does not depend on the
machine's load. The limit bounds the work done for a call, from the moment a worker is free: with more scoring
threads than workers (``REWARDS_WORKERS``, default min(4, cores/2)) a call first queues, for at
most ``REWARDS_QUEUE_WAIT_S`` (60 s) -- so contention never turns a right answer into a timeout.
A hot spare worker is kept, so a killed worker is replaced at once and the call after a timeout is
not slowed down. Workers report ready once SymPy is imported (0.3-1 s, depending on load) and warm
their LaTeX parser in idle time.

The one exception to the limit is the very first start of a process's first worker: the call
that triggers it waits for the start-up (so it is not scored as a timeout); ``warmup()`` pays that
cost up front and should be called once before scoring starts.

What it does not do: retry, and it only runs the operations registered in
``rewards._worker_main`` (no arbitrary code).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

_STARTUP_TIMEOUT_S = 120.0
_CPU = threading.local()  # worker CPU seconds used by this thread's calls (benchmarks read it)
_QUEUE_WAIT_S = float(os.environ.get("REWARDS_QUEUE_WAIT_S", "60"))
_POOL_SIZE = int(os.environ.get("REWARDS_WORKERS", max(1, min(4, (os.cpu_count() or 2) // 2))))
WALL_FACTOR = float(os.environ.get("REWARDS_WALL_FACTOR", "4"))  # wall ceiling = this x the CPU limit
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01


class WorkerOpError(RuntimeError):
    """The operation raised inside a healthy worker (the worker is kept)."""


class WorkerBusy(TimeoutError):
    """No worker could take the call before its deadline (none was killed)."""


class _Worker:
    def __init__(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env.setdefault("REWARDS_WORKER_MEM_MB", "2048")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rewards._worker_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        self.ready = False
        self.born = time.monotonic()
        self._buf = b""

    def _readline(self, deadline: float) -> bytes | None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise RuntimeError("reward worker exited")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self, deadline: float) -> bool:
        """Wait until the worker has started (False if not by ``deadline``; it keeps starting)."""
        if self.ready:
            return True
        line = self._readline(deadline)
        if line is None:
            if time.monotonic() - self.born > _STARTUP_TIMEOUT_S:
                raise RuntimeError("reward worker failed to start")
            return False
        if json.loads(line).get("ready") is not True:
            raise RuntimeError("reward worker failed to start")
        self.ready = True
        return True

    def cpu_s(self) -> float | None:
        """CPU seconds this worker has used so far (None where ``/proc`` cannot tell)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime + stime
        except (OSError, IndexError, ValueError):
            return None

    def _reply(self, timeout_s: float, wall_s: float) -> bytes | None:
        """The reply line, or None once the worker used ``timeout_s`` CPU seconds or ``wall_s`` passed."""
        start, cpu0 = time.monotonic(), self.cpu_s()
        wall_end, left = start + wall_s, timeout_s
        while True:
            line = self._readline(min(time.monotonic() + left, wall_end))
            now = time.monotonic()
            if line is not None or now >= wall_end or cpu0 is None:
                return line
            cpu = self.cpu_s()
            used = (cpu - cpu0) if cpu is not None else now - start
            if used >= timeout_s - _TICK_S:
                return None
            left = max(timeout_s - used, 2 * _TICK_S)  # CPU time never runs ahead of wall time

    def call(self, op: str, args: list[Any], timeout_s: float, wall_s: float | None = None) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "args": args}).encode() + b"\n")
        self.proc.stdin.flush()
        line = self._reply(timeout_s, timeout_s * WALL_FACTOR if wall_s is None else wall_s)
        if line is None:
            raise TimeoutError(f"reward worker op {op!r} exceeded {timeout_s}s")
        reply = json.loads(line)
        _CPU.seconds = getattr(_CPU, "seconds", 0.0) + float(reply.get("cpu_s", 0.0))
        _CPU.total = getattr(_CPU, "total", 0.0) + float(reply.get("cpu_s", 0.0))
        if not reply.get("ok"):
            raise WorkerOpError(reply.get("error", "worker error"))
        return reply["value"]

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


class WorkerPool:
    """Up to ``size`` persistent workers shared by all threads of one process."""

    def __init__(self, size: int = _POOL_SIZE) -> None:
        self.size = max(1, size)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self.pid = os.getpid()
        self.restarts = 0
        self._spare: _Worker | None = None  # started once a worker is ready; replaces a killed one at once
        self._started = False  # has any worker of this pool become ready yet?

    def _acquire(self, deadline: float) -> _Worker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if len(self._all) < self.size:
                w = _Worker()
                self._all.append(w)
                return w
        try:
            return self._idle.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise WorkerBusy("no reward worker free before the deadline") from None

    def _replace(self, w: _Worker) -> None:
        w.kill()
        with self._lock:
            if w in self._all:
                self._all.remove(w)
            self.restarts += 1
            fresh = self._spare if self._spare is not None else _Worker()
            self._spare = _Worker()  # the next spare starts while nobody waits for it
            self._all.append(fresh)
        self._idle.put(fresh)

    def _first_start(self, w: _Worker) -> None:
        """The process's first worker start is a one-off cost outside any call's limit."""
        if not w.wait_ready(time.monotonic() + _STARTUP_TIMEOUT_S):
            raise RuntimeError("reward worker failed to start")
        with self._lock:
            self._started = True
            if self._spare is None:
                self._spare = _Worker()

    def call(self, op: str, args: list[Any], timeout_s: float, wall_s: float | None = None) -> Any:
        """Run ``op(*args)`` in a worker; ``TimeoutError`` once it has computed for ``timeout_s`` CPU
        seconds or ``wall_s`` seconds (default ``WALL_FACTOR * timeout_s``) have passed.

        The limit starts when a worker is free (waiting for one, when more threads than workers
        score at once, is bounded separately by ``REWARDS_QUEUE_WAIT_S``). Only a worker that overran
        while computing is killed.
        """
        w = self._acquire(time.monotonic() + _QUEUE_WAIT_S)
        wall = timeout_s * WALL_FACTOR if wall_s is None else wall_s
        deadline = time.monotonic() + wall
        try:
            if not self._started:
                self._first_start(w)
                deadline = time.monotonic() + wall
            if not w.wait_ready(time.monotonic() + timeout_s):
                self._idle.put(w)
                raise WorkerBusy("reward worker still starting at the deadline")
            value = w.call(op, args, timeout_s, max(0.0, deadline - time.monotonic()))
        except WorkerBusy:
            raise
        except TimeoutError:
            self._replace(w)
            raise
        except WorkerOpError:
            self._idle.put(w)
            raise
        except (RuntimeError, OSError, ValueError) as e:
            self._replace(w)
            raise RuntimeError(str(e)) from e
        self._idle.put(w)
        return value

    def ensure_started(self) -> None:
        """Block once per process until the first worker is ready (no-op afterwards)."""
        if self._started:
            return
        w = self._acquire(time.monotonic() + _STARTUP_TIMEOUT_S)
        try:
            if not self._started:
                self._first_start(w)
        finally:
            self._idle.put(w)

    def warmup(self) -> None:
        """Start every worker, wait until each has imported SymPy and warmed its parser."""
        end = time.monotonic() + _STARTUP_TIMEOUT_S
        ws = [self._acquire(end) for _ in range(self.size)]
        for w in ws:
            self._first_start(w)
        try:
            for w in ws:
                w.call("warmup", [], _STARTUP_TIMEOUT_S)
        finally:
            for w in ws:
                self._idle.put(w)

    def close(self) -> None:
        with self._lock:
            for w in self._all + ([self._spare] if self._spare else []):
                w.kill()
            self._all.clear()
            self._spare = None
        while not self._idle.empty():
            self._idle.get_nowait()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> WorkerPool:
    """The process-wide pool (rebuilt in a forked child; the parent's workers stay the parent's)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.pid != os.getpid():
            _POOL = WorkerPool()
        return _POOL


def cpu_total_s() -> float:
    """Worker CPU seconds used by this thread's calls so far (never reset: callers take differences)."""
    return float(getattr(_CPU, "total", 0.0))


def take_cpu_s() -> float:
    """Worker CPU seconds used by this thread's calls since the last ``take_cpu_s`` (then reset to 0)."""
    used = float(getattr(_CPU, "seconds", 0.0))
    _CPU.seconds = 0.0
    return used


def reset_pool() -> None:
    """Kill this process's workers and forget them: the next ``pool()`` starts fresh ones (cold caches)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is not None and _POOL.pid == os.getpid():
            _POOL.close()
        _POOL = None


@atexit.register
def _shutdown() -> None:
    if _POOL is not None and _POOL.pid == os.getpid():
        _POOL.close()
