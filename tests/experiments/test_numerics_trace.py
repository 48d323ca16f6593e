"""experiments.numerics_trace and its docs block: where two processors' weight traces part, rendered."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core import results
from core.cli import UsageError
from docgen.status import numerics_trace as block
from experiments import numerics_trace as nt


def test_first_difference_is_the_first_step_that_differs() -> None:
    assert nt.first_difference(["a", "b", "c"], ["a", "b", "c"]) is None
    assert nt.first_difference(["a", "b", "c"], ["a", "x", "y"]) == 2
    assert nt.first_difference(["a"], ["z"]) == 1
    with pytest.raises(ValueError):  # traces of different lengths are not compared
        nt.first_difference(["a"], ["a", "b"])


def test_worker_command_runs_natively_or_under_the_emulator() -> None:
    native = nt.worker_command(None, "project", 3, 2)
    assert native[-4:] == ["--worker", "project", "3", "2"] and native[0] != nt.EMULATOR
    assert nt.worker_command("Haswell-v4", "project", 3, 1)[:3] == [nt.EMULATOR, "-cpu", "Haswell-v4"]


def test_the_block_marks_the_step_where_weights_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    assert "Not run yet" in block().markdown
    row = {"corpus_same": True, "init_same": True, "sqrt_misrounded": 0.15}
    rows = [
        {**row, "processor": "native", "optimizer": "project", "first_step_differing": None},
        {**row, "processor": "Haswell-v4", "optimizer": "project", "first_step_differing": None},
        {**row, "processor": "Haswell-v4", "optimizer": "torch_default", "first_step_differing": 1},
        {**row, "processor": "native", "optimizer": "project", "threads": 2, "first_step_differing": 1},
        {
            **row,
            "processor": "EPYC-Rome",
            "optimizer": "torch_default",
            "init_same": False,
            "first_step_differing": 1,
        },
    ]
    results.write_table(
        "numerics_trace", "latest", {"steps": 6, "rows": rows, "emulator": "qemu 7.2", "native": {}}
    )
    text = block().markdown
    assert text.count("| never |") == 2 and text.count("| **1** |") == 3
    assert "| this machine (" in text and ", 2 threads | `project` | yes | **1** |" in text
    assert "| Haswell-v4 (emulated) | `torch_default` | yes |" in text
    assert "| EPYC-Rome (emulated) | `torch_default` | **no** |" in text  # initial weights differ
    assert "of 6" in text and "15.0%" in text and "qemu 7.2" in text


def _pretrain_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A results dir holding a one-row pretraining trace (the block's first table)."""
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    row = {"corpus_same": True, "init_same": True, "sqrt_misrounded": 0.15, "optimizer": "project"}
    rows = [{**row, "processor": "native", "first_step_differing": None}]
    results.write_table(
        "numerics_trace", "latest", {"steps": 6, "rows": rows, "emulator": "qemu", "native": {}}
    )


