"""The full laptop-scale pipelines on the CPU (slow: 15-30 min each on 2 shared cores).

``make pipeline PIPELINE=r1`` / ``PIPELINE=distill`` in miniature-model form, checked for what the
feasibility runs make reliable: every stage finishes, reasoning RL raises held-out accuracy, and
the distillation report carries 3-seed confidence intervals for both student arms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import call
from recipes.pipeline.__main__ import command


def main(argv: list[str]) -> int:
    """``python -m recipes.pipeline <argv>``, in-process."""
    return call(command, "command", "pipeline", argv, route=True)


pytestmark = pytest.mark.slow


def _manifest(d: Path) -> dict:
    return json.loads((d / "pipeline.json").read_text())


def test_r1_pipeline_at_laptop_scale(tmp_path) -> None:
    d = tmp_path / "r1"
    assert main(["pipeline=r1", "engine=local", f"dir={d}"]) == 0
    man = _manifest(d)
    assert all(man["stages"][n]["status"] == "done" for n in man["order"])
    rl = man["stages"]["reasoning_rl"]["outputs"]["summary"]
    assert rl["end_acc"] > rl["start_acc"] + 0.1, rl
    assert man["stages"]["rejection"]["outputs"]["rows"] > 500
    print(f"r1 laptop pipeline: {man['seconds_all_stages']:.0f}s of stage time")


def test_distill_pipeline_at_laptop_scale(tmp_path) -> None:
    d = tmp_path / "distill"
    assert main(["pipeline=distill", "engine=local", f"dir={d}"]) == 0
    man = _manifest(d)
    acc = man["stages"]["eval"]["outputs"]["accuracy"]
    for arm in ("student_distill", "student_rl"):
        # a Student-t interval over the 3 seeds: centred on their mean, and as wide as they disagree
        assert acc[arm]["seeds"] == 3 and acc[arm]["lo"] < acc[arm]["hi"]
        assert acc[arm]["mean"] - acc[arm]["lo"] == pytest.approx(acc[arm]["hi"] - acc[arm]["mean"])
    assert (d / "14-eval" / "report.png").is_file()
    print(f"distill laptop pipeline: {man['seconds_all_stages']:.0f}s of stage time; {acc}")
