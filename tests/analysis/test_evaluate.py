"""Evaluation: the metrics table, checkpoint resolution, budget forcing, and an end-to-end run
with the local engine's real CPU sampler on a tiny random model and ``rewards.compute_score``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from analysis.budget import budget_force
from analysis.evaluate import resolve_model, score_table
from analysis.metrics import pass_at_k
from core import model as model_mod
from core.cli import call, load
from core.sampling import Completion


def records(correct_counts: list[int], n: int, sources: list[str] | None = None) -> list[dict]:
    out = []
    for p, c in enumerate(correct_counts):
        for i in range(n):
            ok = i < c
            out.append(
                {
                    "prompt": p,
                    "data_source": (sources or ["s"] * len(correct_counts))[p],
                    "acc": ok,
                    "pred": "right" if ok else f"wrong{i % 2}",
                }
            )
    return out


def test_score_table_matches_estimators() -> None:
    counts = [0, 1, 4, 8, 3]
    t = score_table(records(counts, 8, ["a", "a", "b", "b", "b"]), [1, 2, 8, 16], n_resamples=500)
    assert t["samples_per_prompt"] == 8 and t["n_prompts"] == 5 and t["skipped_k"] == [16]
    for k in (1, 2, 8):
        want = np.mean([pass_at_k(8, c, k) for c in counts])
        got = t["overall"]["pass"][str(k)]
        assert got["mean"] == pytest.approx(want) and got["lo"] <= want <= got["hi"]
    assert t["overall"]["mean"]["1"]["mean"] == pytest.approx(np.mean(counts) / 8)
    # maj@8: prompt with 3 right vs wrong0 x3 / wrong1 x2 -> a 3-3 tie between right and wrong0 -> 0.5
    assert t["overall"]["maj"]["8"]["mean"] == pytest.approx((0 + 0 + 1 + 1 + 0.5) / 5)
    assert t["by_source"]["a"]["pass"]["8"]["mean"] == pytest.approx(0.5)
    assert set(t["by_source"]) == {"a", "b"}


def test_resolve_model_prefers_latest_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for step in (5, 40, 10):
        d = run / "checkpoints" / f"global_step_{step}" / "actor" / "huggingface"
        d.mkdir(parents=True)
        (d / "config.json").write_text("{}")
        (d / "model.safetensors").write_bytes(b"x")
    assert resolve_model(str(run)) == (
        str(run / "checkpoints" / "global_step_40" / "actor" / "huggingface"),
        None,
    )
    local = tmp_path / "local"  # the local engine: state.pt checkpoints on top of the config's model
    (local / "checkpoints" / "global_step_7").mkdir(parents=True)
    (local / "checkpoints" / "global_step_7" / "state.pt").write_bytes(b"x")
    (local / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("7")
    (local / "config.yaml").write_text("actor_rollout_ref:\n  model:\n    path: /models/base\n")
    assert resolve_model(str(local)) == (
        "/models/base",
        str(local / "checkpoints" / "global_step_7" / "state.pt"),
    )
    # the run recorded the weights it started from; the path now holds others: refused, named
    (local / "summary.json").write_text(json.dumps({"model_key": {"weights_sha256": "ab" * 32}}))
    with pytest.raises(FileNotFoundError, match="rebuilt since the run.*abababababab then"):
        resolve_model(str(local))
    (local / "summary.json").write_text(json.dumps({"model_key": None}))  # a model not built here
    assert resolve_model(str(local))[1] == str(local / "checkpoints" / "global_step_7" / "state.pt")
    (local / "checkpoints" / "latest_checkpointed_iteration.txt").unlink()
    assert resolve_model(str(local)) == ("/models/base", None)
    assert resolve_model("Qwen/Qwen2.5-0.5B") == ("Qwen/Qwen2.5-0.5B", None)
    with pytest.raises(FileNotFoundError):
        resolve_model(str(tmp_path / "missing"))


class ScriptedSampler:
    """A deterministic 'model' that always continues with ``script`` (honouring the token budget)."""

    name = "scripted"

    def __init__(self, tokenizer, script: str) -> None:
        self.tokenizer, self.script = tokenizer, script
        self.calls = 0

    def generate(self, prompts: list[list[int]], n: int, max_new_tokens: int) -> list[Completion]:
        self.calls += 1
        ids = self.tokenizer.encode(self.script, add_special_tokens=False)
        return [Completion(ids[:max_new_tokens], len(ids) <= max_new_tokens) for _ in range(len(prompts) * n)]


@pytest.fixture(scope="module")
def tokenizer():
    return model_mod.build_tokenizer()


def test_budget_forcing_min_think_adds_wait(tokenizer) -> None:
    s = ScriptedSampler(tokenizer, "ab</think>42")
    out = budget_force(
        s,
        [[1, 2]],
        2,
        {"min_think": 10, "wait_text": " Wait", "think_end": "</think>", "max_answer": 8},
        max_tokens=64,
    )
    assert len(out) == 2
    for f in out:
        assert f.think_tokens >= 10 and f.waits >= 2 and not f.truncated
        assert f.text.startswith("ab Waitab") and f.text.endswith("</think>42")


def test_budget_forcing_max_think_cuts_and_closes(tokenizer) -> None:
    s = ScriptedSampler(tokenizer, "abcdefghijklmnop")
    out = budget_force(s, [[1]], 1, {"max_think": 5, "think_end": "</think>", "max_answer": 3}, max_tokens=64)
    f = out[0]
    assert f.truncated and f.think_tokens == 5
    assert f.text == "abcde</think>abc"


@pytest.fixture(scope="module")
def tiny_setup(tmp_path_factory: pytest.TempPathFactory, tiny_checkpoint) -> tuple[Path, Path]:
    from data_pipelines.io import write_rows
    from data_pipelines.tasks import TASKS

    root = tmp_path_factory.mktemp("eval")
    model = tiny_checkpoint(
        (32, 1, 2, 1, 64, 256), "char", seed=0
    )  # built once per session (tests/conftest.py)
    data = root / "test.parquet"
    write_rows(TASKS.get("arithmetic")(n=3, seed=0, split="test"), data)
    return model, data


def eval_cfg(model: Path, data: Path, out: Path | None, **kw: object) -> OmegaConf:
    c = load("analysis", "evaluate")
    c.model, c.data, c.out, c.n, c.k, c.max_tokens, c.bootstrap = (
        str(model),
        str(data),
        None if out is None else str(out),
        4,
        [1, 2, 4, 8],
        12,
        200,
    )
    for k, v in kw.items():
        OmegaConf.update(c, k, v)
    return c


def test_evaluate_end_to_end_local_sampler(tiny_setup: tuple[Path, Path], tmp_path: Path) -> None:
    from analysis import evaluate

    model, data = tiny_setup
    result, files = evaluate.run(eval_cfg(model, data, tmp_path))
    st = result["settings"]
    assert (
        st["sampler"] == "local"
        and st["n"] == 4
        and st["temperature"] == 1.0
        and len(st["data_sha256"]) == 64
    )
    assert "torch" in st["versions"] and result["skipped_k"] == [8]
    samples = [json.loads(x) for x in files["samples"].read_text().splitlines()]
    assert len(samples) == 3 * 4 and {"score", "acc", "pred", "format"} <= set(samples[0])
    counts = [sum(s["acc"] for s in samples if s["prompt"] == p) for p in range(3)]
    assert result["overall"]["pass"]["2"]["mean"] == pytest.approx(
        np.mean([pass_at_k(4, c, 2) for c in counts])
    )
    assert (tmp_path / "tts.png").stat().st_size > 1000 and json.loads(files["result"].read_text()) == result
    again, _ = evaluate.run(eval_cfg(model, data, tmp_path / "again"))
    assert [
        json.loads(x)["output"] for x in (tmp_path / "again" / "samples.jsonl").read_text().splitlines()
    ] == [s["output"] for s in samples]  # seeded: the same samples twice


def test_evaluate_run_dir_loads_local_checkpoint(tiny_setup: tuple[Path, Path], tmp_path: Path) -> None:
    import torch

    from analysis import evaluate

    model, data = tiny_setup
    run = tmp_path / "run"
    (run / "checkpoints" / "global_step_3").mkdir(parents=True)
    (run / "config.yaml").write_text(f"actor_rollout_ref:\n  model:\n    path: {model}\n")
    (run / "run.json").write_text("{}")
    other, _ = model_mod.load(model)
    with torch.no_grad():
        for prm in other.parameters():
            prm.add_(0.5 * torch.randn_like(prm))
    torch.save({"model": other.state_dict(), "step": 3}, run / "checkpoints" / "global_step_3" / "state.pt")
    (run / "checkpoints" / "latest_checkpointed_iteration.txt").write_text("3")
    base, _ = evaluate.run(eval_cfg(model, data, tmp_path / "base", n=2, k=[1, 2]))
    trained, files = evaluate.run(eval_cfg(run, data, None, n=2, k=[1, 2]))
    assert files["result"] == run / "eval" / "result.json"  # default output inside the run dir
    assert trained["settings"]["checkpoint_state"].endswith("global_step_3/state.pt")
    outs = [json.loads(x)["output"] for x in files["samples"].read_text().splitlines()]
    base_outs = [
        json.loads(x)["output"] for x in (tmp_path / "base" / "samples.jsonl").read_text().splitlines()
    ]
    assert outs != base_outs  # the checkpoint's weights were used, not the base model's


def test_evaluate_with_budget_forcing_real_sampler(
    tiny_setup: tuple[Path, Path], tmp_path: Path, tokenizer
) -> None:
    from analysis import evaluate

    model, data = tiny_setup
    result, files = evaluate.run(
        eval_cfg(
            model, data, tmp_path, **{"budget.max_think": 6, "budget.max_answer": 4, "n": 2, "k": [1, 2]}
        )
    )
    assert result["settings"]["budget_forcing"]["max_think"] == 6
    for s in (json.loads(x) for x in files["samples"].read_text().splitlines()):
        think, sep, _ = s["output"].partition("</think>")
        n_think = len(tokenizer.encode(think, add_special_tokens=False))
        assert n_think <= 6 and (sep or n_think < 6)  # cut and closed at 6, or ended by EOS before


def test_evaluate_cli(
    tiny_setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from analysis import evaluate

    model, data = tiny_setup
    argv = [
        f"model={model}",
        f"data={data}",
        "n=2",
        "k=[1,2,4]",
        "max_tokens=8",
        "limit=2",
        f"out={tmp_path}",
    ]
    assert call(evaluate.command, "analysis", "evaluate", argv) == 0
    out = capsys.readouterr().out
    assert "k=  1  pass@k" in out and "k=  2  pass@k" in out and "skipped k > n: [4]" in out
    assert json.loads((tmp_path / "result.json").read_text())["n_prompts"] == 2
    with pytest.raises(SystemExit, match="missing data="):
        call(evaluate.command, "analysis", "evaluate", [f"model={model}"])


def test_majority_votes_on_normalised_answers() -> None:

    from analysis.evaluate import vote_key

    assert vote_key("0.5") == vote_key("1/2") == vote_key("\\frac{1}{2}") == "1/2"
    assert vote_key("1,600") == vote_key("$1600$") and vote_key("  ") is None
    preds = ["0.5", "1/2", "\\frac{1}{2}", "0.3", "0.3"]
    rows = [{"prompt": 0, "data_source": "m", "acc": p != "0.3", "pred": p} for p in preds]
    raw = score_table(rows, [5])
    voted = score_table([{**r, "vote": vote_key(r["pred"])} for r in rows], [5])
    assert raw["overall"]["maj"]["5"]["mean"] == 0.0  # "0.3" x2 beats three spellings of 1/2
    assert voted["overall"]["maj"]["5"]["mean"] == 1.0
