"""Bounds and safety: hard time limits off the main thread and in worker processes, hostile inputs."""

from __future__ import annotations

import ast
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

import rewards
from rewards.worker import WALL_FACTOR, pool

HOSTILE = {
    "1 MB of text": ("x " * 500_000 + r"\boxed{72}", "72"),
    "1 MB of boxes": (r"\boxed{1}" * 100_000, "1"),
    "1 MB of answer tags": ("<answer>1</answer>" * 50_000, "1"),
    "10k nested braces": ("{" * 10_000 + r"\boxed{" * 10_000 + "1" + "}" * 20_000, "1"),
    "10k unclosed braces": (r"\boxed{" + "{" * 10_000, "1"),
    "power tower": (r"\boxed{9^{9^{9^9}}}", "1"),
    "huge exponent": (r"\boxed{2^{10^{8}}}", "1"),
    "deep parentheses": (r"\boxed{" + "(" * 900 + "1" + ")" * 900 + "}", "1"),
    "huge factorial": (r"\boxed{(10^{9})!}", "1"),
    "binary junk": (bytes(range(256)).decode("latin-1") * 400, "1"),
    "None-like": ("None", "None"),
    "null": ("null", "1"),
    "empty gold": (r"\boxed{1}", ""),
    "None gold": (r"\boxed{1}", None),
    "None response": (None, "1"),
    "5000-digit number": (r"\boxed{" + "9" * 5000 + "}", "9" * 5000),
    "python in a box": (r"\boxed{__import__('os').system('touch /tmp/pwned_rewards')}", "0"),
    # inputs aimed at quadratic regular expressions and per-candidate work
    "answer line of spaces and stars": ("Answer: x" + " *" * 500_000 + "x", "1"),
    "repeated 'answer is'": ("answer is" * 100_000, "1"),
    "40k answer lines": ("Answer: 1\n" * 40_000, "1"),
    "bare boxes": ("\\boxed " * 200_000, "1"),
    "unclosed text commands": (r"\boxed{" + r"\text{" * 100_000 + "}", "1"),
    "many think tags": ("<think>" * 100_000 + "</think>" * 100_000, "1"),
    "4 MB": ("x" * 4_000_001, "1"),
}


#: scheduling slack over a 1 s limit on a shared, loaded 2-core machine (wall clock)
SLACK_S = 2.0


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_is_bounded(name: str) -> None:
    resp, gold = HOSTILE[name]
    t = time.perf_counter()
    r = rewards.compute_score("math", resp, gold, timeout_s=1.0)
    # bounded by the 1 s limit, not by the input: the slack is for a loaded machine's scheduling
    # (a call that ignored the limit would run for minutes on these inputs)
    assert time.perf_counter() - t < 1.0 + SLACK_S
    assert r["acc"] is (name == "1 MB of text")  # the only hostile row that carries one right answer
    for ds, g in [
        ("gsm8k", gold),
        ("overtime_pay", gold),
        ("arithmetic", gold),
        ("countdown", '{"target": 1, "numbers": [1]}'),
    ]:
        t = time.perf_counter()
        assert rewards.compute_score(ds, resp, g, timeout_s=1.0)["acc"] in (True, False)
        assert time.perf_counter() - t < 1.0 + SLACK_S, ds
    assert not Path("/tmp/pwned_rewards").exists()


def test_time_limit_works_off_the_main_thread() -> None:
    out: dict[str, object] = {}

    def job() -> None:
        t = time.perf_counter()
        try:
            pool().call("sleep", [5.0], 0.3)
        except TimeoutError:
            out["elapsed"] = time.perf_counter() - t

    th = threading.Thread(target=job)
    th.start()
    th.join(10)
    assert 0.29 <= out["elapsed"] < 0.3 * WALL_FACTOR + 0.3  # 0.3 s of CPU, within the wall ceiling
    assert pool().call("ping", [], 30.0) == "pong"  # replaced worker answers


def test_wall_ceiling_cuts_a_call_the_cpu_budget_would_allow() -> None:
    t = time.perf_counter()
    with pytest.raises(TimeoutError):
        pool().call("sleep", [5.0], 5.0, wall_s=0.3)
    assert time.perf_counter() - t < 0.6
    assert pool().call("ping", [], 30.0) == "pong"


def test_time_limit_counts_cpu_time_not_waiting_for_a_cpu() -> None:
    """A worker that gets no CPU (stopped, as on a machine whose cores are taken) is not cut at its CPU
    limit: the verdict does not depend on the machine's load, only the wall ceiling bounds the wait."""
    p = pool()
    assert p.call("ping", [], 30.0) == "pong"
    w = p._idle.queue[0]  # the worker the next call takes
    os.kill(w.proc.pid, signal.SIGSTOP)
    threading.Timer(0.6, os.kill, (w.proc.pid, signal.SIGCONT)).start()
    t = time.perf_counter()
    assert p.call("ping", [], 0.2, wall_s=5.0) == "pong"
    assert time.perf_counter() - t >= 0.55


def test_compute_score_honours_a_tiny_limit_and_reports_it() -> None:
    t = time.perf_counter()
    r = rewards.compute_score("math", r"\boxed{\sin(x)^2 + \cos(x)^2 + 19x}", r"1 + 19x", timeout_s=0.002)
    assert time.perf_counter() - t < 0.1
    assert r["acc"] is False and r["reason"] == "timeout"
    rewards.warmup()


def test_no_process_forked_per_call() -> None:
    p = pool()
    p.warmup()
    pids = {w.proc.pid for w in p._all}
    for k in range(20):
        assert rewards.compute_score("math", rf"\boxed{{\sqrt{{{4 * k * k}}}}}", f"{2 * k}")["acc"]
    assert {w.proc.pid for w in p._all} == pids


def test_many_threads_share_the_worker() -> None:
    results: list[bool] = []

    def job(k: int) -> None:
        results.append(
            rewards.compute_score("math", rf"\boxed{{{k}\sqrt{{3}}}}", rf"\sqrt{{{3 * k * k}}}")["acc"]
        )

    ths = [threading.Thread(target=job, args=(k,)) for k in range(1, 9)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(30)
    assert results == [True] * 8


def _score_in_child(args: tuple[str, str]) -> tuple[bool, str]:
    r = rewards.compute_score("math", *args, timeout_s=1.0)
    return r["acc"], r["reason"]


def test_works_inside_a_daemonic_worker_process() -> None:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as mp_pool:  # pool processes are daemonic: multiprocessing children are forbidden there
        got = mp_pool.map(_score_in_child, [(r"\boxed{2\sqrt{3}}", r"\sqrt{12}"), (r"\boxed{3}", "4")])
    assert got == [(True, ""), (False, "wrong answer")]


def test_model_text_is_never_evaluated() -> None:
    """No eval/exec/compile call anywhere in the package outside the code sandbox's child harness."""
    root = Path(rewards.__file__).parent
    for path in root.rglob("*.py"):
        if path.name == "_sandbox_child.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile"}, f"{path}:{node.lineno}"
