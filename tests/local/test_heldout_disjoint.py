"""The R1-Zero miniature's held-out split is held out: distinct prompts that neither its train
split nor the base model's pretraining corpus contain, at the sizes the laptop_base scale uses."""

from __future__ import annotations

from collections import Counter

import pytest
from omegaconf import OmegaConf

from core.compose import compose
from data_pipelines.corpus import build_corpus
from data_pipelines.tasks import TASKS


@pytest.fixture(scope="module")
def cfg() -> OmegaConf:
    return compose(["recipe=r1_zero", "engine=local", "scale=laptop_base"])


def _questions(rows: list[dict]) -> list[str]:
    return [r["extra_info"]["question"] for r in rows]


def test_test_split_is_distinct_and_disjoint_from_train_and_pretraining(cfg: OmegaConf) -> None:
    task = OmegaConf.to_container(cfg.local.task, resolve=True)
    gen = TASKS.get(task["name"])
    test = _questions(gen(n=task["val_n"], seed=task["seed"], split="test", **task["params"]))
    train = _questions(gen(n=task["train_n"], seed=task["seed"], split="train", **task["params"]))
    c = cfg.local.pretrain.corpus
    docs = build_corpus(
        int(c.n),
        int(cfg.local.pretrain.seed),
        OmegaConf.to_container(c.mix),
        OmegaConf.to_container(c.params),
    )
    corpus = {d.meta["question"] for d in docs}
    assert len(test) == task["val_n"] == len(set(test)), "test prompts repeat"
    assert not set(test) & set(train), "a test prompt is in the train split"
    assert not set(test) & corpus, "a test prompt is in the base model's pretraining corpus"
    # every k of the task is tested, and the scored head of the split (eval_samples) too
    ks = Counter(q.count("+") + 1 for q in test[: int(cfg.local.eval_samples)])
    assert set(ks) == set(task["params"]["ks"]), ks


def test_corpus_question_is_the_documents_own(cfg: OmegaConf) -> None:
    """The corpus's recorded question is the one its text asks (so the disjointness check above
    compares what the model read)."""
    docs = build_corpus(300, 0, {"chain_sum": 1.0}, {"chain_sum": {"ks": [2, 3, 4], "lo": 1, "hi": 5}})
    for d in docs:
        q = d.meta["question"]
        assert (d.prompt or d.text).startswith(q) or q in d.text, d


def test_exhausted_partition_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no distinct held-out prompt left"):
        TASKS.get("chain_sum")(n=50, seed=0, split="test", ks=[2], lo=1, hi=5)
