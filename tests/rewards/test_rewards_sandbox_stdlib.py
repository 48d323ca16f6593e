"""Code sandbox: the standard library imports inside it, a blocked operation is an error with its
reason, and nothing -- not even an orphan process holding the result pipe -- outlives a call.

The stdlib test generates one honest program per pure-Python module of ``sys.stdlib_module_names``
(``import <module>`` then echo the input) and runs each in the sandbox. Modules are left out, with
the reason recorded, only when they are not pure Python, do not import here outside the sandbox, or
load a module the sandbox refuses by policy (network, subprocesses, ctypes...). The probe runs outside
the sandbox in a fresh ``python -I -S`` per module, like the sandbox's own interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import rewards.sandbox as sandbox
from rewards.sandbox import run_tests

ECHO = {"inputs": ["3\n"], "outputs": ["3\n"]}
# what the sandbox refuses to load, by policy (network, processes, raw memory)
POLICY = {"socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess", "multiprocessing"}
POLICY |= {"_multiprocessing", "ctypes", "_ctypes", "pty", "fcntl", "mmap", "resource", "webbrowser"}
_PROBE = "import sys, json\nbefore = set(sys.modules)\nimport {m}\nprint(json.dumps(sorted(set(sys.modules) - before)))"


def _probe(name: str) -> tuple[str, str]:
    """(verdict, reason): 'test' or 'excluded' for one stdlib module, decided outside the sandbox."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as e:
        return "excluded", f"no spec: {type(e).__name__}"
    if spec is None:
        return "excluded", "not installed"
    if not (spec.origin or "").endswith(".py"):
        return "excluded", "not pure Python"
    r = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PROBE.format(m=name)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if r.returncode != 0:
        return "excluded", "does not import outside the sandbox either"
    loaded = json.loads(r.stdout.strip().splitlines()[-1])
    hit = sorted({m.split(".")[0] for m in loaded} & POLICY)
    return ("excluded", f"loads {', '.join(hit)} (refused by policy)") if hit else ("test", "")


@pytest.fixture(scope="module")
def stdlib_plan() -> dict[str, tuple[str, str]]:
    names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_") and n != "antigravity")
    with ThreadPoolExecutor(2) as ex:
        plan = dict(zip(names, ex.map(_probe, names), strict=True))
    plan["antigravity"] = ("excluded", "loads webbrowser (refused by policy); importing it opens a browser")
    return plan


def test_every_pure_python_stdlib_module_imports_in_the_sandbox(stdlib_plan) -> None:
    todo = [m for m, (v, _) in stdlib_plan.items() if v == "test"]
    assert len(todo) >= 120, stdlib_plan  # most of the standard library is pure Python

    def run(m: str):
        code = f"import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    import {m}\nprint(input())"
        return m, run_tests(code, ECHO, timeout_s=5.0)

    with ThreadPoolExecutor(2) as ex:
        results = dict(ex.map(run, todo))
    failed = {m: (r.status, r.reason) for m, r in results.items() if not r.all_passed}
    excluded = {m: why for m, (v, why) in stdlib_plan.items() if v == "excluded"}
    print(f"\nstdlib: {len(stdlib_plan)} names, {len(todo)} tried, {len(todo) - len(failed)} passed")
    print(f"excluded ({len(excluded)}): {json.dumps(excluded, indent=0)}")
    assert failed == {}
    # the exclusions are exactly the refused-by-policy, not-pure-Python and not-importable ones
    assert all(
        why.startswith(("loads", "not pure", "does not import", "not installed", "no spec"))
        for why in excluded.values()
    )


def test_type_hinted_solution_passes() -> None:
    code = "from typing import List\nfrom dataclasses import dataclass\nimport copy, array\n\n"
    code += "def double(xs: List[int]) -> List[int]:\n    return [2 * x for x in copy.copy(xs)]\n"
    assert run_tests(code, {"fn_name": "double", "inputs": [[[1, 2]]], "outputs": [[2, 4]]}).all_passed


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        ("import socket\nprint(input())", "error", "sandbox: import of socket is not allowed"),
        ("import os\nprint(os.listdir('/'))", "error", "sandbox: os.listdir of '/' is not allowed"),
        (
            "try:\n    import socket\nexcept ImportError:\n    pass\nprint(7)",
            "error",
            "sandbox: import of socket",
        ),
        ("print(1 // 0)", "error", "raised ZeroDivisionError"),
        ("print(4)", "wrong", "0/1 tests passed"),
    ],
)
def test_blocked_or_failing_is_reported_with_its_reason(code: str, status: str, reason: str) -> None:
    res = run_tests(code, ECHO)
    assert (res.passed, res.status) == (0, status) and res.reason.startswith(reason), res


ORPHAN_CHILD = textwrap.dedent(
    """
    import os, sys, time
    fd = int(sys.argv[3])
    if os.fork() == 0:          # the orphan: leaves the process group, keeps the result pipe
        os.setsid()
        if os.fork() == 0:
            open("orphan_was_here", "w").write(str(os.getpid()))
            time.sleep(60)
        os._exit(0)
    time.sleep(0.2)
    os.write(fd, b'{"i": 0, "out": "3\\\\n"}\\n')
    """
)


@pytest.mark.parametrize("namespaces", [True, False])
def test_an_orphan_holding_the_result_pipe_does_not_outlive_the_call(
    namespaces: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A stand-in harness (not model code: the audit hook stops model code from forking) double-forks
    a daemon that keeps the result pipe and the sandbox directory; the call must still end, kill it and
    remove the directory."""
    child = tmp_path / "orphan_child.py"
    child.write_text(ORPHAN_CHILD)
    monkeypatch.setattr(sandbox, "_CHILD", str(child))
    if not namespaces:
        monkeypatch.setattr(sandbox, "_UNSHARE", [])
    # this test's sandbox folder under its own temp folder: other tests' sandboxes (pytest-xdist) stay apart
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", os.path.realpath(tmp_path / "tmp"))
    before = set(Path(tempfile.gettempdir()).glob("rewards-sbx-*"))
    t = time.monotonic()
    res = run_tests("print(input())", ECHO, timeout_s=1.0)
    assert time.monotonic() - t < 10
    assert res.passed == 1
    assert set(Path(tempfile.gettempdir()).glob("rewards-sbx-*")) <= before
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert str(child) not in out
    assert not any(p.exists() for p in Path(tempfile.gettempdir()).glob("rewards-sbx-*/orphan_was_here"))
    assert os.getpid()  # the test process survived
