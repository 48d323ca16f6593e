"""countdown and reasoning-gym tasks: solvable, deterministic, varied, in veRL's schema."""

from __future__ import annotations

import ast
import json
from collections import Counter
from fractions import Fraction

import pytest

from data_pipelines.schema import validate_row
from data_pipelines.tasks import TASKS
from data_pipelines.tasks.reasoning_gym_tasks import generate_reasoning_gym


def _eval(node: ast.AST) -> Fraction:
    """Evaluate + - * / over integer literals only (no eval of generated text)."""
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return Fraction(node.value)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left), _eval(node.right)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        if isinstance(node.op, ast.Div):
            return a / b
        return ops[type(node.op)]
    raise ValueError(ast.dump(node))


def test_countdown_instances_are_solvable_with_each_number_once():
    rows = TASKS.get("countdown")(n=300, seed=0, split="train")
    for r in rows:
        validate_row(r)
        gt = json.loads(r["reward_model"]["ground_truth"])
        sol = r["extra_info"]["solution"]
        tree = ast.parse(sol, mode="eval")
        used = sorted(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant))
        assert used == sorted(gt["numbers"]), sol
        assert _eval(tree) == gt["target"], sol
        assert 3 <= len(gt["numbers"]) <= 4 and 1 <= gt["target"] <= 100
    targets = Counter(json.loads(r["reward_model"]["ground_truth"])["target"] for r in rows)
    assert targets.most_common(1)[0][1] / len(rows) < 0.1
    assert len(targets) > 50


def test_countdown_deterministic_and_params_checked():
    gen = TASKS.get("countdown")
    assert gen(n=5, seed=1, split="test") == gen(n=5, seed=1, split="test")
    assert gen(n=5, seed=1, split="test") != gen(n=5, seed=1, split="train")
    with pytest.raises(ValueError, match="min_count"):
        gen(n=1, seed=0, split="train", min_count=5, max_count=3)


def test_spell_backward_through_reasoning_gym():
    import reasoning_gym

    rows = TASKS.get("reasoning_gym/spell_backward")(n=50, seed=0, split="train")
    for r in rows:
        validate_row(r)
        assert r["data_source"] == "reasoning_gym/spell_backward"
        entry = json.loads(r["extra_info"]["rg_entry"])
        word = entry["metadata"]["word"]
        assert r["reward_model"]["ground_truth"] == word[::-1]
        scorer = reasoning_gym.get_score_answer_fn("spell_backward")
        assert scorer(r["reward_model"]["ground_truth"], entry) == 1.0
    assert len({r["reward_model"]["ground_truth"] for r in rows}) > 40


def test_any_reasoning_gym_task_and_unknown_name():
    rows = generate_reasoning_gym("gcd", n=3, seed=0, split="train")
    assert rows[0]["data_source"] == "reasoning_gym/gcd"
    with pytest.raises(KeyError, match="known:.*spell_backward"):
        generate_reasoning_gym("no_such_task", n=1, seed=0, split="train")


def test_rewards_score_reasoning_gym_and_countdown_golds():
    rewards = pytest.importorskip("rewards")
    row = TASKS.get("reasoning_gym/spell_backward")(n=1, seed=0, split="train")[0]
    res = rewards.compute_score(
        row["data_source"],
        f"<answer>{row['reward_model']['ground_truth']}</answer>",
        row["reward_model"]["ground_truth"],
        extra_info=row["extra_info"],
    )
    assert res["acc"], res
    cd = TASKS.get("countdown")(n=1, seed=0, split="train")[0]
    try:
        res = rewards.compute_score(
            "countdown",
            f"<answer>{cd['extra_info']['solution']}</answer>",
            cd["reward_model"]["ground_truth"],
            extra_info=cd["extra_info"],
        )
    except KeyError:
        pytest.skip("rewards has no countdown verifier yet")
    assert res["acc"], res
