"""Freeze a held-out verifier set before it is scored, and score it only in aggregate.

A held-out set is a directory laid out like ``benchmarks/heldout/`` (``sources.json`` + ``*.jsonl``,
loaded by ``load_heldout``). The protocol (``benchmarks/heldout/README.md``, end of
``docs/verifier_log.md``):

- ``freeze(directory, name)`` records the set's sha256 (over ``sources.json`` and every ``*.jsonl``,
  by name and bytes), per-file hashes, row count and sources in
  ``results/bench_rewards/frozen_heldout.json`` (with the commit, through ``core.results``) -- before
  any scorer has seen it. A name is frozen once: a set whose files changed is a new set.
- ``score_frozen(directory, name)`` refuses a set that is not frozen, whose files no longer match the
  record, or that was retired; it returns FN / FP counts over all rows, per source and per answer
  format only -- no per-row verdict, no miss id.
- ``retire(name, reason)`` marks a set retired to development (a rule changed after one of its scores
  was seen); it is never scored as held out again.

Command line: ``python -m benchmarks.heldout.freeze <directory> <name>`` freezes;
``... --score`` scores the frozen set with our default scorer and prints the aggregates.
What it does not do: keep anyone from reading the files, or write scores to ``results/`` (the caller
decides; only these aggregates may go there).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.heldout import answer_format, golds, load_heldout
from core import results

EXPERIMENT, TABLE = "bench_rewards", "frozen_heldout"
Scorer = Callable[[str, dict], bool]  # (level, row) -> credited?, as in benchmarks.bench_rewards


def _files(directory: Path) -> list[Path]:
    return [directory / "sources.json", *sorted(directory.glob("*.jsonl"))]


def digest(directory: Path) -> tuple[str, dict[str, str]]:
    """The set's sha256 (file names and bytes of ``sources.json`` and every ``*.jsonl``) and each file's."""
    whole, per_file = hashlib.sha256(), {}
    for p in _files(Path(directory)):
        data = p.read_bytes()
        per_file[p.name] = hashlib.sha256(data).hexdigest()
        whole.update(p.name.encode() + b"\0" + data + b"\0")
    return whole.hexdigest(), per_file


def frozen() -> dict[str, Any]:
    """Every frozen set's record by name (empty when none was frozen)."""
    path = results.results_dir() / EXPERIMENT / f"{TABLE}.json"
    return dict(results.read_json(path).get("sets", {})) if path.is_file() else {}


def _save(sets: dict[str, Any]) -> Path:
    return results.write_table(EXPERIMENT, TABLE, {"sets": sets})


def freeze(directory: Path, name: str) -> dict[str, Any]:
    """Record the set's hashes under ``name`` before it is scored; refuse a name frozen with other files."""
    sets, (sha, per_file) = frozen(), digest(directory)
    if name in sets:
        if sets[name]["sha256"] != sha:
            raise ValueError(
                f"[heldout.freeze] {name!r} was frozen with sha256 {sets[name]['sha256'][:12]}, these files "
                f"hash to {sha[:12]}: a changed set is a new set -- freeze it under a new name"
            )
        return sets[name]
    rows = load_heldout(Path(directory))  # refuses a malformed row before anything is recorded
    commit, dirty = results.git_state()
    sets[name] = {
        "sha256": sha,
        "files": per_file,
        "rows": len(rows),
        "sources": sorted({r["source"] for r in rows}),
        "frozen_at_commit": commit,
        "frozen_dirty": dirty,
        "retired": None,
    }
    _save(sets)
    return sets[name]


def retire(name: str, reason: str) -> None:
    """Mark a frozen set retired to development (a rule changed after one of its scores was seen)."""
    sets = frozen()
    if name not in sets:
        raise ValueError(f"[heldout.freeze] no frozen set {name!r}; frozen: {sorted(sets)}")
    sets[name]["retired"] = reason
    _save(sets)


def _counts(rows: list[dict], got: list[bool]) -> dict[str, int]:
    pos = [g for r, g in zip(rows, got, strict=True) if r["label"]]
    neg = [g for r, g in zip(rows, got, strict=True) if not r["label"]]
    return {
        "n": len(rows),
        "n_pos": len(pos),
        "n_neg": len(neg),
        "FN": pos.count(False),
        "FP": neg.count(True),
    }


def score_frozen(directory: Path, name: str, scorers: dict[str, Scorer] | None = None) -> dict[str, Any]:
    """Aggregates of each scorer on a frozen, unretired, unchanged set: all rows, per source, per format."""
    sets = frozen()
    if name not in sets:
        raise ValueError(
            f"[heldout.freeze] {name!r} is not frozen: run `python -m benchmarks.heldout.freeze {directory} "
            f"{name}` and commit results/{EXPERIMENT}/{TABLE}.json before the first score"
        )
    rec = sets[name]
    if rec.get("retired"):
        raise ValueError(f"[heldout.freeze] {name!r} was retired to development ({rec['retired']})")
    sha, per_file = digest(directory)
    if sha != rec["sha256"]:
        changed = sorted(
            set(per_file) ^ set(rec["files"]) | {f for f in per_file if per_file[f] != rec["files"].get(f)}
        )
        raise ValueError(
            f"[heldout.freeze] {directory} no longer matches frozen set {name!r} (changed: {changed})"
        )
    if scorers is None:
        from benchmarks.bench_rewards import OURS, _scorers  # the verifier loads only when scoring

        scorers = {OURS: _scorers(0.0)[OURS]}
    rows = load_heldout(Path(directory))
    out: dict[str, Any] = {"set": name, "sha256": sha, "scorers": {}}
    for scorer, fn in scorers.items():
        got = [bool(fn(r["level"], r)) for r in rows]
        groups: dict[str, dict[str, list[int]]] = {
            "by_source": defaultdict(list),
            "by_format": defaultdict(list),
        }
        for i, r in enumerate(rows):
            groups["by_source"][r["source"]].append(i)
            groups["by_format"][answer_format(golds(r)[0])].append(i)
        out["scorers"][scorer] = {"all": _counts(rows, got)} | {
            g: {k: _counts([rows[i] for i in v], [got[i] for i in v]) for k, v in sorted(idx.items())}
            for g, idx in groups.items()
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Freeze a set (default) or score a frozen one (``--score``) from the command line."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.heldout.freeze", description=__doc__.split("\n")[0]
    )
    ap.add_argument("directory", type=Path)
    ap.add_argument("name")
    ap.add_argument("--score", action="store_true", help="score the frozen set (aggregates only)")
    args = ap.parse_args(argv)
    if args.score:
        print(json.dumps(score_frozen(args.directory, args.name), indent=1))
    else:
        rec = freeze(args.directory, args.name)
        print(
            f"frozen {args.name}: sha256 {rec['sha256']} ({rec['rows']} rows) in results/{EXPERIMENT}/{TABLE}.json"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
