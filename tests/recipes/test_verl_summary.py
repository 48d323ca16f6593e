"""``recipes.verl_summary``: the local engine's held-out metrics and ``summary.json`` from a veRL run's outputs.

The held-out length is the local engine's count (tokens, end-of-sequence included) wherever the sampled
tokens are the tokenizer's encoding of their text, and never more than it; the accuracy is the local
engine's, value for value, on a dump written by veRL's ``_write_generations``; the derived lines replace
themselves in ``metrics.jsonl``; ``summary.json`` names the split the held-out file was cut from.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from omegaconf import OmegaConf

from core.compose import compose
from core.data import Prompt, chat_ids
from core.sampler import generate
from recipes import verl_summary
from recipes.local.track import dump_generations
from recipes.local.trainer import Engine

MAX = 16


def test_length_is_the_local_engines_count(tiny_lm) -> None:
    """Per sample of a random tiny model (which samples special tokens often): the re-tokenized length
    equals the sampled count when the sampled tokens re-encode to themselves, and is at most it when the
    decoding dropped a special token or the text re-encodes to fewer tokens."""
    torch.manual_seed(0)
    model, tok = tiny_lm()
    prompts = [chat_ids(tok, [{"role": "user", "content": f"{i}+{i}"}]) for i in range(32)]
    ro = generate(
        model, prompts, 4, MAX, tok.eos_token_id, tok.pad_token_id, generator=torch.Generator().manual_seed(1)
    )
    same = fewer = 0
    for row, n in zip(ro.responses, ro.response_lengths.tolist(), strict=True):
        ids = row[: int(n)].tolist()
        body = ids[:-1] if ids and ids[-1] == tok.eos_token_id else ids
        text = tok.decode(ids, skip_special_tokens=True)
        got = verl_summary.response_tokens(text, tok, MAX)
        if tok.encode(text, add_special_tokens=False) == body:
            assert got == n, (ids, text)
            same += 1
        else:
            assert got <= n, (ids, text)  # equal only when a response that filled MAX dropped a special
            fewer += 1
    assert same > 0 and fewer > 0, (same, fewer)


def _prompts(tok: object, n: int) -> list[Prompt]:
    return [
        Prompt(chat_ids(tok, [{"role": "user", "content": f"{i}+1"}]), f"{i}+1", "arithmetic", str(i + 1), {})
        for i in range(n)
    ]


def test_accuracy_is_the_local_engines_on_a_verl_format_dump(tiny_lm, tmp_path: Path, hydra_ctx) -> None:
    """The local engine's evaluation, dumped in veRL's validation format: the same ``rlvr/val_acc``."""
    import rewards

    model, tok = tiny_lm()
    cfg = compose(["recipe=r1_zero", "scale=laptop_base", f"data.max_response_length={MAX}"])
    eng = Engine(cfg, model, tok, rewards.compute_score, train=_prompts(tok, 4), val=_prompts(tok, 24))
    metrics, d = eng.evaluate()
    dump_generations(tmp_path / "validation", 0, d["inputs"], d["outputs"], d["gts"], d["scores"], d["extra"])
    got = verl_summary.val_metrics(tmp_path, tok, MAX)[0]
    assert got[verl_summary.ACC] == pytest.approx(metrics["rlvr/val_acc"], abs=0)
    assert got["n"] == 24
    assert got[verl_summary.LEN] <= metrics["rlvr/val_response_length"]


def _run_dir(tmp: Path, ckpt: Path) -> Path:
    """A finished veRL run's files as ``recipes.run`` and veRL write them, on a tiny checkpoint."""
    run = tmp / "run"
    (run / "validation").mkdir(parents=True)
    rows = [
        {
            "prompt": [{"role": "user", "content": f"{i}+1"}],
            "data_source": "arithmetic",
            "reward_model": {"ground_truth": str(i + 1)},
        }
        for i in range(6)
    ]
    test = tmp / "test.parquet"
    pq.write_table(pa.Table.from_pylist(rows), test)
    (run / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:4]), run / "data" / "val.first4.parquet")
    overrides = [
        "recipe=r1_zero",
        "scale=laptop_base",
        f"data.val_files={test}",
        f"actor_rollout_ref.model.path={ckpt}",
    ]
    cfg = compose(overrides)
    cfg.data.val_files = str(run / "data" / "val.first4.parquet")  # as recipes.launch_cpu points it
    OmegaConf.save(cfg, run / "config.yaml", resolve=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    (run / "run.json").write_text(json.dumps({"overrides": overrides, "started": started}))
    dumps = {0: (["1", "<answer>2</answer>"], [False, True]), 2: (["<answer>1</answer>"] * 2, [True, True])}
    for step, (outs, acc) in dumps.items():
        scores = [float(a) for a in acc]
        dump_generations(run / "validation", step, ["q"] * 2, outs, ["1", "2"], scores, {"acc": acc})
    lines = [{"step": 0, "data": {"val-core/arithmetic/acc/mean@1": 0.5}}]
    lines += [{"step": s, "data": {"timing_s/step": 1.0}} for s in (1, 2)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_summary_and_metrics(tiny_checkpoint, tmp_path: Path, hydra_ctx) -> None:
    """``summary.json`` holds the local engine's keys and the split's hash; the derived metric lines are
    appended once, however often the summary is written, and veRL's own lines stay."""
    from core.data import sha256_file

    run = _run_dir(tmp_path, tiny_checkpoint())
    for _ in range(2):
        s = verl_summary.write_summary(run)
    assert (s["start_acc"], s["end_acc"], s["steps"], s["eval_samples"], s["engine"]) == (
        0.5,
        1.0,
        2,
        2,
        "verl",
    )
    assert s["data_sha256"] == {str(tmp_path / "test.parquet"): sha256_file(tmp_path / "test.parquet")}
    assert json.loads((run / "summary.json").read_text()) == s
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    derived = [r for r in rows if verl_summary.ACC in r["data"]]
    assert [r["step"] for r in derived] == [0, 2] and len(rows) == 5
    assert (
        derived[0]["data"][verl_summary.LEN] == (2 + 4) / 2
    )  # "1" + EOS, "<answer>2</answer>" + EOS (tags: one token)


def test_no_dump_is_one_note(
    tiny_checkpoint, tmp_path: Path, hydra_ctx, capsys: pytest.CaptureFixture
) -> None:
    """Without validation dumps the run still finished: ``summarize`` notes why no summary was written."""
    run = _run_dir(tmp_path, tiny_checkpoint())
    for f in (run / "validation").iterdir():
        f.unlink()
    assert verl_summary.summarize(run) is None
    assert "trainer.validation_data_dir" in capsys.readouterr().err
    assert not (run / "summary.json").exists()


@pytest.mark.slow
def test_a_verl_run_writes_its_summary_with_shuffled_rewards(tiny_checkpoint, tmp_path: Path) -> None:
    """``python -m recipes.run engine=verl`` (veRL's main_ppo on this CPU) with ``adv=grpo_shuffled``:
    veRL's processes import the estimator's module, the run finishes, and ``summary.json`` and the
    derived metric lines agree with veRL's own ``val-core`` accuracy."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    run = tmp_path / "run"
    args = [f"actor_rollout_ref.model.path={tiny_checkpoint()}", f"run_dir={run}", "adv=grpo_shuffled"]
    args += ["trainer.total_training_steps=2", "trainer.test_freq=2", "++local.task.train_n=64"]
    args += ["++local.task.val_n=16", "local.eval_samples=16", "data.max_response_length=24"]
    env = {**os.environ, "RLVR_CACHE": str(tmp_path / "cache")}
    env.pop("VERL_PLATFORM", None)
    cmd = [sys.executable, "-m", "recipes.run", "recipe=r1_zero", "engine=verl", *args]
    p = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "external_lib: recipes.shuffled_rewards" in (run / "verl_config.yaml").read_text()
    s = json.loads((run / "summary.json").read_text())
    by_step: dict[int, dict] = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_step.setdefault(row["step"], {}).update(row["data"])
    core = "val-core/arithmetic/acc/mean@1"
    assert (s["start_acc"], s["end_acc"]) == (round(by_step[0][core], 4), round(by_step[2][core], 4))
    assert by_step[2][verl_summary.ACC] == by_step[2][core] and by_step[2][verl_summary.LEN] > 0
    assert s["steps"] == 2 and s["eval_samples"] == 16 and "done: held-out accuracy" in p.stderr
