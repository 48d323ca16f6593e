"""Run a veRL launch (``<run_dir>/launch.sh``) and own every process it starts.

:func:`launch` runs ``launch.sh`` in a process group of its own, copies its output to the terminal
and to ``<run_dir>/train.log``, and however the run ends (it finishes, fails, Ctrl-C, SIGTERM, a
time limit) stops every process it started: each carries :data:`MARK` in its environment, which
Ray's servers and workers inherit although they run in sessions of their own. Processes an earlier
launch of the same run directory left behind (its launcher killed with SIGKILL, which nothing can
catch) are stopped before a new launch starts. After every launch :func:`merge_metrics` rebuilds
``metrics.jsonl`` from the trainer invocations' files in ``metrics.d/`` (a resumed invocation
replaces the steps after the one it resumed from). :func:`failure` turns a failed launch into one
line: the last exception the log shows. Not covered: runs that Slurm or a remote Ray cluster start
elsewhere (their processes are not this machine's).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import psutil

#: Environment variable that marks every process of one launch: ``<run key>:<launcher pid>``.
MARK = "RLVR_LAUNCH"

#: Exit code of a launch stopped by its time limit.
TIMEOUT = 124


def run_key(run_dir: Path) -> str:
    """A short hash of the resolved run directory (the first part of a launch's :data:`MARK`)."""
    return hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:12]


def launch(run_dir: Path, timeout: float | None = None, echo: bool = True) -> int:
    """Run ``run_dir/launch.sh``; return its exit code (:data:`TIMEOUT` after ``timeout`` seconds).
    Output goes to ``train.log`` (appended) and, with ``echo``, to stderr. See the module docstring."""
    run_dir = Path(run_dir)
    key = run_key(run_dir)
    left = stop_launch(key)
    if left:
        print(
            f"[launch] stopped {left} processes an earlier, killed launch of {run_dir} left running",
            file=sys.stderr,
            flush=True,
        )
    mark = f"{key}:{os.getpid()}"
    log = open(run_dir / "train.log", "ab")  # noqa: SIM115 - open for the whole run
    proc = subprocess.Popen(
        ["bash", str(run_dir / "launch.sh")],
        env={**os.environ, MARK: mark},
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    previous = signal.signal(signal.SIGTERM, _raise_exit)
    # a reader thread: Ray's processes inherit the pipe and may hold it open after launch.sh ends
    reader = threading.Thread(target=_copy, args=(proc, log, echo), daemon=True)
    reader.start()
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return TIMEOUT
    finally:
        stop_launch(mark)
        reader.join(timeout=10)
        log.close()
        signal.signal(signal.SIGTERM, previous)
        merge_metrics(run_dir)


def _copy(proc: subprocess.Popen, log: Any, echo: bool) -> None:
    assert proc.stdout is not None
    for line in iter(proc.stdout.readline, b""):
        log.write(line)
        log.flush()
        if echo:
            sys.stderr.buffer.write(line)
            sys.stderr.flush()


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def launched(prefix: str) -> list[Any]:
    """The live processes whose :data:`MARK` starts with ``prefix`` (one launch's mark, or a run
    key for every launch of that run directory)."""
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.pid != os.getpid() and p.environ().get(MARK, "").startswith(prefix):
                out.append(p)
        except (psutil.Error, OSError):
            continue
    return out


def stop_launch(prefix: str, grace: float = 5.0) -> int:
    """SIGTERM every process of :func:`launched` ``(prefix)``, SIGKILL what is left after ``grace``
    seconds; returns how many there were."""
    procs = launched(prefix)
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    return len(procs)


def merge_metrics(run_dir: Path) -> Path | None:
    """``metrics.jsonl`` from the files of ``metrics.d/`` in the order they were written: each file's
    lines replace the earlier files' lines of the steps after its first step (a resume re-logs from
    the step it resumed at; lines of that step are kept from both). None when there are none."""
    parts = sorted((Path(run_dir) / "metrics.d").glob("*.jsonl"), key=lambda p: int(p.stem))
    lines: list[tuple[int, bytes]] = []
    for part in parts:
        new = [(_step(b), b) for b in part.read_bytes().splitlines() if b.strip()]
        new = [(s, b) for s, b in new if s is not None]
        if not new:
            continue
        first = new[0][0]
        lines = [(s, b) for s, b in lines if s <= first] + new
    if not parts:
        return None
    out = Path(run_dir) / "metrics.jsonl"
    out.write_bytes(b"".join(b + b"\n" for _, b in lines))
    return out


def _step(line: bytes) -> int | None:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return None


_EXC = re.compile(
    r"^(?:\x1b\[[0-9;]*m)?(?:\([^)]*\)\s*)?(?:\x1b\[[0-9;]*m)?\s*((?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt)\b:?.*)$"
)


def failure(run_dir: Path, code: int) -> str:
    """One line for a failed launch: the exit code and the last exception ``train.log`` shows."""
    log = Path(run_dir) / "train.log"
    last = ""
    if log.is_file():
        for line in log.read_text(errors="replace").splitlines()[-400:]:
            m = _EXC.match(line.strip())
            if m and not m.group(1).startswith(("UserWarning", "DeprecationWarning", "FutureWarning")):
                last = m.group(1).strip()
    why = "time limit" if code == TIMEOUT else f"exit code {code}"
    return f"veRL's trainer stopped ({why}){': ' + last[:300] if last else ''} (full log: {log})"