def test_the_block_shows_the_rl_runs_and_the_values_that_differ(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pretrain_record(tmp_path, monkeypatch)
    assert "RL steps" not in block().markdown  # no RL record yet
    rl = [
        {"processor": "native", "files": 5, "files_differing": [], "metrics": 90, "metrics_differing": {}},
        {
            "processor": "Haswell-v4",
            "files": 5,
            "files_differing": ["rollouts/2.jsonl"],
            "metrics": 90,
            "metrics_differing": {"1/training/x": [1.0, 0.5]},
        },
    ]
    resumed = {"from_step": 40, "resumed": True, "files": 4, "files_differing": [], "metrics": 80}
    rl += [
        {**resumed, "processor": "native", "metrics_differing": {}},
        {**resumed, "processor": "Haswell-v4", "metrics_differing": {"41/actor/pg_loss": [0.1, 0.2]}},
    ]
    results.write_table("numerics_trace", "rl", {"steps": 2, "rows": rl})
    text = block().markdown
    assert "Then RL steps of `r1_zero`" in text
    assert "| 1–2 | Haswell-v4 (emulated) | 4 of 5 | 89 of 90 | `1/training/x` |" in text
    assert "| 1–2 | this machine (the reference run) | 5 of 5 | 90 of 90 | none |" in text
    assert (
        "| 41–42 | this machine, resumed from the checkpoint at step 40 | 4 of 4 | 80 of 80 | none |" in text
    )
    assert (
        "| 41–42 | Haswell-v4 (emulated), resumed from the checkpoint at step 40 | 4 of 4 | 79 of 80 |"
        in text
    )


def test_a_run_is_compared_by_its_files_and_its_metrics_without_clocks(tmp_path: Path) -> None:
    (tmp_path / "rollouts").mkdir()
    (tmp_path / "rollouts" / "1.jsonl").write_text("a\n")
    (tmp_path / "checkpoints" / "global_step_2").mkdir(parents=True)
    torch.save({"w": torch.ones(2)}, tmp_path / "checkpoints" / "global_step_2" / "state.pt")
    (tmp_path / "checkpoints" / "global_step_1").mkdir()
    torch.save({"w": torch.zeros(2)}, tmp_path / "checkpoints" / "global_step_1" / "state.pt")  # not the last
    (tmp_path / "metrics.jsonl").write_text(
        '{"step": 1, "data": {"rlvr/gold_acc": 0.5, "timing_s/gen": 3.0, "perf/throughput": 9}}\n'
    )
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "0.jsonl").write_text("v\n")  # the run's start: compared too
    assert sorted(nt.run_files(tmp_path, 2)) == [
        "checkpoints/global_step_2/state.pt",
        "rollouts/1.jsonl",
        "validation/0.jsonl",
    ]
    assert nt.run_metrics(tmp_path) == {"1/rlvr/gold_acc": 0.5}
    cmd = nt.rl_command("Haswell-v4", tmp_path, 2)
    assert cmd[:3] == [nt.EMULATOR, "-cpu", "Haswell-v4"] and "trainer.total_training_steps=2" in cmd


def test_a_checkpoint_is_compared_by_what_it_holds_not_by_its_pickle(tmp_path: Path) -> None:
    """One tensor held twice pickles to other bytes than two equal tensors (as in an uninterrupted run
    and a resumed one): the same checkpoint; a changed value is not."""
    t = torch.arange(4.0)
    n = torch.tensor(3.0)  # 0-d, as a step count is
    for name, state in {
        "shared": {"a": t, "b": t, "n": n},
        "copies": {"a": t.clone(), "b": t.clone(), "n": n},
    }.items():
        (tmp_path / name / "checkpoints" / "global_step_1").mkdir(parents=True)
        torch.save(state, tmp_path / name / "checkpoints" / "global_step_1" / "state.pt")
    f = "checkpoints/global_step_1/state.pt"
    assert (tmp_path / "shared" / f).read_bytes() != (tmp_path / "copies" / f).read_bytes()
    assert nt.run_files(tmp_path / "shared", 1) == nt.run_files(tmp_path / "copies", 1)
    torch.save({"a": t, "b": t + 1e-6, "n": n}, tmp_path / "copies" / f)
    assert nt.run_files(tmp_path / "shared", 1) != nt.run_files(tmp_path / "copies", 1)


def test_a_window_resumes_the_build_exactly_from_its_saved_state(tmp_path: Path) -> None:
    """The windows' premise: steps from a saved state compute what the uninterrupted build computes
    (weights, optimizer moments, lr schedule and the batch sampler all restored)."""
    from core.compose import compose
    from recipes.local import pretrain

    cfg = compose(
        [
            "recipe=r1_zero",
            "scale=laptop_base",
            "local.pretrain.corpus.n=300",
            "local.pretrain.batch_size=8",
            "local.pretrain.warmup_steps=4",
        ]
    )
    p = cfg.local.pretrain

    def steps(b: pretrain.Build, n: int) -> list[str]:
        out = []
        for _ in range(n):
            b.step(int(p.batch_size), int(p.chunks))
            out.append(nt.digest(b.model.state_dict().values()))
        return out

    whole = pretrain.setup(cfg)
    steps(whole, 2)  # inside the warmup, so the schedule's state matters
    nt.save_state(whole, tmp_path / "2.pt")
    expected = steps(whole, 3)

    resumed = pretrain.setup(cfg)
    nt.load_state(resumed, tmp_path / "2.pt")
    assert steps(resumed, 3) == expected
    fresh = pretrain.setup(cfg)  # the same three steps from step 0 are other weights
    assert steps(fresh, 3) != expected
    again = pretrain.setup(cfg)
    nt.load_state(again, tmp_path / "2.pt")
    again.rng.seed(1)  # the same weights and moments on other batches part at once
    assert steps(again, 1)[0] != expected[0]


