from __future__ import annotations

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from recipes.compose import CONF_DIR


@pytest.fixture(scope="module")
def hydra_ctx():
    """One Hydra context for a test module (composing is then ~0.3 s per config)."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        yield
    GlobalHydra.instance().clear()
