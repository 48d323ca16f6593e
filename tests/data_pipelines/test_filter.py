"""Offline difficulty filter: band logic, control set, rejection-sampled SFT, cache, errors,
and resume after SIGKILL (compared with an uninterrupted run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from omegaconf import OmegaConf

from core.cli import call
from data_pipelines.filter import check_band, run
from data_pipelines.io import read_rows, write_rows
from data_pipelines.rejection import check_loads_in_verl_sft
from data_pipelines.rejection import command as rejection_command
from data_pipelines.tasks import TASKS

REPO = Path(__file__).resolve().parents[2]


def cfg_for(**over):
    cfg = OmegaConf.load(REPO / "conf/datagen/filter.yaml")
    cfg.pop("hydra")
    cfg.pop("defaults")
    cfg.merge_with({"progress": False, **over})
    return cfg


class ScriptedGenerator:
    """Answers prompt i correctly in exactly (i mod (n+1)) of its n samples: a stand-in model with
    known pass rates, so the band, control and SFT logic can be checked exactly."""

    def __init__(self, rows):
        self.gold = {r["prompt"][-1]["content"]: r["reward_model"]["ground_truth"] for r in rows}
        self.index = {r["prompt"][-1]["content"]: i for i, r in enumerate(rows)}

    def fingerprint(self):
        return {"backend": "scripted"}

    def generate(self, prompts, n, seed):
        out = []
        for p in prompts:
            q = p[-1]["content"]
            k = self.index[q] % (n + 1)
            out.append(
                [
                    f"<think>try {j}</think><answer>{self.gold[q] if j < k else '0.5'}</answer>"
                    for j in range(n)
                ]
            )
        return out


@pytest.fixture()
def dataset(tmp_path):
    path = tmp_path / "train.parquet"
    write_rows(TASKS.get("overtime_pay")(n=20, seed=0, split="train"), path)
    return path


def test_band_errors():
    assert check_band([0.2, 0.8]) == (0.2, 0.8)
    with pytest.raises(ValueError, match=r"band=\[0.8, 0.2\] is inverted.*fix: band=\[0.2,0.8\]"):
        check_band([0.8, 0.2])
    with pytest.raises(ValueError, match="within"):
        check_band([0.2, 1.5])
    with pytest.raises(ValueError, match="two numbers"):
        check_band("0.2")


def test_clear_errors_before_any_work(dataset, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"model=/no/such/model: no such directory"):
        run(cfg_for(data=str(dataset), model="/no/such/model", out=str(tmp_path / "o")))
    with pytest.raises(ValueError, match="inverted"):
        run(cfg_for(data=str(dataset), model="/no/such/model", band=[0.9, 0.1]))
    with pytest.raises(FileNotFoundError, match="make data DATA=nothing_here"):
        run(cfg_for(data="nothing_here", model="/no/such/model"))


def test_band_control_and_sft_with_known_pass_rates(dataset, tmp_path, tokenizer):
    rows = read_rows(dataset)
    n = 4
    summary = run(
        cfg_for(
            data=str(dataset),
            model="scripted",
            n=n,
            band=[0.25, 0.75],
            out=str(tmp_path / "o"),
            validate=False,
            sampling={"batch_prompts": 3},
        ),
        generator=ScriptedGenerator(rows),
    )
    rates = [p["pass_rate"] for p in pq.read_table(tmp_path / "o/pass_rates.parquet").to_pylist()]
    assert rates == [(i % (n + 1)) / n for i in range(20)]
    filtered = read_rows(tmp_path / "o/filtered.parquet")
    expect = [i for i in range(20) if 1 <= i % 5 <= 3]
    assert [r["extra_info"]["index"] for r in filtered] == expect
    control = read_rows(tmp_path / "o/control.parquet")
    assert len(control) == len(filtered) == 12
    assert {r["extra_info"]["index"] for r in control} != set(expect)  # drawn from everything
    sft = pq.read_table(tmp_path / "o/sft.parquet").to_pylist()
    per_prompt = {i: min(i % 5, 4) for i in range(20)}
    assert len(sft) == sum(per_prompt.values()) == summary["sft"]["kept"]
    assert summary["sft"]["wrong"] == 20 * n - len(sft)
    assert all(
        s["messages"][-1]["role"] == "assistant" and s["ground_truth"] in s["messages"][-1]["content"]
        for s in sft
    )
    assert summary["histogram"] == {f"{k}/4": 4 for k in range(5)}
    assert Path(summary["histogram_png"]).stat().st_size > 1000
    assert check_loads_in_verl_sft(tmp_path / "o/sft.parquet", tokenizer) == len(sft)  # veRL's SFT dataset
    # the rejection CLI rebuilds the same SFT set from the cache, without sampling
    rejection_args = [f"cache={summary['cache_dir']}", f"data={dataset}", f"out={tmp_path / 'sft2.parquet'}"]
    assert call(rejection_command, "datagen", "rejection", rejection_args) == 0
    assert pq.read_table(tmp_path / "sft2.parquet").equals(pq.read_table(tmp_path / "o/sft.parquet"))


def test_real_tiny_model_run_and_cache_reuse(dataset, tmp_path, tiny_model):
    common = dict(
        data=str(dataset),
        model=str(tiny_model),
        n=2,
        out=str(tmp_path / "o"),
        sampling={"max_new_tokens": 8, "batch_prompts": 8},
    )
    first = run(cfg_for(**common))
    assert first["samples"] == 40 and first["timings"]["chunks_sampled"] == 3
    assert first["key_parts"]["model"]["backend"] == "hf"
    assert first["key_parts"]["verifier"] and first["key_parts"]["data_sha256"]
    second = run(cfg_for(**common))
    assert second["timings"]["chunks_sampled"] == 0 and second["cache_key"] == first["cache_key"]
    third = run(cfg_for(**{**common, "n": 3}))
    assert third["cache_key"] != first["cache_key"]


def _overrides(data, model, out):
    return [
        f"data={data}",
        f"model={model}",
        "n=4",
        f"out={out}",
        "sampling.max_new_tokens=32",
        "sampling.batch_prompts=2",
        "progress=false",
        "validate=false",
    ]


def _same_command(overrides):
    """The config the CLI builds from these overrides (Hydra's compose API), run in-process."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(REPO / "conf/datagen"), version_base="1.3"):
        return run(compose(config_name="filter", overrides=overrides))


def test_resume_after_sigkill_matches_uninterrupted_run(tmp_path, tiny_model):
    """SIGKILL the CLI mid-sampling, rerun the same command: the result equals an uninterrupted run.
    (The rerun and the reference run are composed from the same overrides in-process, to keep
    the test fast; the killed run is the real CLI process.)"""
    data = tmp_path / "train.parquet"
    write_rows(TASKS.get("reasoning_gym/spell_backward")(n=40, seed=0, split="train", template="plain"), data)
    killed_out = tmp_path / "killed"
    cli = [sys.executable, "-m", "data_pipelines.filter", *_overrides(data, tiny_model, killed_out)]
    proc = subprocess.Popen(
        cli, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if len(list(killed_out.glob("cache/*/samples-*.parquet"))) >= 3:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.02)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert not (killed_out / "summary.json").exists()
    done_before = len(list(killed_out.glob("cache/*/samples-*.parquet")))
    assert 3 <= done_before < 20
    resumed = _same_command(_overrides(data, tiny_model, killed_out))
    # the rerun sampled exactly the chunks the killed run had not finished (same cache key)
    assert resumed["timings"]["chunks_sampled"] == 20 - done_before
    assert resumed["timings"]["chunks_reused"] == done_before
    clean = _same_command(_overrides(data, tiny_model, tmp_path / "clean"))
    assert clean["timings"]["chunks_sampled"] == 20
    for name in ("pass_rates.parquet", "filtered.parquet", "control.parquet", "sft.parquet"):
        a, b = killed_out / name, tmp_path / "clean" / name
        assert a.exists() == b.exists(), name
        if a.exists():
            assert pq.read_table(a).equals(pq.read_table(b)), name
    samples = [pq.read_table(p) for p in sorted(Path(resumed["cache_dir"]).glob("samples-*.parquet"))]
    reference = [pq.read_table(p) for p in sorted(Path(clean["cache_dir"]).glob("samples-*.parquet"))]
    assert len(samples) == len(reference) == 20
    assert all(x.equals(y) for x, y in zip(samples, reference, strict=True))  # no prompt lost or duplicated


@pytest.mark.parametrize("sampler", ["local", "hf"], ids=["engine-sampler", "hf-generate"])
def test_hf_generator_shapes_and_seeding(tiny_model, sampler):
    from data_pipelines.generation import SamplerGenerator, SamplingParams

    gen = SamplerGenerator(
        tiny_model, SamplingParams(max_new_tokens=6), sampler
    )  # hf: the fallback on GPUs without vLLM
    assert gen.fingerprint()["sampler"] == {"local": "engine", "hf": "hf.generate"}[sampler]
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(3)]
    a = gen.generate(prompts, 4, seed=5)
    assert [len(x) for x in a] == [4, 4, 4] and all(isinstance(t, str) for x in a for t in x)
    assert a == gen.generate(prompts, 4, seed=5)
    assert a != gen.generate(prompts, 4, seed=6)


def test_unknown_data_source_fails_before_sampling(tmp_path):
    rows = TASKS.get("countdown")(n=3, seed=0, split="train")
    rows[2]["data_source"] = "no_such_verifier"
    write_rows(rows, tmp_path / "d.parquet")
    gen = ScriptedGenerator(rows)
    gen.generate = None  # sampling must not start
    with pytest.raises(KeyError, match="no_such_verifier"):
        run(cfg_for(data=str(tmp_path / "d.parquet"), model="x", out=str(tmp_path / "o")), generator=gen)
