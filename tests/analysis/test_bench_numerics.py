"""benchmarks.bench_numerics: each arm's worker runs under the kernels it names, and its docs block."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_numerics as bn
from core import results
from docgen.benchmarks import numerics_cost


def test_a_worker_runs_under_its_arms_kernels_not_the_pins() -> None:
    """The ``own`` arm's process computes with the processor's own ATen kernels and oneMKL's own
    dispatch: ``core``'s pins (which every worker imports) must not override what the arm sets."""
    own = bn.own_capability()
    rec = bn.run_worker("own", own, steps=1, decodes=1)
    assert rec["numerics"]["aten_cpu_capability"].lower() == own
    assert rec["numerics"]["mkl_cbwr"] == "AUTO"
    assert len(rec["pretrain step"]["cpu"]) == 1 and len(rec["decode"]["wall"]) == 1
    assert len(rec["weights_sha256"]) == 64
    with pytest.raises(Exception, match="not one of"):
        bn.arm_env("fast", own)


def _run(sha: str, cpu: float) -> dict:
    return {
        "pretrain step": {"cpu": [cpu, cpu], "wall": [2 * cpu]},
        "decode": {"cpu": [cpu], "wall": [cpu]},
        "weights_sha256": sha,
        "numerics": {},
    }


def test_the_block_gives_each_arms_cost_against_the_processors_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    assert "Not run yet" in numerics_cost().markdown
    runs = {
        "own": [_run("a", 1.0), _run("a", 1.0)],
        "pinned": [_run("b", 1.5), _run("b", 1.5)],
        "aten_pin": [_run("c", 1.0), _run("d", 1.0)],  # its rounds disagree
        "mkl_pin": [_run("b", 2.0), _run("b", 2.0)],  # the pinned arm's weights
    }
    summary = bn.summarise(runs)
    record = {"rounds": 2, "steps": 2, "decodes": 1, "own_capability": "avx512", "runs": runs, **summary}
    results.write_table("bench_numerics", "latest", record)
    text = numerics_cost().markdown
    assert "| pretrain step | cpu | 1.5000 | 1.0000 | 2.0000 | 1.0000 | 1.50 | 1.00 | 2.00 |" in text
    assert "both pins cost 1.50x per pretraining step" in text and "oneMKL's pin alone 2.00x" in text
    assert "2 of 3 other arms reached other weights" in text  # aten_pin and own, not mkl_pin
    assert "3 of 4 arms reached the same weights in every round" in text
