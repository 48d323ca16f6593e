"""The cache of parsed config files (``core.config_cache``): a composition reads each file's current
bytes, an edited file composes to its new content, and no composition shares nodes with another."""

from __future__ import annotations

from pathlib import Path

from hydra._internal.sources_registry import SourcesRegistry
from omegaconf import OmegaConf

from core import config_cache
from core.compose import compose_file


def test_hydra_loads_files_through_the_cache() -> None:
    types = SourcesRegistry.instance().types
    assert types["file"] is config_cache.CachedFileConfigSource
    assert types["pkg"] is config_cache.CachedImportlibResourcesConfigSource


def test_an_edited_file_composes_to_its_new_content(tmp_path: Path) -> None:
    (tmp_path / "opt").mkdir()
    (tmp_path / "main.yaml").write_text("defaults:\n  - opt: a\n  - _self_\nx: 1\n")
    (tmp_path / "opt" / "a.yaml").write_text("y: 2\n")
    first = compose_file(tmp_path, "main")
    assert OmegaConf.to_container(first) == {"x": 1, "opt": {"y": 2}}
    first.opt.y = 99  # a caller's edit of its config reaches no later composition
    assert compose_file(tmp_path, "main").opt.y == 2
    # same length, same second: the bytes decide, not the size or the time stamp
    (tmp_path / "opt" / "a.yaml").write_text("y: 3\n")
    (tmp_path / "main.yaml").write_text("defaults:\n  - opt: a\n  - _self_\nx: 5\n")
    assert OmegaConf.to_container(compose_file(tmp_path, "main")) == {"x": 5, "opt": {"y": 3}}
    config_cache.clear()
    assert OmegaConf.to_container(compose_file(tmp_path, "main")) == {"x": 5, "opt": {"y": 3}}
