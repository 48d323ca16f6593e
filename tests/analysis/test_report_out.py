"""Where ``make report`` writes without ``OUT=``: ``reports/`` (git-ignored) for runs, ``<sweep>/report``
for a sweep; never a ``report/`` folder in the working directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from analysis.report import default_out
from core.cli import load

REPO = Path(__file__).resolve().parents[2]


def test_default_report_folder_is_ignored() -> None:
    out = default_out(load("analysis", "report", ["runs=[runs/a,runs/b]"]))
    assert out.parent == Path("reports") and out.name.startswith("runs-")
    assert out == default_out(load("analysis", "report", ["runs=[runs/b,runs/a]"]))  # same runs, same folder
    assert default_out(load("analysis", "report", ["sweep=multirun/x"])) == Path("multirun/x/report")
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out / "report.html")], cwd=REPO)
    assert ignored.returncode == 0, f"{out} is not ignored by .gitignore"
