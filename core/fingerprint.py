"""Fingerprints of the code that produces a cached artefact, so a stale reuse cannot happen.

A cache (a pretrained base model, a cold-start checkpoint, a filter's samples, a finished run
reused by an experiment) is keyed by everything that changes its content: its parameters *and*
the source of the code that builds it. :func:`source_hash` hashes the bytes of the Python files
(and YAML files, for config packages) of the given modules or packages, by path relative to the
repository, so editing any of them changes the key while moving the checkout does not.

It does not hash installed third-party packages (record their versions instead, ``core.versions``)
or data files (hash those with :func:`file_sha256`).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = (".py", ".yaml", ".jinja")


def _files(target: str) -> list[Path]:
    """Source files of a dotted module/package name or of a path relative to the repository."""
    path = REPO / target
    if not path.exists():
        spec = importlib.util.find_spec(target)
        if spec is None or spec.origin is None:
            raise ValueError(f"[fingerprint] {target!r} is neither a module nor a path under {REPO}")
        origin = Path(spec.origin)
        path = origin.parent if origin.name == "__init__.py" else origin
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts)


def source_hash(targets: Iterable[str], length: int = 12) -> str:
    """Hex digest over the source files of ``targets`` (dotted modules/packages or repo paths).

    >>> a = source_hash(["core.fingerprint"]); len(a)
    12
    >>> a == source_hash(["core/fingerprint.py"])
    True
    """
    h = hashlib.sha256()
    files = sorted({f for t in targets for f in _files(t)})
    for f in files:
        rel = f.relative_to(REPO).as_posix() if f.is_relative_to(REPO) else f.name
        h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:length]


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
