"""Run several ``python -m <module> <args>`` command lines in one process, one after another.

Each runs as its module's ``__main__`` (``runpy``, as ``python -m`` runs it), with file descriptors 1
and 2 sent to files of its own, so everything it prints (Python's streams, logging, C code) is its
own, and its exit code taken from ``SystemExit``; an exception that escapes is printed as Python
would print it (a traceback) with exit code 1. A process per command pays the imports of veRL, torch
and Hydra each time (seconds of CPU each); these commands pay them once.

Tests run it with :func:`run_in_one_process`; the tests that use it keep at least one command of
each kind in a process of its own.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path


def run_in_one_process(
    cases: list[tuple[str, list[str], dict[str, str]]],
    work: Path,
    env: dict[str, str],
    timeout: float = 1800,
) -> list[tuple[int, str, str]]:
    """``(exit code, stdout, stderr)`` of each ``(module, argv, extra env)`` of ``cases``, run in that
    order in one ``python`` process started from the repository root with ``env`` (each case's extra
    variables are set for it alone); ``work`` is an empty folder for the exchange files."""
    work.mkdir(parents=True, exist_ok=True)
    spec = [{"module": m, "argv": list(a), "env": dict(e)} for m, a, e in cases]
    (work / "cases.json").write_text(json.dumps(spec))
    # ``python -c``, as ``python -m``, puts the working directory (the repository) first on sys.path
    proc = subprocess.run(
        [sys.executable, "-c", Path(__file__).read_text(), str(work)],
        cwd=Path(__file__).resolve().parents[1],  # the repository's root, where ``python -m`` runs
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"the runner failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    done = json.loads((work / "done.json").read_text())
    return [(d["rc"], d["stdout"], d["stderr"]) for d in done]


def _exit_code(code: object) -> int:
    """The exit code of ``SystemExit(code)`` as the interpreter reports it (a message exits 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_one(module: str, argv: list[str], extra: dict[str, str], out: Path, err: Path) -> int:
    """Run one command line with fds 1 and 2 on ``out`` and ``err``; its exit code."""
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    sys.stdout.flush(), sys.stderr.flush()
    fds = os.dup(1), os.dup(2)
    with out.open("wb") as o, err.open("wb") as e:
        os.dup2(o.fileno(), 1), os.dup2(e.fileno(), 2)
        try:
            sys.argv = [module, *argv]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            code = _exit_code(stop.code)
        except BaseException:  # noqa: BLE001 - reported as Python reports it, then the next case
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush(), sys.stderr.flush()
            os.dup2(fds[0], 1), os.dup2(fds[1], 2)
            os.close(fds[0]), os.close(fds[1])
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return code


def _main(work: Path) -> None:
    """Run ``work/cases.json`` and write ``work/done.json``."""
    done = []
    for i, case in enumerate(json.loads((work / "cases.json").read_text())):
        out, err = work / f"{i}.out", work / f"{i}.err"
        rc = _run_one(case["module"], case["argv"], case["env"], out, err)
        text = {"stdout": out.read_text(errors="replace"), "stderr": err.read_text(errors="replace")}
        done.append({"rc": rc, **text})
    (work / "done.json").write_text(json.dumps(done))


if __name__ == "__main__":
    _main(Path(sys.argv[1]))
