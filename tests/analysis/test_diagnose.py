"""The diagnostic checklist finds planted pathologies, passes healthy runs, and never crashes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from analysis.diagnose import checklist as diagnose
from analysis.diagnose.hacking import fastest_rise, hack_flags
from analysis.diagnose.registry import CHECKS
from analysis.diagnose.verifier import GRADERS, answer_region
from core.cli import call, load
from core.runs import Series


def cfg_for(run: Path, out: Path, **kw: object) -> OmegaConf:
    cfg = load("analysis", "diagnose")
    cfg.run, cfg.out = str(run), str(out)
    for k, v in kw.items():
        cfg[k] = v
    return cfg


def by_title(doc) -> dict[str, object]:
    return {s.title.split(".")[0]: s for s in doc.sections}


def test_checklist_order_and_registry() -> None:
    import analysis.diagnose.curves  # noqa: F401
    import analysis.diagnose.reward_model  # noqa: F401

    names = sorted(CHECKS.names(), key=lambda n: CHECKS.get(n).order)
    assert names == [
        "verifier_audit",
        "difficulty",
        "logprob_alignment",
        "entropy",
        "length_vs_accuracy",
        "base_pass_at_k",
        "reward_hacking",
        "proxy_gold",
        "self_checks",
    ]


def test_sick_run_is_flagged(sick_run: Path, tmp_path: Path) -> None:
    doc, files = diagnose.run(cfg_for(sick_run, tmp_path))
    s = by_title(doc)
    assert s["4"].status == "warn" and "collapsed" in s["4"].verdict
    assert s["5"].status == "warn" and "length rising, accuracy flat" in s["5"].verdict
    assert s["1"].status == "warn" and "false negatives" in s["1"].verdict
    audit = [json.loads(line) for line in (tmp_path / "verifier_audit.jsonl").read_text().splitlines()]
    assert len(audit) == 50 and all(a["human_label"] is None for a in audit)
    planted = [a for a in audit if a["output"].startswith("<think>add</think>")]
    assert planted and all(a["math_verify_correct"] for a in planted)  # every planted FN is caught
    assert s["3"].status == "not_logged"  # no log-probs in this run
    md = files["markdown"].read_text()
    assert "![4. Entropy](entropy.png)" in md and (tmp_path / "entropy.png").stat().st_size > 1000
    assert '<img src="entropy.png"' in files["html"].read_text()


def test_healthy_run_passes(healthy_run: Path, tmp_path: Path) -> None:
    doc, _ = diagnose.run(cfg_for(healthy_run, tmp_path))
    s = by_title(doc)
    assert s["1"].status == "ok" and s["1"].verdict.startswith("0/50")
    assert s["3"].status == "ok" and "r=" in s["3"].verdict
    assert s["4"].status == "ok" and s["5"].status == "ok" and s["7"].status == "ok"
    assert "pass@1" in s["6"].verdict and "pass@4" in s["6"].verdict  # from validation step 0


def test_bare_run_says_not_logged(tmp_path: Path) -> None:
    run = tmp_path / "bare"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1, "data": {"critic/score/mean": 0.1}}\n')
    doc, files = diagnose.run(cfg_for(run, tmp_path / "out"))
    statuses = {s.title: s.status for s in doc.sections}
    assert "fail" not in statuses.values()
    assert list(statuses.values()).count("not_logged") >= 5
    assert "not logged" in files["markdown"].read_text()


def test_base_eval_result_is_read(healthy_run: Path, tmp_path: Path) -> None:
    result = {
        "overall": {
            "pass": {"1": {"mean": 0.3, "lo": 0.25, "hi": 0.35}, "64": {"mean": 0.85, "lo": 0.8, "hi": 0.9}}
        },
        "settings": {"model": "base"},
    }
    (tmp_path / "base.json").write_text(json.dumps(result))
    doc, _ = diagnose.run(cfg_for(healthy_run, tmp_path / "o", base_eval=str(tmp_path / "base.json")))
    assert by_title(doc)["6"].verdict.startswith("pass@1 0.3 [0.25, 0.35], pass@64 0.85")


def test_hacking_heuristics() -> None:
    assert hack_flags("<think></think><answer>3</answer>") == ["empty reasoning"]
    assert hack_flags("<think>3 or 4</think><answer>3</answer><answer>4</answer>") == ["several answers"]
    assert hack_flags("<think>add them</think><answer>7</answer>") == []
    import numpy as np

    steps = np.arange(100)
    jump = Series(steps, np.where(steps < 50, 0.05, 0.95))
    slow = Series(steps, np.linspace(0.05, 0.95, 100))
    assert fastest_rise(jump) > 0.5 > fastest_rise(slow)


@pytest.mark.parametrize(
    ("resp", "gold", "ok"),
    [
        ("<think>x</think><answer>1278</answer>", "1278", True),
        ("<answer>12</answer>", "1278", False),
        ("so \\boxed{\\frac{1}{2}}", "0.5", True),
    ],
)
def test_graders(resp: str, gold: str, ok: bool) -> None:
    assert GRADERS.get("math_verify")(resp, gold) is ok
    assert answer_region("<think>9</think>tail") == "tail"


def test_cli_prints_verdicts(sick_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        call(
            diagnose.command,
            "analysis",
            "diagnose",
            [f"run={sick_run}", f"out={tmp_path}", "checks=[entropy,difficulty]"],
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "[      WARN] 4. Entropy" in out and "2. Difficulty" in out and "Verifier" not in out
    with pytest.raises(ConfigCompositionException, match="Could not override 'rnu'"):
        call(diagnose.command, "analysis", "diagnose", ["rnu=x"])


def test_cli_help_and_unknown_key_as_a_user_calls_it() -> None:
    """``--help`` prints the usage and every key with its default; a misspelled key names itself."""
    help_ = subprocess.run(
        [sys.executable, "-m", "analysis.diagnose", "--help"], capture_output=True, text=True
    )
    assert help_.returncode == 0 and "python -m analysis.diagnose run=<run dir>" in help_.stdout
    assert "audit_samples: 50" in help_.stdout
    bad = subprocess.run([sys.executable, "-m", "analysis.diagnose", "rnu=x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "[rnu] unknown key" in bad.stderr and "did you mean run?" in bad.stderr


def test_partial_credit_zero_variance_is_not_all_wrong() -> None:
    # spell_backward-style partial credit (peers.md): all-wrong is not the same as equal scores
    from analysis.diagnose.difficulty import group_pass_rates, score_flat_share

    groups = {"a": [0.2, 0.2, 0.2, 0.2], "b": [1.0, 0.2, 0.05, 0.0], "c": [0.2, 0.05, 0.05, 0.05]}
    rows = [{"uid": g, "step": 1, "score": s, "acc": s == 1.0} for g, ss in groups.items() for s in ss]
    rates = group_pass_rates(rows)[1]
    assert sorted(rates.tolist()) == [0.0, 0.0, 0.25]  # two groups all wrong
    assert score_flat_share(rows) == pytest.approx(1 / 3)  # but only one gives no advantage signal


def test_base_eval_found_in_run_dir_and_trained_eval_ignored(tmp_path: Path) -> None:
    from analysis.synthetic import write_run

    run = write_run(tmp_path / "run", steps=5, dump_every=100)
    res = {
        "overall": {"pass": {"1": {"mean": 0.2, "lo": 0.1, "hi": 0.3}}},
        "settings": {"model": "ckpt/step_5"},
    }
    (run / "eval").mkdir()
    (run / "eval" / "result.json").write_text(json.dumps(res))  # a trained checkpoint: not a baseline
    doc, _ = diagnose.run(cfg_for(run, tmp_path / "o1", checks=["base_pass_at_k"]))
    assert doc.sections[0].verdict.startswith("from validation step 0")  # the fallback, not the trained eval
    (run / "eval_base").mkdir()
    (run / "eval_base" / "result.json").write_text(json.dumps(res))
    doc, _ = diagnose.run(cfg_for(run, tmp_path / "o2", checks=["base_pass_at_k"]))
    assert doc.sections[0].verdict.startswith("pass@1 0.2 [0.1, 0.3]")


def test_logged_verl_mismatch_metrics(tmp_path: Path) -> None:
    run = tmp_path / "verl"
    run.mkdir()
    lines = [
        {
            "step": s,
            "data": {
                "training/rollout_probs_diff_mean": 0.01 + 0.02 * s,
                "training/rollout_actor_probs_pearson_corr": 0.99 - 0.03 * s,
            },
        }
        for s in range(1, 5)
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    doc, _ = diagnose.run(cfg_for(run, tmp_path / "o", checks=["logprob_alignment"]))
    sec = doc.sections[0]
    assert sec.status == "warn" and "training/rollout_probs_diff_mean" in sec.verdict
    assert "pearson r: min 0.870" in sec.verdict


def test_proxy_gold_divergence_needs_proxy_up_and_gold_down() -> None:
    import numpy as np

    from analysis.diagnose.reward_model import divergence
    from core.runs import Series

    steps = np.arange(40)
    rise_fall = np.r_[np.linspace(0.3, 0.6, 15), np.linspace(0.6, 0.1, 25)]
    up = Series(steps, np.linspace(0.2, 0.9, 40))
    assert divergence(up, Series(steps, rise_fall)).diverged()  # over-optimisation
    assert not divergence(up, Series(steps, np.linspace(0.2, 0.6, 40))).diverged()  # both rise: learning
    down = Series(steps, np.r_[np.linspace(0.2, 0.5, 15), np.linspace(0.5, 0.1, 25)])
    assert not divergence(down, Series(steps, rise_fall)).diverged()  # both fall: a collapse, not a proxy gap


def test_self_check_share_start_vs_end(tmp_path: Path) -> None:
    """Check 9 counts the corpus' self-check and correction phrasings per held-out dump."""
    run = tmp_path / "run"
    (run / "validation").mkdir(parents=True)
    first = ["1+2+3=3+3=6 check 3+3=6 ok"] * 4 + ["1+2+3=4 no 1+2=3 so 3+3=6"] + ["6"] * 5
    last = ["1+2+3=3+3=6 check 3+3=6 ok"] + ["1+2+3=3+3=6"] * 9
    for step, outs in ((0, first), (80, last)):
        rows = [json.dumps({"input": "1+2+3", "output": o, "gts": "6", "score": 1.0}) for o in outs]
        (run / "validation" / f"{step}.jsonl").write_text("\n".join(rows) + "\n")
    (run / "metrics.jsonl").write_text('{"step": 1, "data": {"critic/score/mean": 0.1}}\n')
    doc, files = diagnose.run(cfg_for(run, tmp_path / "out", checks=["self_checks"]))
    sec = doc.sections[0]
    assert sec.status == "info" and "falling" in sec.verdict, sec.verdict
    rows = {r[0]: r for r in sec.tables[0].rows}
    assert rows["self-check or correction"][1].startswith("0.5") and rows["self-check or correction"][
        2
    ].startswith("0.1")
    assert rows["correction"][3] == "-0.100" and rows["worked"][3] == "+0.500"
    assert (tmp_path / "out" / "self_checks.png").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "metrics.jsonl").write_text('{"step": 1, "data": {"critic/score/mean": 0.1}}\n')
    doc, _ = diagnose.run(cfg_for(empty, tmp_path / "out2", checks=["self_checks"]))
    assert doc.sections[0].status == "not_logged"
