"""Step formats, rule step labels, label agreement and costs (rows built from real laptop-model outputs)."""

from __future__ import annotations

import pytest

from data_pipelines.rm_labels import Cost, agreement, rule_labels
from data_pipelines.steps import STEP_FORMATS, StepFormat, register, split_arithmetic, step_format
from data_pipelines.tasks.arithmetic import render_trace

# (response as the laptop policy wrote it, a, b, gold, expected prefix-correctness labels)
ROWS = [
    (
        "<think>9+8+0=17,7+6+1=14,5+8+1=14</think><answer>1447</answer>",
        579,
        868,
        "1447",
        [True, True, True, True],
    ),
    # a wrong first column: every later step is wrong too (prefix correctness), even though the
    # answer happens to be right -- the model copied the right digits anyway
    (
        "<think>9+8+0=18,7+6+1=14,5+8+1=14</think><answer>1447</answer>",
        579,
        868,
        "1447",
        [False, False, False, False],
    ),
    ("<think>9+8+0=17,8+6+1=15,5+8+1=14</think>5677</answer>", 579, 868, "1447", [True, False, False, False]),
    (
        "<think>9+8+0=17,7+6+1=14,5+8+1=14</think><answer>1448</answer>",
        579,
        868,
        "1447",
        [True, True, True, False],
    ),
    # a column left out: the answer step cannot be right
    ("<think>9+8+0=17,7+6+1=14</think><answer>1447</answer>", 579, 868, "1447", [True, True, False]),
    # a malformed column inside a readable trace is a wrong step
    (
        "<think>5+6+0=11,2+1+1=05,1+5+0=0B</think><answer>551</answer>",
        125,
        516,
        "641",
        [True, False, False, False],
    ),
    # what RL on a PRM collapsed to: no step to read at all
    ("<think>3</answer>", 273, 66, "339", [None]),
]


@pytest.mark.parametrize("text,a,b,gold,want", ROWS)
def test_rule_labels_on_real_outputs(text, a, b, gold, want):
    fmt = step_format(None, "arithmetic")
    steps = fmt.split(text)
    assert rule_labels(fmt, steps, gold, {"a": a, "b": b}) == want
    assert all(text[s.start : s.end] == s.text for s in steps)


def test_operands_are_read_from_the_question_when_extra_info_lacks_them():
    fmt = step_format(None, "arithmetic")
    text = render_trace(874, 404)
    assert rule_labels(fmt, fmt.split(text), "1278", {"question": "874+404"}) == [True] * 4


def test_steps_of_other_formats_and_unknown_sources():
    assert [s.text for s in step_format("lines").split("x = 1\n\ny = 2")] == ["x = 1", "y = 2"]
    assert rule_labels(step_format("lines"), step_format("lines").split("a\nb"), "1", {}) == [None, None]
    with pytest.raises(ValueError, match=r"\[rlvr.reward_model.step_format\].*'gsm8k'"):
        step_format(None, "gsm8k")
    with pytest.raises(ValueError, match=r"\[rlvr.reward_model.step_format\].*unknown step format 'nope'"):
        step_format("nope")


def test_a_new_format_is_one_registration():
    name = "test_semicolons"
    if name not in STEP_FORMATS:
        register(
            StepFormat(name, lambda t: split_arithmetic(t.replace(";", ",")), None), sources=("test_source",)
        )
    assert step_format(None, "test_source").name == name


def test_agreement_and_kappa():
    a = [True, True, False, False, None, True]
    b = [True, False, False, False, True, True]
    r = agreement(a, b)
    assert r["n"] == 5 and r["agree"] == pytest.approx(0.8)
    assert 0 < r["kappa"] < 1
    assert agreement(a, a[:])["kappa"] == pytest.approx(1.0)
    assert agreement([None], [True])["n"] == 0


def test_cost_per_label():
    c = Cost(labels=10, samples=40, tokens=400).as_dict()
    assert c["samples_per_label"] == 4 and c["tokens_per_label"] == 40
