"""The docs are generated from results/: `make docs` on a fresh clone changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analysis.docsections  # noqa: F401  (registers its sections)
import benchmarks.doc_sections  # noqa: F401  (registers its sections)
import benchmarks.r1_zero_doc  # noqa: F401  (registers its sections)
import benchmarks.thinking_budget_doc  # noqa: F401  (registers its section)
from analysis import docgen
from benchmarks.experiments import EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]


def test_generated_blocks_and_figures_are_fresh() -> None:
    stale = docgen.generate(check=True)
    assert not stale, f"stale generated docs (run `make docs`): {stale}"


def test_every_block_names_a_registered_section() -> None:
    for doc in docgen.documents():
        for m in docgen.BLOCK.finditer(doc.read_text(encoding="utf-8")):
            assert m.group("name") in docgen.SECTIONS, f"{doc}: unknown block {m.group('name')}"


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
            f"results/{folder.name}: no experiment registered in benchmarks.experiments"
        )
