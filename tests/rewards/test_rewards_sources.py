"""Every registered data source, the registry, and compute_score's contract."""

from __future__ import annotations

import json

import pytest

import rewards
from rewards.registry import SOURCES, resolve
from rewards.sources.tagged import overtime_gold

ARITH = "<think>4+4+0=08,7+0+0=07,8+4+0=12</think><answer>1278</answer>"


def test_keys_are_fixed_for_every_source() -> None:
    for ds, resp, gold in [
        ("math", r"\boxed{1}", "1"),
        ("arithmetic", ARITH, "1278"),
        ("overtime_pay", "<answer>1600</answer>", "1600"),
        ("countdown", "<answer>1+2</answer>", {"target": 3, "numbers": [1, 2]}),
        ("reasoning_gym/spell_backward", "<answer>tac</answer>", "tac"),
        ("math", "junk", ""),
    ]:
        assert tuple(rewards.compute_score(ds, resp, gold)) == rewards.KEYS


def test_registry_lists_known_sources_on_unknown() -> None:
    with pytest.raises(KeyError, match="known: .*arithmetic.*gsm8k.*math.*overtime_pay"):
        rewards.compute_score("no_such_task", "x", "1")
    assert {"math", "gsm8k", "overtime_pay", "arithmetic", "countdown", "code", "reasoning_gym"} <= set(
        SOURCES.names()
    )


@pytest.mark.parametrize(
    ("alias", "canon"),
    [
        ("openai/gsm8k", "gsm8k"),
        ("lighteval/MATH", "math"),
        ("DigitalLearningGmbH/MATH-lighteval", "math"),
        ("HuggingFaceH4/MATH-500", "math"),
        ("BytedTsinghua-SIA/DAPO-Math-17k", "math"),
        ("math_dapo", "math"),
        ("aime2024", "math"),
        ("aime25", "math"),
        ("reasoning_gym/spell_backward", "reasoning_gym"),
    ],
)
def test_aliases(alias: str, canon: str) -> None:
    assert resolve(alias)[0] == canon


def test_unknown_kwargs_raise_and_verl_kwargs_pass() -> None:
    with pytest.raises(TypeError, match="format_wieght"):
        rewards.compute_score("math", "x", "1", format_wieght=0.1)
    r = rewards.compute_score(
        "math", r"\boxed{1}", "1", reward_router_address=None, reward_model_tokenizer=None
    )
    assert r["acc"]


def test_weights_validated_and_applied() -> None:
    with pytest.raises(ValueError, match="format_weight"):
        rewards.compute_score("arithmetic", ARITH, "1278", format_weight=1.0)
    with pytest.raises(ValueError, match="target_lang"):
        rewards.compute_score("arithmetic", ARITH, "1278", lang_weight=0.1)
    r = rewards.compute_score("arithmetic", ARITH, "1278", format_weight=0.1)
    assert r["score"] == pytest.approx(1.1) and r["format"] == 1.0
    wrong = rewards.compute_score("arithmetic", ARITH.replace("1278", "1279"), "1278", format_weight=0.1)
    assert wrong["score"] == pytest.approx(0.1) and not wrong["acc"]


@pytest.mark.parametrize(
    ("resp", "acc", "fmt"),
    [
        (ARITH, True, 1.0),
        ("<answer>1278</answer>", True, 0.0),
        ("<think>x</think><answer> 01278 </answer>", True, 1.0),
        ("<think></think><answer>1278</answer>", True, 0.0),
        ("<think>x</think><answer>1,278</answer>", False, 1.0),
        ("<think>x</think><answer>+1278</answer>", False, 1.0),
        ("<think>x</think><answer>1278.0</answer>", False, 1.0),
        ("<think>x</think><answer>12 78</answer>", False, 1.0),
        ("<think>x</think><answer>1278</answer><answer>1278</answer>", False, 0.0),
        ("<think><answer>1278</answer></think>", False, 0.0),
        ("<think>x</think><answer></answer>", False, 0.0),
        ("1278", False, 0.0),
        ("<answer>1278</answer><think>x</think>", False, 0.0),
    ],
)
def test_arithmetic(resp: str, acc: bool, fmt: float) -> None:
    r = rewards.compute_score("arithmetic", resp, "1278")
    assert (r["acc"], r["format"]) == (acc, fmt)


def test_overtime_pay_seed_example() -> None:
    gold = overtime_gold(8700, rest_days=2)
    assert gold == "1600.00"
    think = "<think>日工资 = 8700 ÷ 21.75 = 400 元；400 × 2 × 200% = 1600</think>"
    for ans, ok in [
        ("1600", True),
        ("1,600 元", True),
        ("1600.00元", True),
        ("¥1600", True),
        ("1600.1", False),
        ("1599.99", False),
        ("800", False),
        ("1600 or 800", False),
        ("", False),
    ]:
        assert rewards.compute_score("overtime_pay", f"{think}<answer>{ans}</answer>", gold)["acc"] is ok, ans
    assert not rewards.compute_score(
        "overtime_pay", f"{think}<answer>1600</answer><answer>800</answer>", gold
    )["acc"]
    assert overtime_gold(6525, weekday_hours=8) == "450.00"  # 300/day = 37.5/h, x 1.5 x 8 h
    assert overtime_gold(8700, holiday_days=1) == "1200.00"
    assert overtime_gold(8700, rest_days=2, comp_days=2) == "0.00"