def test_windows_are_checked_and_compared_with_the_uninterrupted_build() -> None:
    nt.check_windows([0, 1394], 6, 1400)
    with pytest.raises(UsageError, match=r"window_at\] 1395 \+ steps=6 .* fix: start it at 1394"):
        nt.check_windows([1395], 6, 1400)
    with pytest.raises(UsageError, match="at least one step"):
        nt.check_windows([], 6, 1400)
    rows = nt.compare_windows(
        {"700": ["a", "b", "c"], "1394": ["x", "y", "z"]},
        {
            ("700", "native"): {"weights": ["a", "b", "c"]},
            ("700", "EPYC-Rome"): {"weights": ["a", "b", "q"]},
            ("1394", "Haswell-v4"): {"weights": ["w", "y", "z"]},
        },
    )
    assert [r["first_step_differing"] for r in rows] == [None, 703, 1395]
    cmd = nt.worker_command("Haswell-v4", "--window", Path("/s/700.pt"), 6)
    assert cmd[:3] == [nt.EMULATOR, "-cpu", "Haswell-v4"] and cmd[-3:] == ["--window", "/s/700.pt", "6"]
    assert "--worker" not in cmd


def test_the_block_shows_the_windows_and_where_they_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _pretrain_record(tmp_path, monkeypatch)
    assert "saved state" not in block().markdown  # no windows record yet
    win = [
        {"window_at": 1394, "processor": "native", "steps": 6, "first_step_differing": None},
        {"window_at": 1394, "processor": "EPYC-Rome", "steps": 6, "first_step_differing": 1397},
    ]
    record = {"steps": 6, "build_steps": 1400, "rows": win, "final_weights_sha256": "bd6b2334fefc3abc"}
    results.write_table("numerics_trace", "windows", record)
    rendered = block()
    text = rendered.markdown
    assert "| 1395–1400 | this machine, from the saved state | never |" in text
    assert "| 1395–1400 | EPYC-Rome (emulated) | **1397** |" in text
    assert "1400-step build" in text and "sha256 `bd6b2334fefc`" in text
    assert any("results/numerics_trace/windows.json" in s for s in rendered.sources)


def test_an_rl_window_resumes_from_the_runs_checkpoint_and_compares_only_its_steps(tmp_path: Path) -> None:
    src, dst = tmp_path / "whole", tmp_path / "window"
    for step in (40, 42):
        (src / "checkpoints" / f"global_step_{step}").mkdir(parents=True)
        torch.save({"step": step}, src / "checkpoints" / f"global_step_{step}" / "state.pt")
    (src / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("42")
    (src / "local_state.json").write_text('{"start_acc": 0.2}')
    (src / "rollouts").mkdir()
    for step in (40, 41, 42):
        (src / "rollouts" / f"{step}.jsonl").write_text(f"r{step}\n")
    (src / "metrics.jsonl").write_text(
        "".join(
            f'{{"step": {k}, "data": {{"actor/pg_loss": {k}, "timing_s/step": 1}}}}\n' for k in (40, 41, 42)
        )
    )
    nt.resume_point(src, dst, 40)
    assert (dst / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "40"
    assert torch.load(dst / "checkpoints" / "global_step_40" / "state.pt") == {"step": 40}
    assert not (dst / "checkpoints" / "global_step_42").exists() and not (dst / "rollouts").exists()
    assert (dst / "local_state.json").read_text() == '{"start_acc": 0.2}'  # no second step-0 evaluation
    assert sorted(nt.run_files(src, 42, after=40)) == [
        "checkpoints/global_step_42/state.pt",
        "rollouts/41.jsonl",
        "rollouts/42.jsonl",
    ]
    assert nt.run_metrics(src, after=40) == {"41/actor/pg_loss": 41, "42/actor/pg_loss": 42}
    assert "trainer.save_freq=40" in nt.rl_command(None, src, 42, save_freq=40)
