"""What each recipe's method officially sets, transcribed from its authors' code and paper.

One YAML file per recipe (``recipes/official/<recipe>.yaml``), written by hand from the sources
it cites. Hydra never reads these files, so they are independent of ``conf/recipe/`` and a test
can compare the two key by key (``tests/recipes/test_provenance.py``). Each file holds:

- ``papers``: the short id used in paper citations -> the paper, its version, and what was read;
- ``keys``: veRL (or ``rlvr.*``) key -> ``{value, source, also?, note?, match?}``. ``value`` is in
  veRL's units: counts the source gives in optimizer updates are already converted to veRL's
  counters, which count rollouts (the conversion is in ``note`` and in ``steps``);
- ``unstated``: keys the sources leave open, with what the recipe uses instead and why;
- ``steps``: what the source's "step" counts, and the conversions.

A citation is either code at a pinned commit, ``owner/repo@<40 hex>:path:line`` (or ``:a-b``),
or a paper, ``<paper id> <locator>`` with a locator such as ``§4.1``, ``eq. 7``, ``App. B``,
``Table 1`` or ``Methods``. Does not: compose, validate or launch anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DIR = Path(__file__).resolve().parent
CODE_CITATION = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}:[^\s:]+:\d+(-\d+)?$")
PAPER_LOCATOR = re.compile(r"^(§\d+(\.\d+)*|eq\. \d+|App\. [A-Z](\.\d+)*|Table \d+|Algorithm \d+|Methods)\b")
MATCH_MODES = ("equal", "contains")


@dataclass(frozen=True)
class Entry:
    """One transcribed key: the official value (veRL units) and where it comes from."""

    key: str
    value: Any
    source: str
    also: tuple[str, ...] = ()
    note: str = ""
    match: str = "equal"

    def accepts(self, got: Any) -> bool:
        """Whether a resolved config value equals this official value (floats to 1e-9 relative)."""
        if self.match == "contains":
            return isinstance(got, str) and str(self.value) in got
        if isinstance(self.value, bool) or isinstance(got, bool):
            return got is self.value
        if isinstance(self.value, (int, float)) and isinstance(got, (int, float)):
            return abs(got - self.value) <= 1e-9 * max(1.0, abs(self.value))
        if isinstance(self.value, list):
            return list(got) == self.value if got is not None else False
        if isinstance(self.value, dict):
            return dict(got) == self.value if got is not None else False
        return got == self.value


@dataclass(frozen=True)
class Transcription:
    """The official settings of one recipe's method (see the module docstring)."""

    recipe: str
    method: str
    papers: dict[str, str]
    keys: dict[str, Entry]
    unstated: dict[str, str] = field(default_factory=dict)
    steps: dict[str, Any] = field(default_factory=dict)

    def citation_error(self, text: Any) -> str:
        """'' when ``text`` is a pinned code citation or a paper citation of this file; else why not."""
        if not isinstance(text, str) or not text.strip():
            return "empty citation"
        if CODE_CITATION.match(text):
            return ""
        paper, _, locator = text.partition(" ")
        if paper in self.papers and PAPER_LOCATOR.match(locator):
            return ""
        return (
            f"{text!r} is neither owner/repo@<40-hex commit>:path:line nor '<paper> <locator>' "
            f"with a paper id in {sorted(self.papers)} and a locator like §4.1, eq. 7, App. B, Methods"
        )


def recipes() -> list[str]:
    """Recipes that have a transcription file."""
    return sorted(p.stem for p in DIR.glob("*.yaml"))


def load(recipe: str) -> Transcription:
    """Read ``recipes/official/<recipe>.yaml``; raises ``ValueError`` naming the file and entry."""
    path = DIR / f"{recipe}.yaml"
    if not path.exists():
        raise ValueError(f"no transcription {path}; available: {', '.join(recipes())}")
    raw = yaml.safe_load(path.read_text()) or {}
    keys: dict[str, Entry] = {}
    for key, spec in (raw.get("keys") or {}).items():
        if not isinstance(spec, dict) or "value" not in spec or "source" not in spec:
            raise ValueError(f"{path}: keys.{key} needs 'value' and 'source'")
        unknown = set(spec) - {"value", "source", "also", "note", "match"}
        if unknown:
            raise ValueError(f"{path}: keys.{key} has unknown fields {sorted(unknown)}")
        match = spec.get("match", "equal")
        if match not in MATCH_MODES:
            raise ValueError(f"{path}: keys.{key}.match={match!r}; one of {MATCH_MODES}")
        keys[key] = Entry(
            key=key,
            value=spec["value"],
            source=spec["source"],
            also=tuple(spec.get("also") or ()),
            note=str(spec.get("note", "")),
            match=match,
        )
    return Transcription(
        recipe=recipe,
        method=str(raw.get("method", recipe)),
        papers=dict(raw.get("papers") or {}),
        keys=keys,
        unstated=dict(raw.get("unstated") or {}),
        steps=dict(raw.get("steps") or {}),
    )
