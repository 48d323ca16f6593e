"""The broken-input table: each row breaks one thing a GPU run would trip over after it started, and
``recipes.run ... engine=verl`` must refuse it before launch.sh is written, naming the problem.

GPUs are the one thing this machine lacks: the GPU presence check and the launch itself are
replaced (the launch by a recorder that must stay unused); everything else is the real path --
composition, validation, the pre-flight, veRL's RLHFDataset, the reward functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import recipes.run as run_mod
from data_pipelines.io import write_rows

BAD = Path(__file__).with_name("bad_rewards.py")


def _reward(name: str) -> list[str]:
    return [f"reward.custom_reward_function.path=file://{BAD}", f"reward.custom_reward_function.name={name}"]


def _set(field: str, value, rows: list[int]):
    def mutate(data: list[dict]) -> list[dict]:
        for i in rows:
            if field == "data_source":
                data[i]["data_source"] = value
            else:
                data[i]["reward_model"]["ground_truth"] = value
        return data

    return mutate


def _write_raw(kind: str):
    """Writers for files that data_pipelines.io would refuse to write."""

    def write(data: list[dict], path: Path) -> None:
        t = pa.Table.from_pylist(data)
        if kind == "renamed":
            t = t.rename_columns(["question" if c == "prompt" else c for c in t.column_names])
        elif kind == "string":  # prompt as a plain string
            t = t.set_column(
                t.column_names.index("prompt"), "prompt", pa.array([r["prompt"][-1]["content"] for r in data])
            )
        pq.write_table(t, path)

    return write


#: (case, overrides, mutation of the training rows, raw writer, fragment the refusal must contain)
TABLE = [
    ("missing data file", ["data.train_files={d}/nope.parquet"], None, None, "does not exist"),
    ("prompt column renamed", [], None, _write_raw("renamed"), "column 'prompt': missing"),
    ("prompt stored as plain text", [], None, _write_raw("string"), "list of {role, content} messages"),
    (
        "unregistered data source",
        [],
        _set("data_source", "mystery_task", [3, 9]),
        None,
        "'mystery_task' (2 rows) has no verifier",
    ),
    (
        "gold that fails its own verifier",
        [],
        _set("gold", "twelve", [1, 5, 7]),
        None,
        "3 golds are not credited",
    ),
    (
        "empty gold",
        [],
        _set("gold", "  ", [2]),
        _write_raw("as is"),
        "1 rows have no reward_model.ground_truth",
    ),
    (
        "reward returns a list",
        _reward("returns_list"),
        None,
        None,
        "returned a list of 2 values for one response",
    ),
    ("reward returns NaN", _reward("returns_nan"), None, None, "returned nan"),
    ("reward returns a string", _reward("returns_str"), None, None, "returned a str"),
    (
        "reward raises on an empty response",
        _reward("raises_on_empty"),
        None,
        None,
        "raised on the empty response",
    ),
    (
        "reward credits everything",
        _reward("credits_everything"),
        None,
        None,
        "credits a perturbed (wrong) gold",
    ),
    ("reward dict keys vary", _reward("keys_vary"), None, None, "different key sets"),
    ("prompts over the limit", ["data.max_prompt_length=20"], None, None, "silently left-truncates them"),
    (
        "plan that cannot fit",
        [
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        ],
        None,
        None,
        "training state alone needs",
    ),
    (
        "rollout tensor parallel over more GPUs than exist",
        ["actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
        None,
        None,
        "tensor_model_parallel_size=2",
    ),
]


@pytest.fixture
def launcher(monkeypatch):
    """A GPU machine as far as recipes.run can tell (24 GB GPUs), with the launch recorded, not run."""
    calls: list[Path] = []
    monkeypatch.setattr(run_mod, "on_cpu", lambda: False)
    monkeypatch.setattr("recipes.supervise.launch", lambda d: calls.append(d) or 0)
    monkeypatch.setattr("recipes.preflight.memory._gpu_memory_gb", lambda ctx: 24.0)
    return calls


def _base(d: Path, llama: Path) -> list[str]:
    return [
        "recipe=grpo",
        "engine=verl",
        f"data.train_files={d}/train.parquet",
        f"data.val_files={d}/val.parquet",
        f"actor_rollout_ref.model.path={llama}",
        "data.max_prompt_length=64",
        "data.max_response_length=64",
        "trainer.n_gpus_per_node=1",
        "data.train_batch_size=8",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        f"run_dir={d}/run",
    ]


def _launch(tmp_path, ckpts, rows, mutate=None, writer=None, extra=()) -> tuple[int, Path]:
    train = json.loads(json.dumps(rows["train"]))
    if mutate:
        train = mutate(train)
    (writer or write_rows)(train, tmp_path / "train.parquet")
    write_rows(rows["val"], tmp_path / "val.parquet")
    code = run_mod.run([*_base(tmp_path, ckpts["llama"]), *(e.format(d=tmp_path) for e in extra)])
    return code, tmp_path / "run"


def test_the_good_input_launches(tmp_path, ckpts, rows, cache_dir, launcher, capsys) -> None:
    """The control row: the same inputs unbroken pass the pre-flight and reach the launch."""
    code, run_dir = _launch(tmp_path, ckpts, rows)
    assert code == 0, capsys.readouterr().err
    assert launcher == [run_dir] and (run_dir / "launch.sh").is_file()
    assert json.loads((run_dir / "preflight.json").read_text())["verdict"] in ("pass", "warn")


@pytest.mark.parametrize("case,extra,mutate,writer,fragment", TABLE, ids=[r[0] for r in TABLE])
def test_broken_input_is_refused_before_launch(
    tmp_path, ckpts, rows, cache_dir, launcher, capsys, case, extra, mutate, writer, fragment
) -> None:
    code, run_dir = _launch(tmp_path, ckpts, rows, mutate, writer, extra)
    err = capsys.readouterr().err
    assert code == 2, err
    assert launcher == [] and not (run_dir / "launch.sh").exists()
    assert fragment in err and "nothing was launched" in err
    report = json.loads((run_dir / "preflight.json").read_text())
    failed = [f for f in report["findings"] if f["level"] == "fail"]
    assert any(fragment in f"{f['where']}: {f['message']}" for f in failed), failed
    assert all(f["fix"] for f in failed)  # every refusal says what to change


def test_dry_run_writes_the_report_and_goes_on(tmp_path, ckpts, rows, cache_dir, launcher, capsys) -> None:
    code, run_dir = _launch(
        tmp_path, ckpts, rows, extra=["data.train_files={d}/nope.parquet", "dry_run=true"]
    )
    assert code == 0 and launcher == []
    assert "a launch would be refused; dry run goes on" in capsys.readouterr().err
    assert (run_dir / "launch.sh").is_file()
    assert json.loads((run_dir / "preflight.json").read_text())["verdict"] == "fail"


def test_preflight_false_skips_the_checks(tmp_path, ckpts, rows, cache_dir, launcher) -> None:
    code, run_dir = _launch(
        tmp_path, ckpts, rows, extra=["data.train_files={d}/nope.parquet", "preflight=false"]
    )
    assert code == 0 and launcher == [run_dir]
    assert not (run_dir / "preflight.json").exists()
