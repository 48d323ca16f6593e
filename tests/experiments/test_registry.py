"""``make results``: the experiment's arguments reach ``experiments.registry`` as one Hydra list."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser

ROOT = Path(__file__).resolve().parents[2]


def test_make_results_args_parse_as_a_list_of_overrides() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    out = subprocess.run(
        [
            "make",
            "-n",
            "--no-print-directory",
            "results",
            "NAME=overtime_pay",
            "ARGS=jobs=1 seeds=[0,1] claim=x",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [ln for ln in out.splitlines() if "experiments.registry" in ln]
    argv = shlex.split(line)
    assert argv[argv.index("-m") + 1 :][:2] == ["experiments.registry", "name=overtime_pay"]
    (override,) = OverridesParser.create().parse_overrides([argv[-1]])
    assert override.key_or_group == "args"
    assert override.value() == ["jobs=1", "seeds=[0,1]", "claim=x"]
