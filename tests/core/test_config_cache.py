"""The cache of parsed config files (``core.config_cache``): a composition reads each file's current
bytes, an edited file composes to its new content, no composition shares nodes with another, and
libyaml parses every config file as Hydra's own sources do (a file it refuses raises Hydra's error)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
import verl
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from omegaconf import OmegaConf

from core import config_cache
from core.compose import CONF_DIR, compose_file


def test_hydra_loads_files_through_the_cache() -> None:
    types = SourcesRegistry.instance().types
    assert types["file"].load_config is config_cache.file_load_config
    assert types["pkg"].load_config is config_cache.pkg_load_config


def test_a_hydra_state_handed_to_a_sweep_worker_restores(tmp_path: Path) -> None:
    """What hydra-joblib-launcher does in each worker: restore the sweep's Hydra state, which
    re-initializes Hydra's plugins against the restored source registry (a conflict raised here
    when the cache registered classes of its own), then compose."""
    from hydra.core.singleton import Singleton

    Singleton.set_state(Singleton.get_state())  # the state holds no Plugins: set_state makes them anew
    (tmp_path / "main.yaml").write_text("x: 1\n")
    assert OmegaConf.to_container(compose_file(tmp_path, "main")) == {"x": 1}


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


def test_libyaml_parses_every_config_file_as_hydra_does() -> None:
    """Each of ``conf/``'s and veRL's packaged config files: the same config (values and their types),
    header, path and provider as Hydra's own source gives."""
    sources = (
        (CONF_DIR, FileConfigSource("main", f"file://{CONF_DIR}")),
        (
            Path(verl.__file__).parent / "trainer" / "config",
            ImportlibResourcesConfigSource("v", "pkg://verl.trainer.config"),
        ),
    )
    n = 0
    for root, source in sources:
        for f in sorted(root.rglob("*.yaml")):
            theirs = source.load_config(str(f.relative_to(root)))
            ours = config_cache.parse_fast(f.read_bytes(), source)
            assert type(ours.config) is type(theirs.config), f
            mine, hydra = OmegaConf.to_container(ours.config), OmegaConf.to_container(theirs.config)
            assert pickle.dumps(mine) == pickle.dumps(hydra), f  # equal, and of the same types
            assert (ours.header, ours.path, ours.provider) == (theirs.header, theirs.path, theirs.provider), f
            n += 1
    assert n > 100


def test_a_file_libyaml_refuses_raises_hydras_own_error(tmp_path: Path) -> None:
    (tmp_path / "main.yaml").write_text("x: 1\nx: 2\n")
    with pytest.raises(Exception, match="found duplicate key x"):
        compose_file(tmp_path, "main")
    (tmp_path / "main.yaml").write_text("x: [1\n")
    with pytest.raises(Exception, match="while parsing a flow sequence"):
        compose_file(tmp_path, "main")
