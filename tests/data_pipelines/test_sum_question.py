"""The sum_question task (a real instruct model's task) and the math verifier on that model's own replies."""

from __future__ import annotations

import pytest

from data_pipelines.tasks import TASKS
from rewards import compute_score


def test_rows_are_math_questions_with_held_out_test_prompts():
    test = TASKS.get("sum_question")(n=64, seed=0, split="test", lo=1, hi=19)
    train = TASKS.get("sum_question")(n=500, seed=0, split="train", lo=1, hi=19)
    q_test = [r["extra_info"]["question"] for r in test]
    assert len(set(q_test)) == 64, "test questions are distinct"
    assert not set(q_test) & {r["extra_info"]["question"] for r in train}
    row = test[0]
    assert row["data_source"] == "math" and row["prompt"][-1]["content"].endswith('after "Answer:".')
    assert row["reward_model"]["ground_truth"] == str(sum(row["extra_info"]["terms"]))
    assert TASKS.get("sum_question")(n=64, seed=0, split="test", lo=1, hi=19) == test


def test_bad_params_and_templates_are_refused():
    with pytest.raises(ValueError, match="sum_question needs"):
        TASKS.get("sum_question")(n=1, seed=0, split="test", lo=5, hi=1)
    with pytest.raises(ValueError, match="no unseen held-out question"):
        TASKS.get("sum_question")(n=50, seed=0, split="test", lo=1, hi=5)


#: SmolLM2-135M-Instruct's own replies (T=0.7) and what the math verifier makes of them: the answer it
#: extracts (None: refused for format, no answer marker) and whether it is judged correct
REPLIES = [
    ("18 + 38 = 56.\n\nThis is the result of the multiplication of 18 and 38.", "56", None, False),
    ("To add 31 and 52, we simply add them together: 31 + 52 = 136.", "83", None, False),
    (
        "1. To solve the equation, we need to add the numbers 71 and 36.\n2. The result of 71 + 36 is 198."
        "\n\nSo, the final answer is 198.",
        "107",
        "198",
        False,
    ),
    ("1. The problem is to add 22 and 86.\n\nSo the answer is 22 + 22 = 44.", "108", "22 + 22 = 44", False),
    ('The answer to the question "1+2" is: 3.\n\nYour answer is: 1+2', "3", "1+2", False),
    ("19 + 92 = 19 + 92 = 20.\n\nThe answer to the last line of the response is 20.", "111", None, False),
    ("The answer is 42.", "42", "42", True),
    ("17 + 25 = 42.\n\nAnswer: 42", "42", "42", True),
]


@pytest.mark.parametrize("reply,gold,pred,acc", REPLIES)
def test_math_verifier_on_the_real_model_replies(reply, gold, pred, acc):
    r = compute_score("math", reply, gold, {})
    assert (r["pred"], r["acc"]) == (pred, acc)
