"""The docs are generated from results/: `make docs` on a fresh clone changes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from docgen import blocks, engine, recipe_pages
from experiments.registry import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_generated_blocks_and_figures_are_fresh() -> None:
    """Every block and figure, regenerated in check mode, matches the committed docs.

    In the ``slow`` tier: ``make test`` renders every block once, in
    ``tests/test_documented_commands.py::test_fast_documented_command[make docs]`` (the documented
    command, which must leave ``git status`` unchanged, so a stale block or figure fails it there);
    this test says which blocks are stale, for a run of the slow tier."""
    stale = blocks.generate(check=True)
    assert not stale, f"stale generated docs (run `make docs`): {stale}"


def test_every_block_names_a_registered_section() -> None:
    for doc in engine.documents():
        for m in engine.BLOCK.finditer(doc.read_text(encoding="utf-8")):
            assert m.group("name") in blocks.SECTIONS, f"{doc}: unknown block {m.group('name')}"


@pytest.mark.parametrize(
    "path", sorted((ROOT / "results").rglob("*.json")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_results_file_names_its_commit_and_command(path: Path) -> None:
    prov = json.loads(path.read_text()).get("provenance") or {}
    assert len(prov.get("git_commit") or "") == 40, f"{path}: no commit"
    assert prov.get("command"), f"{path}: no command"


def test_every_results_folder_has_a_command_that_writes_it() -> None:
    for folder in sorted(p for p in (ROOT / "results").iterdir() if p.is_dir()):
        assert folder.name in EXPERIMENTS, (
            f"results/{folder.name}: no experiment registered in experiments.registry"
        )


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _headings(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (outside code blocks; repeats get -1, -2 ...)."""
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m:
            continue
        base = recipe_pages.slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


@pytest.mark.parametrize("doc", engine.documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(doc: Path) -> None:
    """A link of README.md or docs/ to a file of the repository names a file that exists, and its
    ``#anchor`` a heading of that file."""
    bad = []
    for target in LINK.findall(FENCE.sub("", doc.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _headings(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not bad, f"{doc.relative_to(ROOT)}: " + "; ".join(bad)


def test_every_recipe_has_its_generated_page() -> None:
    """``docs/recipes/<recipe>.md`` exists for every ``conf/recipe/<recipe>.yaml`` and holds its block."""
    for recipe in recipe_pages.names():
        page = recipe_pages.page_path(recipe)
        assert page.is_file(), f"{page.relative_to(ROOT)} missing: run `make docs`"
        assert f"<!-- gen:recipe-{recipe} -->" in page.read_text(encoding="utf-8")
