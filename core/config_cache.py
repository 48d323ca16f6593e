"""Hydra reads each config file once per process: a cache of parsed config files by content.

Does: replace Hydra's ``file://`` and ``pkg://`` config sources (``conf/`` and veRL's packaged
``ppo_trainer`` tree) with subclasses that keep each file's parsed :class:`ConfigResult`, keyed by
its search-path root, its name and its bytes, and hand out a deep copy on every load; a composition
then skips PyYAML and ``OmegaConf.create`` for every file it has seen (most of the ~1 s a compose
costs). A file edited on disk has other bytes, so it is parsed again. :func:`install` is idempotent
and runs when :mod:`core.compose` is imported. Does not: cache compositions (overrides, merges and
interpolations run every time), nor change what a file composes to.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from functools import partial
from importlib import resources

from hydra._internal.core_plugins.file_config_source import FileConfigSource
from hydra._internal.core_plugins.importlib_resources_config_source import ImportlibResourcesConfigSource
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult

#: Parsed files: (scheme, root, name, bytes) -> the result as Hydra's own source parsed it.
_PARSED: dict[tuple[str, str, str, bytes], ConfigResult] = {}
#: More distinct file versions than this in one process empties the cache (memory stays bounded).
MAX_ENTRIES = 4096


def _cached(key: tuple[str, str, str, bytes], parse: Callable[[], ConfigResult]) -> ConfigResult:
    hit = _PARSED.get(key)
    if hit is None:
        hit = parse()
        if len(_PARSED) >= MAX_ENTRIES:
            _PARSED.clear()
        _PARSED[key] = hit
    # Hydra pops ``defaults`` off the config it loads and merges into it: never hand out the original
    return copy.deepcopy(hit)


class CachedFileConfigSource(FileConfigSource):
    """``file://`` source (this project's ``conf/``) that parses each version of a file once."""

    def load_config(self, config_path: str) -> ConfigResult:
        """The file's config as :class:`FileConfigSource` loads it, from the cache when its bytes
        were parsed before."""
        full_path = os.path.realpath(os.path.join(self.path, self._normalize_file_name(config_path)))
        try:
            with open(full_path, "rb") as f:
                data = f.read()
        except OSError:  # missing or unreadable: the parent raises its own error
            return super().load_config(config_path)
        return _cached(("file", self.path, config_path, data), partial(super().load_config, config_path))


class CachedImportlibResourcesConfigSource(ImportlibResourcesConfigSource):
    """``pkg://`` source (veRL's ``verl.trainer.config``) that parses each version of a file once."""

    def load_config(self, config_path: str) -> ConfigResult:
        """The file's config as :class:`ImportlibResourcesConfigSource` loads it, from the cache
        when its bytes were parsed before."""
        res = resources.files(self.path).joinpath(self._normalize_file_name(config_path))
        try:
            data = res.read_bytes()
        except OSError:  # missing: the parent raises its own error
            return super().load_config(config_path)
        return _cached(("pkg", self.path, config_path, data), partial(super().load_config, config_path))


def install() -> None:
    """Make Hydra's ``file`` and ``pkg`` schemes use the caching sources (for every Hydra context
    initialized from now on, ``@hydra.main`` ones included)."""
    Plugins.instance()  # Hydra registers its own sources on first use: register ours after it
    types = SourcesRegistry.instance().types
    types[CachedFileConfigSource.scheme()] = CachedFileConfigSource
    types[CachedImportlibResourcesConfigSource.scheme()] = CachedImportlibResourcesConfigSource


def clear() -> None:
    """Forget every parsed file (the next compositions parse them again)."""
    _PARSED.clear()
