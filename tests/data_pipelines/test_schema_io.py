"""Row validation, parquet writing, and loading through veRL's own RLHFDataset."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from data_pipelines.io import check_loads_in_verl, read_rows, rows_to_table, write_rows
from data_pipelines.schema import RowError, validate_row
from data_pipelines.tasks import TASKS


def _row(**over):
    row = {
        "data_source": "gsm8k",
        "prompt": [{"role": "user", "content": "1+1?"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": "2"},
        "extra_info": {"index": 0, "split": "train"},
    }
    row.update(over)
    return row


@pytest.mark.parametrize(
    "over, key",
    [
        ({"prompt": []}, "prompt"),
        ({"prompt": [{"role": "robot", "content": "x"}]}, "prompt[0].role"),
        ({"prompt": [{"role": "user", "content": "  "}]}, "prompt[0].content"),
        ({"reward_model": {"style": "rule", "ground_truth": ""}}, "reward_model.ground_truth"),
        ({"reward_model": {"style": "model", "ground_truth": "2"}}, "reward_model.style"),
        ({"extra_info": {"index": "0", "split": "train"}}, "extra_info.index"),
        ({"extra_info": {"index": 0, "split": "train", "meta": {"a": 1}}}, "extra_info.meta"),
        ({"data_source": ""}, "data_source"),
    ],
)
def test_malformed_rows_name_file_row_and_key(over, key):
    with pytest.raises(RowError) as e:
        rows_to_table([_row(), _row(**over)], "out/train.parquet")
    assert str(e.value).startswith(f"out/train.parquet: row 1: {key}:")


def test_write_read_roundtrip_and_types(tmp_path):
    rows = TASKS.get("countdown")(n=20, seed=0, split="train")
    info = write_rows(rows, tmp_path / "train.parquet")
    assert info["rows"] == 20 and len(info["sha256"]) == 64
    schema = pq.read_schema(tmp_path / "train.parquet")
    prompt_type = schema.field("prompt").type
    assert isinstance(prompt_type, pa.ListType)
    assert str(prompt_type.value_type) == "struct<role: string, content: string>"
    assert str(schema.field("reward_model").type) == "struct<style: string, ground_truth: string>"
    back = read_rows(tmp_path / "train.parquet")
    assert back == rows
    assert not list(tmp_path.glob(".*tmp"))  # no temp file left behind
    with pytest.raises(ValueError, match="no rows"):
        write_rows([], tmp_path / "empty.parquet")


def test_loads_in_verl_rlhf_dataset(tmp_path, tokenizer):
    for name in ("overtime_pay", "countdown", "reasoning_gym/spell_backward"):
        rows = TASKS.get(name)(n=6, seed=0, split="train")
        path = tmp_path / f"{name.replace('/', '_')}.parquet"
        write_rows(rows, path)
        assert check_loads_in_verl(path, tokenizer) == 6
        validate_row(read_rows(path)[0])


def test_verl_dropping_rows_is_an_error(tmp_path, tokenizer):
    write_rows(TASKS.get("overtime_pay")(n=3, seed=0, split="train"), tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="kept 0 of 3 rows"):
        check_loads_in_verl(tmp_path / "t.parquet", tokenizer, max_prompt_length=16)
