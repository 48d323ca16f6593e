"""The model-based fallback's wiring, tested with tiny local models whose verdict is known in advance.

Each model is a tiny Qwen2 (``core.model``, byte tokenizer) with its weights set by hand: attention and
MLP outputs are zero, so the last position's hidden state is the last token's embedding; only the space
token has a non-zero embedding; and the (untied) output layer maps that embedding onto one token.
So the *yes-model* puts its next-token mass on the token that spells " yes" after the space (``y``),
the *no-model* on the one that spells " no" (``n``), and the *mute model* answers nothing (all logits
equal). A judge that reads the verdict with the labels swapped, reads the wrong position, builds a
prompt without the gold or the response, or is asked about a case the rules already credited fails
here. These tests say nothing about how good any model judge is: no judge's verdicts have been
measured against real labels (see ``rewards.judge``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewards
from rewards import judge as judge_mod

WRONG = [
    (r"\boxed{7}", "8"),
    (r"\boxed{odd}", "even"),
    ("no answer here", "3"),
    (r"\boxed{0.333}", r"\frac13"),
]


def _build(path: Path, answer: str | None) -> str:
    """A tiny checkpoint at ``path`` whose next token after a space is ``answer``'s first byte (None: no preference)."""
    import torch

    from core.model import ModelSpec, build_model, build_tokenizer, save

    tok = build_tokenizer("byte")
    # the judge reads " yes" / " no": a byte-level space, then the first letter that differs
    assert tok.convert_ids_to_tokens(tok.encode(" yes", add_special_tokens=False)) == ["Ġ", "y", "e", "s"]
    assert tok.convert_ids_to_tokens(tok.encode(" no", add_special_tokens=False)) == ["Ġ", "n", "o"]
    model = build_model(ModelSpec(16, 1, 2, 1, 32, 4096), tok, seed=0)
    space = tok.convert_tokens_to_ids("Ġ")
    with torch.no_grad():
        for layer in model.model.layers:  # no attention, no MLP: the residual stream is the token's embedding
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb = torch.zeros_like(model.model.embed_tokens.weight)
        emb[space] = 1.0  # only a space carries a signal
        model.model.embed_tokens.weight.copy_(emb)
        head = torch.zeros_like(emb)
        if answer is not None:
            head[tok.convert_tokens_to_ids(answer[0])] = 1.0  # its logit: hidden_size after the norm
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(head)
    save(model, tok, path)
    return f"hf:{path}"


@pytest.fixture(scope="module")
def specs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("judge")
    return {name: _build(root / name, ans) for name, ans in (("yes", "yes"), ("no", "no"), ("mute", None))}


