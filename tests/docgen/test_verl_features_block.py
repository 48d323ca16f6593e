"""docgen.verl_features: a synthetic ``experiments.verl_cpu_features`` record renders its numbers, verdicts
and controls, and the refused features come from ``recipes.launch_cpu`` (a private results folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import results
from docgen import verl_features


def _arm(**extra: object) -> dict:
    rec = {"command": "python -m recipes.run engine=verl recipe=grpo", "code": 0, "steps": [1, 2]}
    rec.update(s_per_step=7.25, all_finite=True, load=[9.5, 10.25], error="")
    return {**rec, **extra}


def test_a_record_renders_per_arm_with_its_check_and_control(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    monkeypatch.setattr(verl_features, "refused_rows", lambda: [["`k`", "refused", "a reason"]])
    runs = {
        "lora_merged": _arm(
            check="max diff",
            largest=3.5e-6,
            threshold=1e-4,
            passed=True,
            control={"largest": 0.042, "detected": True, "code": 0},
        ),
        "colocate_async": _arm(
            check="staleness",
            largest=2,
            threshold=1,
            passed=False,
            control={"largest": 2, "detected": False, "code": 0},
        ),
        "lora_resume": _arm(
            steps=[3],
            check="diff at 3",
            largest=1e-6,
            threshold=1e-4,
            passed=True,
            merger={"code": 0, "adapter_written": True},
        ),
        "opd_lora": _arm(code=2, passed=False, error="error: [x] broke"),
    }
    results.write_table(
        "verl_cpu_features", "latest", {"settings": {"steps": 2, "async_steps": 3}, "runs": runs}
    )
    text = verl_features.verl_cpu_features().markdown
    row = {ln.split("|")[1].strip(): ln for ln in text.splitlines() if ln.startswith("| `")}
    assert "| pass |" in row["`lora_merged`"] and "3.5e-06" in row["`lora_merged`"]
    assert "0.042: detected" in row["`lora_merged`"] and "9.5 → 10.2" in row["`lora_merged`"]
    assert "**fail**" in row["`colocate_async`"] and "**not detected**" in row["`colocate_async`"]
    assert "wrote `lora_adapter/`" in row["`lora_resume`"]
    assert "exit 2: error: [x] broke" in row["`opd_lora`"]
    assert "7.25" in row["`lora_merged`"]
    assert "| `k` | refused | a reason |" in text


def test_the_refused_features_come_from_the_cpu_launch_with_their_reasons() -> None:
    """``REFUSED`` and the Ulysses change of ``recipes.launch_cpu`` (its import is shared with other tests)."""
    rows = verl_features.refused_rows()
    keys = [r[0] for r in rows]
    assert "`trainer.nnodes`" in keys
    assert any(k.endswith("ulysses_sequence_parallel_size`") for k in keys)
    assert any("flash-attention 2 only" in r[2] for r in rows)


def test_without_a_record_the_block_names_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    assert "make results NAME=verl_cpu_features" in verl_features.verl_cpu_features().markdown
