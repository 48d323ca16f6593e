"""Hydra-style ``key=value`` command lines for the analysis commands.

Each command has its defaults, documented field by field, in ``conf/analysis/<command>.yaml``;
``--help`` prints that file. Arguments are parsed with ``OmegaConf.from_dotlist`` (so
``k=[1,4,16]`` is a list) and merged onto the defaults in struct mode: a misspelled key is an
error naming the known keys, unless the command passes extra keys through (``estimate`` hands
them to the Hydra composition as overrides). It does not start a Hydra app (no output dir, no
logging setup) -- these commands are read-only over runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def defaults_path(command: str) -> Path:
    return CONF_DIR / "analysis" / f"{command}.yaml"


def parse(
    command: str, argv: Sequence[str] | None = None, passthrough: bool = False
) -> tuple[DictConfig, list[str]]:
    """Return (config, extra ``key=value`` args). Prints help and exits on ``-h``/``--help``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help", "help") for a in argv):
        try:
            print(defaults_path(command).read_text())
        except BrokenPipeError:  # `--help | head`
            pass
        raise SystemExit(0)
    base = OmegaConf.load(defaults_path(command))
    known, extra = [], []
    for arg in argv:
        if "=" not in arg:
            raise SystemExit(f"analysis.{command}: expected key=value, got {arg!r} (try --help)")
        key = arg.split("=", 1)[0].lstrip("+")
        if key.split(".")[0] in base:
            known.append(arg.lstrip("+"))
        elif passthrough:
            extra.append(arg)
        else:
            keys = ", ".join(str(k) for k in base)
            raise SystemExit(f"analysis.{command}: unknown key {key!r}; known: {keys} (try --help)")
    cfg = OmegaConf.merge(base, OmegaConf.from_dotlist(known))
    assert isinstance(cfg, DictConfig)
    return cfg, extra


def require(cfg: DictConfig, *keys: str, command: str) -> None:
    """Exit with a usage message if any of ``keys`` is null."""
    missing = [k for k in keys if OmegaConf.select(cfg, k) is None]
    if missing:
        raise SystemExit(f"analysis.{command}: missing {', '.join(m + '=...' for m in missing)} (try --help)")
