"""A miniature local pipeline end to end (real engine, real veRL math), then a resume that skips it all."""

from __future__ import annotations

import json
from pathlib import Path

from core.cli import call
from recipes.pipeline.__main__ import command


def main(argv: list[str]) -> int:
    """``python -m recipes.pipeline <argv>``, in-process."""
    return call(command, "command", "pipeline", argv, route=True)


MINI = str(Path(__file__).with_name("mini.yaml"))


def test_mini_pipeline_runs_end_to_end_and_resumes(tmp_path, capsys) -> None:
    d = tmp_path / "p"
    assert main([f"pipeline={MINI}", "engine=local", f"dir={d}"]) == 0
    man = json.loads((d / "pipeline.json").read_text())
    assert [man["stages"][n]["status"] for n in man["order"]] == ["done"] * 7
    out = {n: man["stages"][n]["outputs"] for n in man["order"]}
    # each stage's input is the previous stage's output
    rl_run = json.loads((Path(man["stages"]["rl"]["run_dir"]) / "run.json").read_text())
    assert f"actor_rollout_ref.model.path={out['cold_start']['model']}" in rl_run["overrides"]
    assert rl_run["recipe"] == "r1_reasoning" and rl_run["engine"] == "local"
    for stage in ("cold_start", "rl", "sft_from_base"):
        assert (Path(out[stage]["model"]) / "config.json").is_file()
        assert not (Path(out[stage]["model"]) / "rlvr_meta.json").exists()  # used as is by the engine
    assert out["rl"]["summary"]["steps"] == 2
    assert out["mixed"]["general_rows"] == round(100 * 0.25 / 0.75)
    rep = Path(out["eval"]["report"])
    assert rep.is_file() and Path(out["eval"]["png"]).stat().st_size > 1000
    assert "| rl |" in rep.read_text()
    before = {n: man["stages"][n]["finished"] for n in man["order"]}
    capsys.readouterr()
    assert main([f"pipeline={MINI}", "engine=local", f"dir={d}"]) == 0
    assert "done" in capsys.readouterr().err
    man2 = json.loads((d / "pipeline.json").read_text())
    assert {n: man2["stages"][n]["finished"] for n in man2["order"]} == before
