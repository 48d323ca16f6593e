"""core.model's identity helpers: which model a path holds, compared with what a run recorded."""

from __future__ import annotations

import json
from pathlib import Path

from core import model as models


def test_weights_changed_compares_the_recorded_weights_with_the_paths(tmp_path: Path) -> None:
    path = tmp_path / "model"
    path.mkdir()
    assert models.weights_changed(None, path) is None  # a model not built here, then and now
    (path / "rlvr_meta.json").write_text(json.dumps({"build": {"builder": "b"}, "weights_sha256": "ab" * 32}))
    assert models.weights_changed(models.model_key(path), path) is None
    assert models.weights_changed({"weights_sha256": "cd" * 32}, path) == ("cd" * 6, "ab" * 6)
    assert models.weights_changed(None, path) == ("none", "ab" * 6)  # a user's model then, a build now
    (path / "rlvr_meta.json").unlink()
    assert models.weights_changed({"weights_sha256": "ab" * 32}, path) == ("ab" * 6, "none")
