"""Code sandbox: run candidate code against hidden tests in an isolated, limited process.

What it does: ``run_tests(code, tests)`` writes the candidate to ``solution.py`` in a fresh
temporary directory and runs ``rewards/_sandbox_child.py`` there with ``python -I -S`` inside
``unshare --user --net --pid --fork`` (no network, its own PID namespace: the parent and every
other process are unaddressable), in a new session/process group, with a minimal environment.
The child lowers its own limits (CPU seconds, address space, file size, 32 descriptors, no new
processes) and installs an audit hook (no fork/exec/kill/sockets/ctypes; writes only inside
its directory; reads only there and in the standard library -- so no hidden test, dataset or
``/proc/<pid>/mem`` can be read). Only the test *inputs* enter the sandbox; outputs come back as
JSON lines on a dedicated pipe and are compared here with the expected outputs, which never
leave this process -- so exiting early, printing "OK", patching ``unittest`` or writing to the
pipe cannot make a wrong program pass. Afterwards the whole process group is SIGKILLed and the
directory removed, whatever happened.

Test format (APPS/TACO, as veRL's code datasets store it): ``{"inputs": [...], "outputs": [...]}``
for stdin/stdout programs, plus ``"fn_name"`` for function-call tests (inputs are argument lists).

What it does not do: languages other than Python, third-party imports (the child runs without
site-packages), or stronger isolation than namespaces + rlimits + audit hook (no seccomp). Without
``unshare`` (not on this machine) network/PID isolation falls back to the audit hook alone.
"""

from __future__ import annotations

import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

_CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sandbox_child.py")
_MAX_RESULT_BYTES = 8 << 20
_STARTUP_S = 0.2  # interpreter + namespace start-up, on top of the suite's time limit
_UNSHARE: list[str] | None = None


@dataclass(frozen=True)
class SandboxResult:
    """``passed`` of ``total`` tests; ``status`` is ok | wrong | error | timeout; ``reason`` says why.

    ``error`` means the program did not run to an answer: the sandbox blocked an operation (``reason``
    starts with "sandbox:"), it raised (the exception type), or it died (exit status). ``wrong`` is
    kept for programs that ran and printed / returned wrong outputs.
    """

    passed: int
    total: int
    status: str
    reason: str = ""

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


def _unshare_prefix() -> list[str]:
    global _UNSHARE
    if _UNSHARE is None:
        cmd = ["unshare", "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child"]
        try:
            ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        _UNSHARE = cmd if ok else []
    return _UNSHARE


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the sandbox's process group and wait (bounded) until no member is left."""
    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        if proc.poll() is None:
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        else:
            time.sleep(0.005)
    proc.wait()


