"""The thinking-budget mechanics on a tiny locally built model taught one worked format: a hard
budget N keeps at most N reasoning tokens, the forced answer follows the cut and is parsed by the
project's verifier, and ``make budget``'s command writes the curve for a model and its base."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from analysis import thinking_budget as tb
from core import model as models
from core import results
from core.cli import call
from core.data import Prompt, chat_ids
from core.sampling import LocalSampler, Settings
from experiments import budget
from rewards import compute_score

#: question -> the one worked response the model is taught (21 reasoning tokens before </think>:
#: ``<think>`` and 20 characters)
TAUGHT = {
    "2+3": "<think>2+3=5 check 2+3=5 ok</think><answer>5</answer>",
    "4+4": "<think>4+4=8 check 4+4=8 ok</think><answer>8</answer>",
}
REASONING = 21
SPEC = models.ModelSpec(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    max_position_embeddings=256,
)


def _prompts(tok) -> list[Prompt]:
    out = []
    for q, resp in TAUGHT.items():
        ids = chat_ids(tok, [{"role": "user", "content": q}])
        gold = resp.split("<answer>")[1].split("<")[0]
        out.append(Prompt(ids, q, "arithmetic", gold, {"k": 2}))
    return out


@pytest.fixture(scope="module")
def taught(tmp_path_factory, tiny_checkpoint):
    """(checkpoint dir, untrained checkpoint dir): a tiny Qwen2 fitted by AdamW to write
    :data:`TAUGHT` and, after that reasoning cut anywhere and closed with the forced text, the
    answer -- so what it reasons and what it answers under a budget are known."""
    root = tmp_path_factory.mktemp("budget")
    base = tiny_checkpoint(SPEC, "char", seed=3)  # built once per session (tests/conftest.py)
    model, tok = models.load(base)
    torch.manual_seed(0)
    rows = []  # (ids, first position with a loss): the full response, and the answer after every cut
    force = tok.encode(tb.FORCE_TEXT, add_special_tokens=False)
    for p in _prompts(tok):
        resp = tok.encode(TAUGHT[p.text], add_special_tokens=False)
        answer = tok.encode(f"{p.ground_truth}</answer>", add_special_tokens=False) + [tok.eos_token_id]
        rows.append((p.ids + resp + [tok.eos_token_id], len(p.ids)))
        for b in range(REASONING):
            rows.append((p.ids + resp[:b] + force + answer, len(p.ids) + b + len(force)))
    width = max(len(r) for r, _ in rows)
    ids = torch.tensor([r + [tok.pad_token_id] * (width - len(r)) for r, _ in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r, _ in rows])
    labels = ids.masked_fill(mask == 0, -100)
    for i, (_, start) in enumerate(rows):
        labels[i, :start] = -100
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: a second thread only waits on a shared, loaded machine
    try:
        for _ in range(150):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    assert loss.item() < 0.05, f"the tiny model did not learn the taught responses (loss {loss.item():.3f})"
    model.eval()
    models.save(model, tok, root / "rl")
    return root / "rl", base


def test_reasoning_tokens_counts_up_to_the_first_marker() -> None:
    tok = models.build_tokenizer("char")
    ids = tok.encode("<think>1+2=3</think><answer>3</answer>", add_special_tokens=False)
    assert tb.reasoning_tokens(tok, ids) == 6  # <think> + 5 characters
    assert tb.reasoning_tokens(tok, tok.encode("<answer>3</answer>", add_special_tokens=False)) == 0
    bare = tok.encode("1+2=3", add_special_tokens=False)
    assert tb.reasoning_tokens(tok, bare) == len(bare)


def test_budget_cuts_reasoning_at_n_and_the_forced_answer_is_parsed(taught) -> None:
    model, tok = models.load(taught[0])
    prompts = _prompts(tok)
    sampler = LocalSampler.of(model, tok, Settings(temperature=0.3, seed=0))
    budgets = [0, 4, 12, 20, 40]
    samples = tb.budget_samples(sampler, prompts, 8, budgets, max_answer=6)
    tb.score(samples, prompts, compute_score)
    force = tok.encode(tb.FORCE_TEXT, add_special_tokens=False)
    assert len(samples) == 16
    assert np.mean([s.reasoning == REASONING for s in samples]) >= 0.9  # it writes what it was taught
    for s in samples:
        for b in budgets:
            r = s.by_budget[b]
            assert r.forced == (s.reasoning > b)
            assert r.think_tokens == min(s.reasoning, b) <= b
            ids = tok.encode(r.text, add_special_tokens=False)
            assert tb.reasoning_tokens(tok, ids) == r.think_tokens  # the scored text's reasoning
            if r.forced:
                assert ids[: b + len(force)] == s.ids[:b] + force  # cut at N, then the forced close
            else:
                assert ids == s.ids  # an uncut response is scored as sampled
    cut = [s.by_budget[b] for s in samples for b in budgets if s.by_budget[b].forced]
    assert len(cut) >= 0.9 * 16 * 4  # budgets below 21 tokens cut nearly every response
    parsed = [r for r in cut if r.pred is not None]
    assert len(parsed) >= 0.8 * len(cut)  # the forced answer closes its tag: the verifier reads it
    assert np.mean([r.acc for r in parsed]) >= 0.8
    summary = tb.summarise(samples, prompts, budgets, n_resamples=200)
    assert summary["all"]["budgets"]["0"]["cut_share"] >= 0.9
    assert summary["all"]["budgets"]["40"]["cut_share"] <= 0.1
    assert summary["all"]["budgets"]["4"]["mean_think"] <= 4


def test_shape_finds_rise_plateau_and_fall() -> None:
    rng = np.random.default_rng(0)
    budgets = [0, 8, 16, 32, 64]
    p = np.array([0.2, 0.6, 0.8, 0.8, 0.4])  # rises to 16, plateaus, falls at 64
    acc = (rng.random((400, 5)) < p).astype(float)
    sh = tb.shape(acc, budgets, n_resamples=500)
    assert sh["plateau_from"] == 16 and sh["rises"] and sh["falls"]
    flat = tb.shape((rng.random((400, 5)) < 0.5).astype(float), budgets, n_resamples=500)
    assert not flat["rises"] and not flat["falls"]


def _taught_parquet(tmp_path: Path) -> Path:
    """The taught questions as a held-out parquet in veRL's schema."""
    rows = [
        {
            "data_source": "arithmetic",
            "prompt": [{"role": "user", "content": q}],
            "reward_model": {"style": "rule", "ground_truth": r.split("<answer>")[1].split("<")[0]},
            "extra_info": {"k": 2},
        }
        for q, r in TAUGHT.items()
    ]
    data = tmp_path / "test.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data)
    return data


