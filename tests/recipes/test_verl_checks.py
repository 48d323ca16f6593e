"""docs/verl_checks.md stays true to the installed veRL: every row points at an ``assert``/``raise``
there, every ``assert``/``raise`` of the swept files has a row, every rule it names is registered,
and its counts add up."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import verl

from recipes.validate import RULES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "verl_checks.md"
SITE = Path(verl.__file__).resolve().parents[1]
#: The swept files (globs under site-packages), as the doc's first paragraph names them.
SWEPT = (
    "verl/trainer/ppo/ray_trainer.py",
    "verl/trainer/main_ppo.py",
    "verl/trainer/ppo/v1/*.py",
    "verl/workers/*.py",
    "verl/workers/engine/*.py",
    "verl/workers/engine/*/*.py",
    "verl/workers/config/*.py",
    "verl/utils/seqlen_balancing.py",
)
ROW = re.compile(
    r"^\| `(?P<text>.*)` \| `(?P<file>[^`:]+):(?P<line>\d+)` \| (?P<cov>[^|]+) \| (?P<why>.*) \|$"
)


@cache
def checks(path: str) -> frozenset[int]:
    tree = ast.parse((SITE / path).read_text(encoding="utf-8"))
    return frozenset(n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Assert, ast.Raise)))


def rows() -> list[dict[str, str]]:
    out = [m.groupdict() for line in DOC.read_text(encoding="utf-8").splitlines() if (m := ROW.match(line))]
    assert out, "no table rows parsed"
    return out


def test_every_row_points_at_an_assert_or_raise() -> None:
    stale = [f"{r['file']}:{r['line']}" for r in rows() if int(r["line"]) not in checks(r["file"])]
    assert not stale, f"rows no longer at an assert/raise of the installed veRL: {stale}"


def test_every_assert_and_raise_has_a_row() -> None:
    have = {(r["file"], int(r["line"])) for r in rows()}
    files = sorted({str(p.relative_to(SITE)) for g in SWEPT for p in SITE.glob(g)})
    missing = [f"{f}:{n}" for f in files for n in sorted(checks(f)) if (f, n) not in have]
    assert not missing, f"checks without a row in docs/verl_checks.md: {missing}"


def test_every_named_rule_exists() -> None:
    named = {name for r in rows() for name in re.findall(r"rule:(\w+)", r["cov"])}
    assert named, "the table names rules"
    unknown = sorted(n for n in named if n not in RULES)
    assert not unknown, f"rules named in docs/verl_checks.md but not registered: {unknown}"


def test_the_counts_add_up() -> None:
    rs = rows()
    reachable = [r for r in rs if r["cov"].strip() != "unreachable"]
    covered = [r for r in reachable if r["cov"].strip() != "not covered"]
    m = re.search(
        r"Counts: (\d+) found, (\d+) reachable .*?, (\d+) of them covered", DOC.read_text(encoding="utf-8")
    )
    assert m, "the doc states its counts"
    assert tuple(map(int, m.groups())) == (len(rs), len(reachable), len(covered))