def test_overtime_golds_of_the_generator_recomputed_independently() -> None:
    """The seed's advice: re-check generated golds with an independent program."""
    gen = pytest.importorskip("data_pipelines.tasks.overtime_pay")
    rows = gen.generate(40, 0, "train")
    keys = ("monthly", "weekday_hours", "rest_days", "comp_days", "holiday_days")
    if not rows or not all(k in rows[0]["extra_info"] for k in keys):
        pytest.skip("generator does not record the case fields")
    for r in rows:
        mine = overtime_gold(*(r["extra_info"][k] for k in keys))
        resp = f"<think>x</think><answer>{mine}</answer>"
        assert rewards.compute_score("overtime_pay", resp, r["reward_model"]["ground_truth"])["acc"], r[
            "extra_info"
        ]


def test_countdown() -> None:
    gold = json.dumps({"target": 24, "numbers": [2, 3, 4]})
    assert rewards.compute_score("countdown", "<think>x</think><answer>(3 * 4) * 2</answer>", gold)["acc"]
    assert rewards.compute_score("countdown", "<answer>2 * 3 * 4 = 24</answer>", gold)["acc"]
    assert not rewards.compute_score("countdown", "<answer>4 * 6</answer>", gold)["acc"]  # 6 not given
    assert not rewards.compute_score("countdown", "<answer>3 * 4 * 2 * 1</answer>", gold)["acc"]
    assert not rewards.compute_score("countdown", "<answer>__import__('os').system('true')</answer>", gold)[
        "acc"
    ]
    assert not rewards.compute_score("countdown", "<answer>2 ** 3 * 3</answer>", gold)["acc"]


def test_reasoning_gym_uses_its_own_scorer() -> None:
    import reasoning_gym

    ds = reasoning_gym.create_dataset("spell_backward", size=3, seed=7)
    for entry in ds:
        extra = {"metadata": entry["metadata"]}
        good = rewards.compute_score(
            "reasoning_gym/spell_backward", f"<answer>{entry['answer']}</answer>", entry["answer"], extra
        )
        bad = rewards.compute_score(
            "reasoning_gym/spell_backward", "<answer>zzzz</answer>", entry["answer"], extra
        )
        assert good["acc"] and not bad["acc"]
        assert ds.score_answer(entry["answer"], entry) == 1.0
    entry = ds[0]  # the form data_pipelines writes: the whole entry as JSON in extra_info.rg_entry
    extra = {"rg_task": "spell_backward", "rg_entry": json.dumps(entry, default=str)}
    assert rewards.compute_score(
        "reasoning_gym/spell_backward", f"<answer>{entry['answer']}</answer>", entry["answer"], extra
    )["acc"]
    assert not rewards.compute_score(
        "reasoning_gym/spell_backward", "<answer>x</answer>", entry["answer"], extra
    )["acc"]


def test_gsm8k_and_gold_forms() -> None:
    assert rewards.compute_score("openai/gsm8k", "48+24=72\n#### 72", "Natalia sold...\n#### 72")["acc"]
    assert rewards.compute_score("math", r"\boxed{\frac{1}{2}}", r"Thus $\boxed{\dfrac12}$.")["acc"]
    assert rewards.compute_score("aime2024", "Answer: 33", "033")["acc"]
    import numpy as np

    assert rewards.compute_score("math", r"\boxed{\frac{1}{2}}", np.array(["0.5", "1/2"], dtype=object))[
        "acc"
    ]
    assert not rewards.compute_score("math", r"\boxed{3}", ["1", "2"])["acc"]


@pytest.mark.parametrize(
    ("resp", "strict", "flexible"),
    [
        ("<think>4+4+0=08</think><answer>8</answer>", True, True),
        ("<think>4+4+0=08</think>8", False, True),  # bare final answer: only flexible credits it
        ("<think>4+4+0=08</think> 8 \n", False, True),
        ("<think>4+4+0=08</think>9", False, False),  # wrong stays wrong
        ("<think>4+4+0=08</think>the answer is 8", False, False),  # not a bare integer
        ("<think>4+4+0=08</think>8<answer>9</answer>", False, False),  # a tag present: tag rules apply
        ("8", False, False),  # no reasoning block
        ("<think>a</think><think>b</think>8", False, False),
    ],
)
def test_arithmetic_answer_modes(resp: str, strict: bool, flexible: bool) -> None:
    assert rewards.compute_score("arithmetic", resp, "8")["acc"] is strict
    r = rewards.compute_score("arithmetic", resp, "8", answer_mode="flexible", format_weight=0.1)
    assert r["acc"] is flexible
    # the format reward still judges the strict template, whatever the accuracy mode credits
    assert r["format"] == (
        1.0 if resp.endswith("</answer>") and resp.count("<answer>") == 1 and strict else 0.0
    )


def test_answer_mode_errors_name_the_key() -> None:
    with pytest.raises(ValueError, match="answer_mode.*must be one of"):
        rewards.compute_score("arithmetic", "x", "8", answer_mode="lenient")
    with pytest.raises(ValueError, match="not implemented for data source 'overtime_pay'"):
        rewards.compute_score("overtime_pay", "x", "8", answer_mode="flexible")
    # math reads an unmarked final answer only in flexible mode
    assert not rewards.compute_score("math", "Adding up, the total is 8.", "8")["acc"]
    assert rewards.compute_score("math", "Adding up, the total is 8.", "8", answer_mode="flexible")["acc"]
