"""Hydra reads each config file once per process: a cache of parsed config files by content.

Does: patch the ``load_config`` of Hydra's ``file://`` and ``pkg://`` config sources (``conf/`` and
veRL's packaged ``ppo_trainer`` tree) in place to keep each file's parsed :class:`ConfigResult`, keyed by
its search-path root, its name and its bytes, and hand out a deep copy on every load; a composition
then skips PyYAML and ``OmegaConf.create`` for every file it has seen (most of the ~1 s a compose
costs). A file edited on disk has other bytes, so it is parsed again. A file is parsed with libyaml's
C parser under OmegaConf's own YAML rules (its float and no-timestamp resolvers, its duplicate-key
check, its ``pathlib`` constructors): ~10x faster than PyYAML's pure-Python one, which a file the C
parser refuses still goes through (so Hydra's own error is raised). :func:`install` is idempotent
and runs when :mod:`core.compose` is imported. Does not: cache compositions (overrides, merges and
interpolations run every time), nor change what a file composes to.
"""

from __future__ import annotations

import copy
import io
import os
from collections.abc import Callable
from functools import partial
from importlib import resources
from typing import Any

import yaml
from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult, ConfigSource
from omegaconf import OmegaConf
from omegaconf._utils import get_yaml_loader

#: Parsed files: (scheme, root, name, bytes) -> the result Hydra's own source gives for those bytes.
_PARSED: dict[tuple[str, str, str, bytes], ConfigResult] = {}
#: More distinct file versions than this in one process empties the cache (memory stays bounded).
MAX_ENTRIES = 4096


def _c_loader() -> type | None:
    """OmegaConf's YAML loader (``omegaconf._utils.get_yaml_loader``) on libyaml's C parser."""
    if not yaml.__with_libyaml__:
        return None
    py = get_yaml_loader()

    class OmegaConfCLoader(yaml.CSafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            keys = set()
            for key_node, _ in node.value:  # OmegaConf's loader refuses a duplicate key
                if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                    continue
                if key_node.value in keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value}",
                        key_node.start_mark,
                    )
                keys.add(key_node.value)
            return super().construct_mapping(node, deep=deep)

    OmegaConfCLoader.yaml_implicit_resolvers = copy.deepcopy(py.yaml_implicit_resolvers)
    OmegaConfCLoader.yaml_constructors = dict(py.yaml_constructors)
    return OmegaConfCLoader


_CLOADER = _c_loader()


def parse_fast(data: bytes, source: ConfigSource) -> ConfigResult:
    """What ``source`` (a file or package source) loads from a file holding ``data``, parsed by libyaml:
    the same text (UTF-8, universal newlines), header, checks and ``OmegaConf.create``."""
    if _CLOADER is None:
        raise RuntimeError("PyYAML has no libyaml")
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    header = ConfigSource._get_header_dict(text[:512])
    obj = yaml.load(text, Loader=_CLOADER)  # noqa: S506 - a safe loader (CSafeLoader's constructors)
    if obj is not None and not isinstance(obj, (list, dict, str)):
        raise OSError(f"Invalid loaded object type: {type(obj).__name__}")
    cfg = OmegaConf.create() if obj is None else OmegaConf.create(obj)
    return ConfigResult(
        config=cfg, path=f"{source.scheme()}://{source.path}", provider=source.provider, header=header
    )


def _cached(
    key: tuple[str, str, str, bytes], source: ConfigSource, parse: Callable[[], ConfigResult]
) -> ConfigResult:
    hit = _PARSED.get(key)
    if hit is None:
        try:
            hit = parse_fast(key[3], source)
        except Exception:  # noqa: BLE001 - anything libyaml refuses: Hydra's own parse raises its error
            hit = parse()
        if len(_PARSED) >= MAX_ENTRIES:
            _PARSED.clear()
        _PARSED[key] = hit
    # Hydra pops ``defaults`` off the config it loads and merges into it: never hand out the original
    return copy.deepcopy(hit)


#: Hydra's own ``load_config`` of its ``file`` and ``pkg`` sources, by scheme, before :func:`install`.
_ORIGINAL: dict[str, Callable[..., ConfigResult]] = {
    "file": FileConfigSource.load_config,
    "pkg": ImportlibResourcesConfigSource.load_config,
}


def file_load_config(self: FileConfigSource, config_path: str) -> ConfigResult:
    """``file://`` sources (this project's ``conf/``): the file's config as Hydra loads it, from the
    cache when its bytes were parsed before."""
    original = partial(_ORIGINAL["file"], self, config_path)
    full_path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
    try:
        with open(full_path, "rb") as f:
            data = f.read()
    except OSError:  # missing or unreadable: Hydra raises its own error
        return original()
    return _cached(("file", self.path, config_path, data), self, original)


def pkg_load_config(self: ImportlibResourcesConfigSource, config_path: str) -> ConfigResult:
    """``pkg://`` sources (veRL's ``verl.trainer.config``): the file's config as Hydra loads it, from
    the cache when its bytes were parsed before."""
    original = partial(_ORIGINAL["pkg"], self, config_path)
    res = resources.files(self.path).joinpath(self._normalize_file_name(config_path))
    try:
        data = res.read_bytes()
    except OSError:  # missing: Hydra raises its own error
        return original()
    return _cached(("pkg", self.path, config_path, data), self, original)


def install() -> None:
    """Make Hydra's ``file`` and ``pkg`` sources load through the cache (every Hydra context,
    ``@hydra.main`` ones included). The classes Hydra registered stay registered, their
    ``load_config`` patched in place: a Hydra state handed to a sweep's joblib worker
    (``Singleton.set_state``) then re-registers Hydra's own classes there without a conflict, which
    registering subclasses in their place caused. Idempotent."""
    Plugins.instance()  # Hydra's plugin scan re-runs its source modules: patch the classes it registered
    types = SourcesRegistry.instance().types
    for scheme, patched in (("file", file_load_config), ("pkg", pkg_load_config)):
        cls = types[scheme]
        if cls.load_config is not patched:
            _ORIGINAL[scheme] = cls.load_config
            cls.load_config = patched


def clear() -> None:
    """Forget every parsed file (the next compositions parse them again)."""
    _PARSED.clear()
