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


def _rec(
    seed: int,
    acc: list[float],
    *,
    overrides: tuple[str, ...] = (),
    sha: str | None = "ab" * 32,
    scale: str = "laptop_base",
) -> dict:
    run = {"data_sha256": {"chain_sum/test.parquet": "cd" * 32}}
    if sha:
        run["model"] = {"weights_sha256": sha, "build": {"pretrain": {"seed": 0}}}
    return {
        "engine": "local",
        "recipe": "r1_zero",
        "scale": scale,
        "seed": seed,
        "overrides": ["recipe=r1_zero", f"run_dir=runs/x/{seed}", f"rlvr.seed={seed}", *overrides],
        "curves": {
            "rlvr/val_acc": {"step": [0, 80], "value": acc},
            "rlvr/val_response_length": {"step": [0, 80], "value": [10.0, 20.0]},
        },
        "run": run,
    }


def test_agreement_and_inputs_compare_what_the_runs_recorded(tmp_path, monkeypatch) -> None:
    """The same run in two experiments is "identical" only if its curves are; another override, another
    run; each experiment's base-model and test-split hashes are read from its runs."""
    from core import results
    from experiments.registry import agreement, inputs

    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    results.write_run("seed_table", "r1_zero-s0", _rec(0, [0.2, 0.6]))
    results.write_run("seed_table", "r1_zero-s1", _rec(1, [0.2, 0.7]))
    results.write_run("thinking_budget", "r1_zero-s0", _rec(0, [0.2, 0.6]))
    results.write_run("thinking_budget", "r1_zero-s1", _rec(1, [0.2, 0.71]))
    results.write_run("thinking_budget", "r1_zero-k2-s0", _rec(0, [0.2, 0.5], overrides=("budget.k=2",)))
    results.write_run("overtime_pay", "r1_zero-s0", _rec(0, [0.1, 0.2], sha=None, scale="laptop_overtime"))
    rows = {r[0]: r for r in agreement().rows}
    assert set(rows) == {"r1_zero-s0", "r1_zero-s1"}  # the k=2 run and the lone overtime run are no pair
    assert rows["r1_zero-s0"][-1] == "identical"
    s1 = rows["r1_zero-s1"][-1]  # two versions, each named with its records and base model
    assert s1.startswith("differ: {seed_table @") and " · {thinking_budget @" in s1, s1
    assert s1.count("base `abababababab`") == 2 and s1.endswith("max |Δ| 0.01"), s1
    assert "seed_table @" in rows["r1_zero-s0"][1] and "thinking_budget @" in rows["r1_zero-s0"][1]
    got = {r[0]: r for r in inputs().rows}
    assert got["seed_table"][2] == "seed 0: `abababababab`"
    assert got["seed_table"][3] == "chain_sum/test.parquet: `cdcdcdcdcdcd`"
    assert got["overtime_pay"][2] == "not recorded (1 runs)"


def test_arithmetic_names_the_pins_and_whether_the_optimizer_was_the_per_processor_one() -> None:
    from experiments.registry import ADAMW_FIX, arithmetic

    pins = {"aten_cpu_capability": "AVX2", "mkl_cbwr": "COMPATIBLE"}
    assert arithmetic({"versions": {}}).startswith("unpinned")
    before = arithmetic({"versions": pins, "written": "2026-12-04T07:16:51+0000"})
    assert (
        before
        == "pinned (AVX2, MKL_CBWR=COMPATIBLE); unfused AdamW (before `core.numerics.adamw`: weights depend on the processor)"
    )
    assert arithmetic({"versions": pins, "written": ADAMW_FIX}).endswith("; fused AdamW")
