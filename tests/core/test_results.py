"""core.results: the writer every committed results file goes through."""

from __future__ import annotations

import json

import pytest

from core import results


@pytest.fixture
def res_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def test_run_file_has_provenance_and_rounded_floats(res_dir):
    path = results.write_run(
        "exp",
        "dapo-s0",
        {"recipe": "dapo", "metrics": {"acc": 0.1234567891}},
        command=["python", "-m", "x", "a=1"],
    )
    data = json.loads(path.read_text())
    assert path == res_dir / "exp" / "runs" / "dapo-s0.json"
    assert data["metrics"]["acc"] == 0.123457
    prov = data["provenance"]
    assert prov["command"] == "python -m x a=1"
    assert len(prov["git_commit"]) == 40 and isinstance(prov["git_dirty"], bool)
    assert prov["machine"]["cores"] >= 1 and "torch" in prov["versions"]


def test_experiment_round_trip(res_dir):
    results.write_experiment("exp", command="make sweep SWEEP=x", design={"claim": "c", "seeds": [0, 1]})
    results.write_run("exp", "a", {"metrics": {"m": 1.0}})
    results.write_table("exp", "table", {"rows": [[1, 2.5]]})
    got = results.read_experiment("exp")
    assert got["design"] == {"claim": "c", "seeds": [0, 1]}
    assert got["provenance"]["command"] == "make sweep SWEEP=x"
    assert list(got["runs"]) == ["a"] and got["tables"]["table"]["rows"] == [[1, 2.5]]


def test_bad_names_and_missing_results_are_clear_errors(res_dir):
    with pytest.raises(ValueError, match="plain file name"):
        results.write_run("exp", "../escape", {})
    with pytest.raises(FileNotFoundError, match="no results for experiment 'nothing'"):
        results.read_experiment("nothing")
    (res_dir / "bad").mkdir(parents=True)
    (res_dir / "bad" / "t.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        results.read_experiment("bad")


def test_downsample_keeps_ends_and_rejects_mismatch():
    d = results.downsample(list(range(101)), [float(i) for i in range(101)], max_points=11)
    assert d["step"][0] == 0 and d["step"][-1] == 100 and len(d["step"]) == 11
    with pytest.raises(ValueError, match="3 steps but 2 values"):
        results.downsample([1, 2, 3], [1.0, 2.0])


def test_nan_is_stored_as_null(res_dir):
    path = results.write_table("exp", "t", {"x": float("nan")})
    assert json.loads(path.read_text())["x"] is None


def test_results_files_do_not_make_the_code_dirty(tmp_path):
    """An experiment rewriting its tracked results files is still recorded at a clean commit;
    a change to code is not."""
    import subprocess

    def git(*a):
        subprocess.run(["git", *a], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results" / "exp").mkdir(parents=True)
    (tmp_path / "results" / "exp" / "experiment.json").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("a\n")
    (tmp_path / "README.md").write_text("a\n")
    git("add", ".")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init")
    (tmp_path / "results" / "exp" / "experiment.json").write_text('{"running": true}\n')
    (tmp_path / "docs" / "page.md").write_text("b\n")  # a sweep re-rendering the docs it feeds
    (tmp_path / "README.md").write_text("b\n")
    commit, dirty = results.git_state(tmp_path)
    assert len(commit) == 40 and dirty is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.git_state(tmp_path)[1] is True
