"""docgen.real_model.paths_block: the real-checkpoint paths table and its closing line, from a record.

A paths table written here (``core.results``, in a private results folder): the closing line sums the
wall time, and names the checkpoint bytes the RL rows deleted only when the record holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import results
from docgen import real_model


def _row(label: str, path: str, seconds: float, **extra: float) -> dict:
    return {"path": path, "label": label, "command": f"x {label}", "exit": 0, "seconds": seconds, **extra}


@pytest.mark.parametrize("with_bytes", [True, False])
def test_closing_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_bytes: bool) -> None:
    monkeypatch.setenv("RLVR_RESULTS", str(tmp_path))
    extra = [{"checkpoint_bytes_deleted": 2e9}, {"checkpoint_bytes_deleted": 3e9}] if with_bytes else [{}, {}]
    rows = [_row("convert", "convert", 60.0), _row("rl grpo", "rl", 90.0, **extra[0])]
    rows.append(_row("rl-verl grpo", "rl_verl", 30.0, **extra[1]))
    results.write_table("real_model_paths", "paths", {"rows": rows, "settings": {}})
    text = real_model.paths_block().markdown
    assert "All paths: 3.0 min of wall time" in text
    line = "Checkpoints deleted once their rows were read: 5.0 GB over 2 RL rows (2.0-3.0 GB each)."
    assert (line in text) is with_bytes