def test_budget_command_writes_the_curve_of_model_and_base(taught, tmp_path: Path) -> None:
    data = _taught_parquet(tmp_path)
    argv = [f"model={taught[0]}", f"base={taught[1]}", f"data={data}", f"out={tmp_path / 'out'}"]
    assert call(budget.command, "command", "budget", [*argv, "budgets=[0,8,40]", "n=4", "bootstrap=100"]) == 0
    res = json.loads((tmp_path / "out" / "budget.json").read_text())
    assert list(res["models"]) == ["base", "rl"]
    rl, base = res["models"]["rl"]["groups"], res["models"]["base"]["groups"]
    assert set(rl) == {"all", "k=2"} and rl["all"]["samples"] == 8
    assert rl["all"]["budgets"]["40"]["acc"] > base["all"]["budgets"]["40"]["acc"]  # taught vs random
    assert (tmp_path / "out" / "budget.png").stat().st_size > 0


def test_doc_renders_the_curve_over_rl_seeds(taught, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two recorded seeds: the first seed's tables, then one figure and table over seeds whose
    mean is the mean of the seeds' accuracies."""
    from docgen import thinking_budget as doc  # the docs' block: only this test needs it

    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    data = _taught_parquet(tmp_path)
    per = {}
    for seed, base in ((3, [f"base={taught[1]}"]), (5, ["base=null"])):
        argv = [f"model={taught[0]}", *base, f"data={data}", f"out={tmp_path / str(seed)}", f"seed={seed}"]
        assert (
            call(budget.command, "command", "budget", [*argv, "budgets=[0,8,40]", "n=2", "bootstrap=50"]) == 0
        )
        per[seed] = json.loads((tmp_path / str(seed) / "budget.json").read_text())
        results.write_table("thinking_budget", f"budget-s{seed}", per[seed])
    assert list(per[5]["models"]) == ["rl"]  # base=null: the base model is measured once
    md = doc.thinking_budget().markdown
    assert "**after RL, seed 3**" in md and "**After RL, over 2 RL seeds** (3, 5" in md
    mean = np.mean([per[s]["models"]["rl"]["groups"]["all"]["budgets"]["40"]["acc"] for s in per])
    row = next(line for line in md.splitlines() if line.startswith("| all |") and "N=" in line)
    assert row.split("|")[5].strip().startswith(f"{mean:.2f}")
    assert "in 2 of 2 seeds" in md  # one level: no plateau can come before an easier level's


def test_base_auto_refuses_a_base_rebuilt_since_the_run(tmp_path: Path) -> None:
    """base=auto reads the run's model path; if the run recorded other weights there, it stops."""
    from omegaconf import OmegaConf

    base, run = tmp_path / "base", tmp_path / "run"
    base.mkdir()
    (base / "config.json").write_text("{}")
    (base / "rlvr_meta.json").write_text(json.dumps({"build": {}, "weights_sha256": "aa" * 32}))
    hf = run / "checkpoints" / "global_step_1" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    (hf / "model.safetensors").write_bytes(b"x")
    (run / "config.yaml").write_text(f"actor_rollout_ref:\n  model:\n    path: {base}\n")
    cfg = OmegaConf.create({"model": str(run), "base": "auto"})
    (run / "summary.json").write_text(json.dumps({"model_key": {"weights_sha256": "aa" * 32}}))
    assert budget.models(cfg) == {"base": (str(base), None), "rl": (str(hf), None)}
    (run / "summary.json").write_text(json.dumps({"model_key": {"weights_sha256": "bb" * 32}}))
    with pytest.raises(
        FileNotFoundError, match=r"rebuilt since the run.*bbbbbbbbbbbb then, aaaaaaaaaaaa now"
    ):
        budget.models(cfg)
