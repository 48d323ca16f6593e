"""recipes.supervise: a launch owns every process it starts, its metrics survive a resume, a failure is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from recipes import supervise


def _lines(path: Path) -> list[tuple[int, str]]:
    return [(json.loads(x)["step"], json.loads(x)["data"]["k"]) for x in path.read_text().splitlines()]


def test_a_resumed_invocation_replaces_the_steps_after_its_first(tmp_path: Path) -> None:
    parts = tmp_path / "metrics.d"
    parts.mkdir()
    first = [(0, "val"), (1, "a1"), (2, "a2"), (3, "a3")]  # killed after step 3, checkpoint at 2
    second = [(2, "val"), (3, "b3"), (4, "b4")]  # resumed at 2: re-validates, re-runs 3
    for stamp, rows in ((100, first), (200, second)):
        (parts / f"{stamp}.jsonl").write_text(
            "".join(json.dumps({"step": s, "data": {"k": k}}) + "\n" for s, k in rows)
        )
    out = supervise.merge_metrics(tmp_path)
    assert _lines(out) == [(0, "val"), (1, "a1"), (2, "a2"), (2, "val"), (3, "b3"), (4, "b4")]
    assert supervise.merge_metrics(tmp_path / "nothing") is None


def test_a_failure_is_the_last_exception_the_log_shows(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "\x1b[36m(TaskRunnerV1 pid=1)\x1b[0m UserWarning: harmless\n"
        "\x1b[36m(TaskRunnerV1 pid=1)\x1b[0m ValueError: first\n"
        "ray.exceptions.RayTaskError(ValueError): wrapped\n"
        "AssertionError: max_token_len must be greater than the sequence length.\n"
    )
    line = supervise.failure(tmp_path, 1)
    assert "exit code 1" in line and "AssertionError: max_token_len must be greater" in line
    assert str(tmp_path / "train.log") in line
    assert "time limit" in supervise.failure(tmp_path, supervise.TIMEOUT)


def _sleeper(mark: str) -> subprocess.Popen:
    """A process in a session of its own carrying ``mark``, as Ray's workers do."""
    return subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        env={**os.environ, supervise.MARK: mark},
        start_new_session=True,
    )


def test_a_launch_stops_what_it_started_and_what_a_killed_launch_left(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    key = supervise.run_key(run)
    orphan = _sleeper(f"{key}:99999999")  # left by an earlier launcher killed with SIGKILL
    # the launch starts a background process in a new session (setsid), which outlives launch.sh
    (run / "launch.sh").write_text(
        "set -e\nsetsid python -c 'import time; time.sleep(120)' &\necho started\nexit 3\n".replace(
            "python", sys.executable
        )
    )
    code = supervise.launch(run, echo=False)
    assert code == 3 and "started" in (run / "train.log").read_text()
    time.sleep(0.5)
    assert orphan.poll() is not None, "the earlier launch's process was not stopped"
    assert not supervise.launched(key), "a process of the launch outlived it"
