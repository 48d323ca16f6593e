"""The R1-Zero benchmark's reading of held-out dumps: worked, self-check and fix shares per step."""

from __future__ import annotations

import json

from experiments.r1_zero_curves import KINDS, kind_curves
from recipes.local.probe import response_kind


def test_kind_curves_count_each_kind_per_evaluation(tmp_path) -> None:
    val = tmp_path / "validation"
    val.mkdir()
    outputs = {
        0: ["<answer>7</answer>", "<think>3+4=7</think><answer>7</answer>"],
        20: ["<think>3+4=7 check 3+4=7 ok</think><answer>7</answer>", "3+4=8 no 3+4=7 so 7"],
    }
    for step, outs in outputs.items():
        (val / f"{step}.jsonl").write_text("".join(json.dumps({"output": o}) + "\n" for o in outs))
    curves = kind_curves(tmp_path)
    assert curves[KINDS["worked"]] == {"step": [0, 20], "value": [0.5, 1.0]}
    assert curves[KINDS["check"]]["value"] == [0.0, 0.5]
    assert curves[KINDS["fix"]]["value"] == [0.0, 0.5]


def test_a_bare_number_is_a_direct_answer() -> None:
    assert response_kind("17") == {"worked": False, "check": False, "fix": False}
