"""Harness that runs inside the code sandbox (``python -I -S _sandbox_child.py MODE FN RESULT_FD LIMITS``).

It is the only module of the package that executes model code, and it only runs inside the
sandbox process built by ``rewards.sandbox``. Order matters: it reads the test inputs from stdin,
lowers its own resource limits (hard = soft, so the candidate cannot raise them), installs an
audit hook (no new processes, signals, sockets, ctypes; files only under the working directory,
reads also from the standard library), and only then runs ``solution.py`` once per test. Each
result goes to RESULT_FD as one JSON line ``{"i": i, "out": ...}``; the expected outputs never
enter this process, so writing to that descriptor cannot make a wrong program pass. An operation the
hook refuses is recorded (even if the candidate catches the exception) and reported with the test's
record as ``"blocked": "<reason>"``, so the caller can say "blocked", not "wrong".
"""

import io
import json
import os
import resource
import sys


def _limits(spec):
    cpu, mem, fsize = (int(x) for x in spec.split(","))
    for res, val in (
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_NOFILE, 32),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, 0),
    ):
        try:
            resource.setrlimit(res, (val, val))
        except (ValueError, OSError):
            pass


BLOCKED_PREFIXES = (
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.spawn",
    "os.exec",
    "os.system",
    "os.kill",
    "os.killpg",
    "os.putenv",
    "os.unsetenv",
    "subprocess.",
    "socket.",
    "ctypes.",
    "signal.",
    "sys.setrecursionlimit",
    "os.chdir",
    "os.setuid",
    "os.setgid",
    "pty.",
    "winreg",
    "webbrowser",
    "mmap.",
    "gc.get_",  # gc.get_objects / get_referrers / get_referents would reach this hook's state
)
BLOCKED_MODULES = frozenset(
    {
        "ctypes",
        "_ctypes",
        "socket",
        "_socket",
        "subprocess",
        "_posixsubprocess",
        "multiprocessing",
        "_multiprocessing",
        "signal",
        "_signal",
        "pty",
        "fcntl",
        "mmap",
        "resource",
        "gc",
    }
)
WRITE_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.link",
        "os.symlink",
        "os.truncate",
        "os.utime",
        "shutil.rmtree",
    }
)
# listing a directory: inside the sandbox and the standard library only (the import system lists
# package directories to find submodules such as collections.abc)
LIST_EVENTS = frozenset({"os.listdir", "os.scandir"})


def _install_hook(workdir, readable, blocked):
    # immutable copies bound in the closure: rebinding the module's names from candidate code
    # does not reach the hook
    blocked_prefixes, blocked_modules = BLOCKED_PREFIXES, BLOCKED_MODULES
    write_events, list_events = WRITE_EVENTS, LIST_EVENTS

    def inside(path, roots):
        try:
            p = os.path.realpath(os.fsdecode(path) if not isinstance(path, int) else "/proc/self/fd")
        except (TypeError, ValueError):
            return False
        return any(p == r or p.startswith(r + os.sep) for r in roots)

    def deny(exc, msg):
        blocked.append(msg)  # recorded even if the candidate catches the exception
        raise exc(msg)

    def hook(event, args):
        if event.startswith(blocked_prefixes):
            deny(PermissionError, f"sandbox: {event} is not allowed")
        if event == "import" and args[0].split(".")[0] in blocked_modules:
            deny(ImportError, f"sandbox: import of {args[0]} is not allowed")
        if event == "open":
            path, mode, flags = args[0], args[1], args[2]
            if isinstance(path, int):
                return
            writing = (mode and any(c in str(mode) for c in "wax+")) or (flags or 0) & (
                os.O_WRONLY | os.O_RDWR | os.O_CREAT
            )
            if not inside(path, (workdir,) if writing else (workdir, *readable)):
                deny(PermissionError, f"sandbox: open {path!r} is not allowed")
        elif event in write_events and args and not inside(args[0], (workdir,)):
            deny(PermissionError, f"sandbox: {event} outside the sandbox directory")
        elif (
            event in list_events
            and args
            and not inside(args[0] if args[0] is not None else ".", (workdir, *readable))
        ):
            deny(PermissionError, f"sandbox: {event} of {args[0]!r} is not allowed")

    sys.addaudithook(hook)


def _preload_stripped():
    """Import ``gc`` and ``signal`` (unittest, doctest, pdb, timeit need them) before the hook, minus
    what reaches outside the process; the hook then refuses to load a second, unstripped copy
    (``gc``/``signal``/``_signal`` stay in its blocked list: only the cached copies import)."""
    import _signal  # before the audit hook (see the docstring)
    import gc  # before the audit hook (see the docstring)
    import signal  # before the audit hook (see the docstring)

    for mod in (signal, _signal):
        mod.__dict__.pop("pidfd_send_signal", None)  # signals another process without os.kill
    for mod in (os, sys.modules.get("posix")):
        if mod is not None:
            mod.__dict__.pop("pidfd_open", None)
    return gc


def _jsonable(x):
    if isinstance(x, tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    raise TypeError(f"result of type {type(x).__name__} is not comparable")


def main():
    mode, fn_name, result_fd, limits = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    inputs = json.loads(sys.stdin.read())
    workdir = os.path.realpath(os.getcwd())
    with open("solution.py") as f:
        code = f.read()
    out = os.fdopen(result_fd, "w", buffering=1)
    readable = tuple(
        {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__))}
    )
    real_stdout = sys.stdout
    _preload_stripped()
    blocked = []
    _limits(limits)
    _install_hook(workdir, readable, blocked)
    fn = setup_error = None
    try:
        compiled = compile(code, "solution.py", "exec")
        if mode == "call":
            g = {"__name__": "solution"}
            exec(compiled, g)
            fn = g.get(fn_name)
            if fn is None and "Solution" in g:
                fn = getattr(g["Solution"](), fn_name)
            if fn is None:
                raise NameError(f"no function {fn_name!r} defined")
    except BaseException as e:  # noqa: BLE001 - reported per test below
        setup_error = type(e).__name__
    for i, inp in enumerate(inputs):
        buf = io.StringIO()
        sys.stdout = buf
        n_blocked = len(blocked)
        try:
            if setup_error is not None:
                res = {"__error__": setup_error}
            elif mode == "call":
                args = inp if isinstance(inp, list) else [inp]
                res = _jsonable(fn(*args))
            else:
                sys.stdin = io.StringIO(inp if isinstance(inp, str) else "\n".join(map(str, inp)))
                try:
                    exec(compiled, {"__name__": "__main__"})
                except SystemExit:
                    pass
                res = buf.getvalue()
        except BaseException as e:  # noqa: BLE001 - a failing test is a result, not a crash
            res = {"__error__": type(e).__name__}
        finally:
            sys.stdout = real_stdout
        rec = {"i": i, "out": res}
        if blocked[n_blocked if i else 0 :]:
            rec["blocked"] = blocked[n_blocked if i else 0]
        out.write(json.dumps(rec) + "\n")
    out.close()


if __name__ == "__main__":
    main()