@pytest.fixture
def sent(specs: dict[str, str]) -> Iterator[list[str]]:
    """Every prompt the yes-model is run on (decoded from the ``input_ids`` its forward pass receives)."""
    hf = judge_mod.resolve_judge(specs["yes"])
    seen: list[str] = []

    def hook(_module: Any, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        seen.append(hf.tok.decode(ids[0].tolist()))

    handle = hf.model.register_forward_pre_hook(hook, with_kwargs=True)
    yield seen
    handle.remove()


def test_the_built_models_answer_as_designed(specs: dict[str, str]) -> None:
    """The fixtures themselves: the yes-model's " yes" logit is far above its " no" logit, and so on."""
    y, n = judge_mod.resolve_judge(specs["yes"]).logits("8", r"\boxed{7}")
    assert y - n > 5
    y, n = judge_mod.resolve_judge(specs["no"]).logits("8", r"\boxed{7}")
    assert n - y > 5
    y, n = judge_mod.resolve_judge(specs["mute"]).logits("8", r"\boxed{7}")
    assert y == n


@pytest.mark.parametrize(("response", "gold"), WRONG)
def test_a_yes_model_credits_a_refused_response(specs: dict[str, str], response: str, gold: str) -> None:
    # Swapping the labels (reading " no" as a yes) makes this test fail: the yes-model would refuse.
    before = dict(judge_mod.STATS)
    rule = rewards.compute_score("math", response, gold)
    r = rewards.compute_score("math", response, gold, judge=specs["yes"])
    assert not rule["acc"] and r["acc"] is True and r["score"] == 1.0
    assert r["reason"] == f"judge: credited (rule: {rule['reason']})"[:300]
    assert judge_mod.STATS == {"asked": before["asked"] + 1, "flipped": before["flipped"] + 1}


@pytest.mark.parametrize(("response", "gold"), WRONG)
def test_a_no_model_refuses(specs: dict[str, str], response: str, gold: str) -> None:
    # Swapping the labels makes this test fail too: the no-model would credit every one of them.
    before = dict(judge_mod.STATS)
    rule = rewards.compute_score("math", response, gold)
    r = rewards.compute_score("math", response, gold, judge=specs["no"])
    assert r == rule  # the rule's verdict and reason, untouched
    assert judge_mod.STATS == {"asked": before["asked"] + 1, "flipped": before["flipped"]}


def test_a_model_with_no_preference_refuses(specs: dict[str, str]) -> None:
    """A tie is no "yes" (``>=`` in place of ``>`` would credit it)."""
    assert not rewards.compute_score("math", r"\boxed{7}", "8", judge=specs["mute"])["acc"]


def test_swapped_labels_are_caught(specs: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the two tests above guard against, made on purpose: with the yes / no token ids
    swapped, the yes-model refuses and the no-model credits -- the opposite of what they assert."""
    for name, credited in (("yes", False), ("no", True)):
        hf = judge_mod.resolve_judge(specs[name])
        yes, no = hf.yes, hf.no
        monkeypatch.setattr(hf, "yes", no)
        monkeypatch.setattr(hf, "no", yes)
        assert rewards.compute_score("math", r"\boxed{7}", "8", judge=specs[name])["acc"] is credited
        monkeypatch.undo()


def test_the_prompt_sent_holds_the_gold_and_the_response_end(specs: dict[str, str], sent: list[str]) -> None:
    gold = r"\frac{17}{29}"
    head, tail = "HEAD-MARKER " + "x" * 3000, r" so the value is \boxed{0.586} TAIL-MARKER"
    assert not rewards.compute_score("math", head + tail, gold)["acc"]
    assert rewards.compute_score("math", head + tail, gold, judge=specs["yes"])["acc"]
    assert len(sent) == 1  # one forward pass
    prompt = sent[0]
    assert f"Reference answer: {gold}\n" in prompt  # the gold, verbatim
    shown = prompt.split("Response (end): ", 1)[1].split("\nEquivalent", 1)[0]
    assert shown == (head + tail)[-2000:]  # the response's last 2000 characters, verbatim
    assert "HEAD-MARKER" not in prompt
    assert prompt.endswith("(yes or no)? ")  # the verdict is read after " ", where " yes" and " no" part


def test_the_judge_is_not_asked_when_the_rules_credit(specs: dict[str, str], sent: list[str]) -> None:
    before = dict(judge_mod.STATS)
    r = rewards.compute_score("math", r"\boxed{2\sqrt{3}}", r"\sqrt{12}", judge=specs["yes"])
    assert r["acc"] and r["reason"] == ""
    assert sent == [] and judge_mod.STATS == before  # no forward pass, nothing counted

    class Counting:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str]] = []

        def judge(self, gold: str, response: str) -> bool:
            self.calls.append((gold, response))
            return True

    c = Counting()
    assert rewards.compute_score("math", r"\boxed{2\sqrt{3}}", r"\sqrt{12}", judge=c)["acc"]
    assert c.calls == []
    assert rewards.compute_score("math", r"\boxed{7}", "8", judge=c)["acc"]
    assert c.calls == [("8", r"\boxed{7}")]


def test_judge_never_used_for_exact_sources(specs: dict[str, str]) -> None:
    before = dict(judge_mod.STATS)
    r = rewards.compute_score(
        "countdown", "<answer>1+1</answer>", {"target": 3, "numbers": [1, 1]}, judge=specs["yes"]
    )
    assert not r["acc"] and judge_mod.STATS == before


def test_bad_judge_spec_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"reward_kwargs\] judge"):
        rewards.compute_score("math", r"\boxed{7}", "8", judge="nonsense")
