"""Hub adapters on small local fixtures in each hub's own layout (no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from data_pipelines.hub import ADAPTERS, convert_rows, read_local
from data_pipelines.make_data import run
from data_pipelines.schema import RowError

DAPO_Q = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\n{q}\n\n"
    'Remember to put your answer on its own line after "Answer:".'
)

FIXTURES = {
    "gsm8k": [
        {"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3+4=7\n#### 7"},
        {"question": "A shop sells 1,200 pens a day for 2 days. Total?", "answer": "#### 2,400"},
    ],
    "math": [
        {
            "problem": "Compute $\\frac{1}{2}+\\frac{1}{4}$.",
            "solution": "It is $\\boxed{\\frac{3}{4}}$.",
            "level": "Level 1",
            "type": "Algebra",
        }
    ],
    "math500": [
        {
            "problem": "What is $2^{10}$?",
            "answer": "1024",
            "subject": "Algebra",
            "level": 1,
            "unique_id": "test/algebra/1.json",
        }
    ],
    "dapo_math_17k": [
        {
            "data_source": "math_dapo",
            "prompt": [{"role": "user", "content": DAPO_Q.format(q="Find $x$ if $2x=6$.")}],
            "ability": "MATH",
            "reward_model": {"ground_truth": "3", "style": "rule-lighteval/MATH_v2"},
            "extra_info": {"index": "a1"},
        }
    ],
    "aime24": [
        {
            "id": 60,
            "problem": "Find the remainder when $7^{2024}$ is divided by 1000.",
            "answer": "001",
            "solution": "...",
        }
    ],
    "aime25": [{"problem": "How many positive divisors does 2025 have?", "answer": "15", "id": "I-1"}],
}
EXPECT = {
    "gsm8k": ["7", "2400"],
    "math": ["\\frac{3}{4}"],
    "math500": ["1024"],
    "dapo_math_17k": ["3"],
    "aime24": ["1"],
    "aime25": ["15"],
}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_adapter_converts_fixture(name, tmp_path):
    spec = ADAPTERS.get(name)
    path = _jsonl(tmp_path / f"{name}.jsonl", FIXTURES[name])
    rows, rep = convert_rows(read_local(path), spec, spec.local_split, str(path))
    assert [r["reward_model"]["ground_truth"] for r in rows] == EXPECT[name]
    assert rep["read"] == rep["converted"] == len(FIXTURES[name]) and rep["skipped"] == 0
    assert rows[0]["data_source"] == ("gsm8k" if name == "gsm8k" else "math")
    if name == "dapo_math_17k":
        assert rows[0]["extra_info"]["question"] == "Find $x$ if $2x=6$."
        assert rows[0]["prompt"][0]["content"].count("Solve the following") == 1  # re-templated, not doubled


def test_make_data_from_local_parquet_and_verl_load(tmp_path, tiny_model):
    src = tmp_path / "gsm8k.parquet"
    pq.write_table(pa.Table.from_pylist(FIXTURES["gsm8k"] * 2), src)  # a duplicate pair
    test = _jsonl(tmp_path / "gsm8k_test.jsonl", [{"question": "What is 5+5?", "answer": "#### 10"}])
    cfg = OmegaConf.load(Path(__file__).resolve().parents[2] / "conf/datagen/make_data.yaml")
    cfg.pop("hydra")
    cfg.pop("defaults")
    cfg.merge_with(
        {
            "data": "gsm8k",
            "data_path": str(src),
            "test_path": str(test),
            "out": str(tmp_path / "out"),
            "validate": {"tokenizer": str(tiny_model)},
        }
    )
    man = run(cfg)
    assert man["files"]["train"]["rows"] == 2 and man["files"]["train"]["verl_rows"] == 2
    assert man["files"]["test"]["rows"] == 1
    assert man["report"]["dedup"][0]["removed"] == 2
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["files"]["train"]["sha256"]


def test_malformed_row_names_file_and_row_or_is_counted(tmp_path):
    bad = FIXTURES["gsm8k"] + [{"question": "No final line", "answer": "it is 5"}, {"answer": "#### 1"}]
    path = _jsonl(tmp_path / "g.jsonl", bad)
    spec = ADAPTERS.get("gsm8k")
    with pytest.raises(RowError, match=r"g\.jsonl: row 2: answer: no '#### <number>'"):
        convert_rows(read_local(path), spec, "train", str(path))
    rows, rep = convert_rows(read_local(path), spec, "train", str(path), on_error="skip")
    assert len(rows) == 2 and rep["skipped"] == 2 and rep["read"] == 4
    assert "row 3: question" in rep["skipped_examples"][1]


def test_broken_json_line_and_missing_file(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"question": "a", "answer": "#### 1"}\n{not json\n')
    with pytest.raises(RowError, match=r"x\.jsonl: row 1: <line>: invalid JSON"):
        list(read_local(path))
    with pytest.raises(FileNotFoundError, match="data_path"):
        list(read_local(tmp_path / "missing.parquet"))


def test_hub_path_through_datasets_load_dataset(tmp_path):
    """The hub code path (``datasets.load_dataset``) on a local dataset folder, so no network."""
    from dataclasses import replace

    from data_pipelines.hub import read_hub

    folder = tmp_path / "gsm8k_mirror"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(FIXTURES["gsm8k"]), folder / "train.parquet")
    pq.write_table(
        pa.Table.from_pylist([{"question": "What is 5+5?", "answer": "#### 10"}]), folder / "test.parquet"
    )
    spec = replace(ADAPTERS.get("gsm8k"), hub_id=str(folder), config=None)
    rows, rep = convert_rows(read_hub(spec, "test"), spec, "test", "mirror:test")
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["10"] and rep["read"] == 1
    missing = replace(spec, hub_id=str(tmp_path / "nope"))
    with pytest.raises(RuntimeError, match="pass data_path=<local"):
        list(read_hub(missing, "train"))
