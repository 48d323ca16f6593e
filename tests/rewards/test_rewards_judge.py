"""The model-based fallback's mechanics with a locally built tiny causal LM (random weights).

The tiny model's verdicts are arbitrary; what is tested is the plumbing: the judge is asked only
when the rules say no, its verdict is exactly the model's (" yes" logit vs " no" logit, recomputed
here from the model), a flip credits the response with the reason saying so, and flips are counted.
"""

from __future__ import annotations

import pytest

import rewards
from rewards import judge as judge_mod


@pytest.fixture(scope="module")
def tiny_judge_dir(tmp_path_factory):
    from core.model import ModelSpec, build_checkpoint

    spec = ModelSpec(64, 2, 4, 2, 256, 2048)
    return str(build_checkpoint(tmp_path_factory.mktemp("judge") / "tiny", spec, tokenizer="byte", seed=3))


def test_judge_only_asked_when_the_rules_say_no(tiny_judge_dir: str) -> None:
    spec = f"hf:{tiny_judge_dir}"
    before = dict(judge_mod.STATS)
    r = rewards.compute_score("math", r"\boxed{2\sqrt{3}}", r"\sqrt{12}", judge=spec)
    assert r["acc"] and r["reason"] == "" and judge_mod.STATS == before  # rules credited it: no call
    hf = judge_mod.resolve_judge(spec)
    flips = 0
    cases = [
        (r"\boxed{7}", "8"),
        (r"\boxed{odd}", "even"),
        ("no answer here", "3"),
        (r"\boxed{0.333}", r"\frac13"),
    ]
    for resp, gold in cases:
        y, n = hf.logits(gold, resp)
        r = rewards.compute_score("math", resp, gold, judge=spec)
        assert r["acc"] is (y > n)  # exactly the model's verdict
        if r["acc"]:
            flips += 1
            assert r["reason"].startswith("judge: credited (rule: ")
    assert judge_mod.STATS["asked"] == before["asked"] + len(cases)
    assert judge_mod.STATS["flipped"] == before["flipped"] + flips


def test_judge_never_used_for_exact_sources(tiny_judge_dir: str) -> None:
    before = dict(judge_mod.STATS)
    r = rewards.compute_score(
        "countdown", "<answer>1+1</answer>", {"target": 3, "numbers": [1, 1]}, judge=f"hf:{tiny_judge_dir}"
    )
    assert not r["acc"] and judge_mod.STATS == before


def test_bad_judge_spec_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"reward_kwargs\] judge"):
        rewards.compute_score("math", r"\boxed{7}", "8", judge="nonsense")