def _holders(pipe_ino: int, workdir: str) -> list[int]:
    """PIDs (other than ours) that hold the result pipe or whose working directory is the sandbox's."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{d}/cwd")
            if cwd == workdir or cwd.startswith(workdir + os.sep):
                out.append(int(d))
                continue
            for fd in os.listdir(f"/proc/{d}/fd"):
                if os.readlink(f"/proc/{d}/fd/{fd}") == f"pipe:[{pipe_ino}]":
                    out.append(int(d))
                    break
        except OSError:
            continue
    return out


def _reap_orphans(r_fd: int, workdir: str) -> int:
    """Kill whatever escaped the process group and still holds the result pipe or the directory.

    A writer left on the pipe means a process outlived the sandbox (e.g. it left the group with
    ``setsid`` where no PID namespace is available). Returns how many processes were killed.
    """
    os.set_blocking(r_fd, False)
    try:
        while os.read(r_fd, 1 << 16):
            pass
        return 0  # EOF: no writer left
    except BlockingIOError:
        pass  # a writer is still alive
    ino, killed = os.fstat(r_fd).st_ino, 0
    end = time.monotonic() + 5.0
    while time.monotonic() < end:
        pids = _holders(ino, workdir)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return killed


def _norm_stdout(s: str) -> str:
    return "\n".join(line.rstrip() for line in s.strip().splitlines())


def _same(got: Any, want: Any, stdio: bool) -> bool:
    if stdio:
        return isinstance(got, str) and _norm_stdout(got) == _norm_stdout(str(want))
    if isinstance(got, dict) and "__error__" in got:
        return False
    return got == want or (isinstance(want, list) and len(want) == 1 and got == want[0])


def _read_results(fd: int, deadline: float) -> bytes:
    buf = b""
    while len(buf) < _MAX_RESULT_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
    return buf


def _spawn(workdir: str, fn_name: str, w_fd: int, limits: str) -> subprocess.Popen[bytes]:
    """The sandbox child (``_sandbox_child.py``) in ``workdir``, writing results to ``w_fd``."""
    cmd = [
        *_unshare_prefix(),
        sys.executable,
        "-I",
        "-S",
        _CHILD,
        "call" if fn_name else "stdio",
        fn_name,
        str(w_fd),
        limits,
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
    }
    return subprocess.Popen(
        cmd,
        cwd=workdir,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(w_fd,),
        start_new_session=True,
    )


def _remove_workdir(workdir: str) -> None:
    """Delete ``workdir`` even where the candidate removed its own permissions."""
    for root, dirs, files in os.walk(workdir):
        for name in dirs + files:
            try:
                os.chmod(os.path.join(root, name), 0o700, follow_symlinks=False)
            except OSError:
                pass
    shutil.rmtree(workdir, ignore_errors=True)


def _parse_records(raw: bytes) -> tuple[dict[int, Any], list[str]]:
    """Per-test outputs (the first record of a test counts) and the blocked operations reported."""
    got: dict[int, Any] = {}
    blocked: list[str] = []
    for line in raw.splitlines():
        try:
            rec = json.loads(line)
            i = int(rec["i"])
            if i not in got and isinstance(rec.get("blocked"), str):
                blocked.append(rec["blocked"][:200])
            got.setdefault(i, rec["out"])
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
    return got, blocked


def run_tests(
    code: str,
    tests: dict[str, Any],
    timeout_s: float = 1.0,
    memory_mb: int = 512,
    file_size_kb: int = 1024,
) -> SandboxResult:
    """Run ``code`` on hidden ``tests`` with a wall-clock limit of ``timeout_s`` for the whole suite.

    >>> run_tests("print(int(input()) * 2)", {"inputs": ["3\\n", "5\\n"], "outputs": ["6\\n", "10\\n"]}).all_passed
    True
    >>> run_tests("import sys; sys.exit(0)", {"inputs": ["3\\n"], "outputs": ["6\\n"]}).status
    'wrong'
    """
    inputs, outputs = list(tests.get("inputs", [])), list(tests.get("outputs", []))
    fn_name = tests.get("fn_name") or ""
    if not inputs or len(inputs) != len(outputs):
        return SandboxResult(0, len(outputs), "error")
    workdir = os.path.realpath(tempfile.mkdtemp(prefix="rewards-sbx-"))
    r_fd, w_fd = os.pipe()
    proc = None
    try:
        with open(os.path.join(workdir, "solution.py"), "w") as f:
            f.write(code)
        limits = f"{math.ceil(timeout_s) + 1},{memory_mb << 20},{file_size_kb << 10}"
        proc = _spawn(workdir, fn_name, w_fd, limits)
        os.close(w_fd)
        w_fd = -1
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(inputs).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + timeout_s + _STARTUP_S
        raw = _read_results(r_fd, deadline)
        timed_out = time.monotonic() >= deadline
    finally:
        if proc is not None:
            _kill_group(proc)
        if w_fd >= 0:
            os.close(w_fd)
        _reap_orphans(r_fd, workdir)
        os.close(r_fd)
        _remove_workdir(workdir)
    got, blocked = _parse_records(raw)
    passed = sum(i in got and _same(got[i], want, not fn_name) for i, want in enumerate(outputs))
    return SandboxResult(passed, len(outputs), *_status(passed, len(outputs), got, blocked, timed_out, proc))


def _status(
    passed: int, total: int, got: dict[int, Any], blocked: list[str], timed_out: bool, proc: Any
) -> tuple[str, str]:
    """(status, reason) of a run: a blocked operation or a crash is an error with its reason."""
    if passed == total:
        return "ok", ""
    if blocked:
        return "error", blocked[0]
    if timed_out:
        return "timeout", "time limit of the test suite"
    errors = [o["__error__"] for o in got.values() if isinstance(o, dict) and "__error__" in o]
    if errors:
        return "error", f"raised {errors[0]}"
    if not got:
        return "error", f"no result (exit status {proc.returncode if proc is not None else None})"
    return "wrong", f"{passed}/{total} tests passed"
