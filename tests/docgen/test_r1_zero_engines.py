"""docgen.r1_zero_engines: both engines' arms side by side, and the CPU-default benchmark, from records.

The committed local arms and veRL arms written here (``core.results``, in a private results folder):
every arm with both records gets one row per engine, the claim's sentence says whether veRL's mean
gains lie inside the local seed range, and the benchmark block's verdict follows the 1.5x line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core import results
from docgen import r1_zero_engines as eng
from docgen.r1_zero import ACC, ARMS, LEN


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results folder holding the committed local arms (the veRL arms are written by each test)."""
    for name, _ in ARMS:
        shutil.copytree(results.REPO / "results" / name, tmp_path / name)
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    return tmp_path


def _verl_arm(name: str, acc_gain: float, len_gain: float, seeds: range = range(5)) -> None:
    steps = [0, 20, 25, 40, 50, 60, 75, 80]
    results.write_experiment(
        name, design={"claim": "the claim", "targets": {"acc_gain": 0.15, "length_gain": 0.3}}
    )
    for seed in seeds:
        a0, l0 = 0.2, 9.0
        rec = {
            "recipe": "r1_zero",
            "engine": "verl",
            "seed": seed,
            "wall_s": 600.0 + seed,
            "curves": {
                ACC: {"step": steps, "value": [a0 + acc_gain * s / 80 for s in steps]},
                LEN: {"step": steps, "value": [l0 * (1 + len_gain * s / 80) for s in steps]},
            },
        }
        results.write_run(name, f"r1_zero-s{seed}", rec)


def test_rows_claim_and_figure(store: Path) -> None:
    """The recipe's arm inside the local range, the outcome arm outside; the shuffled arm not yet run."""
    _verl_arm("r1_zero_verl-format", 0.42, 3.3)
    _verl_arm("r1_zero_verl-outcome", 0.05, 0.1)
    out = eng.r1_zero_engines()
    text = out.markdown
    summary, per_seed = text.split("<details>")
    assert summary.count("| veRL's trainer |") == 2 and summary.count("| local engine |") == 2
    assert per_seed.count("| veRL's trainer |") == 10
    assert "rewards shuffled" not in text  # an arm is shown once both engines recorded it
    assert "Not run yet on veRL's trainer: `make results NAME=r1_zero_verl-shuffled`." in summary
    assert "(the recipe): veRL's mean accuracy gain +42.0 points lies inside" in text
    assert "(format weight 0): veRL's mean accuracy gain +5.0 points lies outside" in text
    assert "| 5/5 | 5/5 | 10.0 |" in text  # the recipe on veRL: both targets on every seed, median wall
    assert "Claim (declared before the veRL runs): the claim." in text
    assert [f.name for f in out.figures] == ["r1_zero_engines"]
    assert set(out.figures[0].data) == {ARMS[0][1], ARMS[1][1]}
    assert any("results/r1_zero_verl-format/" in s for s in out.sources)


@pytest.mark.parametrize(("low", "met"), [(0.5, "met"), (1.5, "not met")])
def test_more_local_seeds(store: Path, low: float, met: str) -> None:
    """The outcome arm's extra local seeds widen the range veRL's gains are read against; their claim
    (a seed's length gain at +100% or less) is met or not by the lowest seed."""
    _verl_arm("r1_zero_verl-outcome", 0.30, 1.2)
    assert "more seeds" not in eng.r1_zero_engines().markdown  # nothing before they are recorded
    _verl_arm(eng.MORE_SEEDS, 0.30, low, seeds=range(5, 15))
    out = eng.r1_zero_engines()
    text = out.markdown
    assert "outcome-only arm over 10 more seeds (5-14, `results/r1_zero_outcome_seeds/`" in text
    assert f"(claim {met}: lowest {100 * low:+.0f}%)" in text
    lo = min(100 * low, 199)  # the committed local seeds 0-4 span +199% to +335%
    assert f"Over all 15 local seeds the length gain spans [{lo:+.0f}%, +335%]" in text
    assert f"veRL's mean +120% lies {'inside' if low <= 1.2 else 'outside'} it" in text
    assert any(f"results/{eng.MORE_SEEDS}/" in s for s in out.sources)


def test_not_run(store: Path) -> None:
    assert "Not run yet: `make results NAME=r1_zero_verl-format`" in eng.r1_zero_engines().markdown


@pytest.mark.parametrize(("verl_wall", "verdict"), [(900.0, "beyond 1.5×"), (120.0, "within 1.5×")])
def test_bench_verdict(store: Path, verl_wall: float, verdict: str) -> None:
    run = {"wall_s": 100.0, "cpu_s": 90.0, "steps_s": 60.0, "processes": 1, "start_acc": 0.2, "end_acc": 0.6}
    verl = {**run, "wall_s": verl_wall, "cpu_s": 2 * verl_wall, "processes": 12}
    rec = {
        "settings": {"recipe": "r1_zero", "scale": "laptop_base", "seed": 0, "rounds": 1, "interval_s": 1.0},
        "runs": {"local": [run], "verl": [verl]},
        "ratios": {"verl/local wall_s": verl_wall / 100.0, "verl/local cpu_s": 2 * verl_wall / 90.0},
        "length_check": {"rows": [{}] * 10, "max_abs_diff": {ACC: 0.0, LEN: 0.0039}},
    }
    results.write_table(eng.BENCH, "latest", rec)
    text = eng.r1_zero_engine_bench().markdown
    assert verdict in text and f"{verl_wall / 100:.1f}× the local engine's wall time" in text
    assert "over its 5 evaluations: largest difference 0.0039 tokens" in text
