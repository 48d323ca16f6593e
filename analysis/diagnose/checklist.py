"""The checklist runner: every registered check on one run, one verdict line each.

``run`` runs the checks of ``analysis.diagnose.registry.CHECKS`` (checklist order, or ``checks=``),
writes ``diagnosis.md`` / ``diagnosis.html`` with PNG plots and ``verifier_audit.jsonl`` to
``<run>/diagnosis`` (or ``out=``); ``command`` prints one verdict line per check; ``main`` is the
Hydra entry of ``python -m analysis.diagnose``. A check that raises is reported as failed with its
error (the rest still run); missing data is "not logged".
"""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from analysis.diagnose import (  # noqa: F401  (importing a check module registers its checks)
    base_model,
    behaviour,
    curves,
    difficulty,
    hacking,
    logprobs,
    reward_model,
    verifier,
)
from analysis.diagnose.registry import CHECKS, Context
from analysis.render import STATUS_ICON, Document, Section
from core.cli import hydra_main, require
from core.runs import Run


def run(cfg: DictConfig) -> tuple[Document, dict[str, Path]]:
    """Run the checklist on ``cfg.run``; return the document and the files written."""
    run_dir = Path(str(cfg.run))
    if not run_dir.is_dir():
        raise FileNotFoundError(f"diagnose: run={run_dir} is not a directory")
    r = Run(run_dir)
    out = Path(str(cfg.out)) if cfg.out else run_dir / "diagnosis"
    doc = Document(f"Diagnosis: {r.name}", out)
    doc.intro.append(
        f"Run `{run_dir}` — recipe {r.recipe or '?'}, engine {r.manifest.get('engine', '?')}, "
        f"seed {r.seed}, git {str(r.manifest.get('git_commit') or '?')[:10]}"
        f"{' (dirty)' if r.manifest.get('git_dirty') else ''}; "
        f"{len(r.metrics)} metrics logged, rollout dumps {len(r.sample_steps('rollouts'))}, "
        f"validation dumps {len(r.sample_steps('validation'))}."
    )
    ctx = Context(r, doc, cfg, np.random.default_rng(int(cfg.seed)))
    names = list(cfg.checks) if cfg.checks else sorted(CHECKS.names(), key=lambda n: CHECKS.get(n).order)
    for name in names:
        chk = CHECKS.get(name)
        try:
            sec = chk.fn(ctx)
        except Exception as exc:  # one broken check must not hide the others
            sec = Section(chk.title, "fail", f"check crashed: {exc!r}", text=[traceback.format_exc(limit=3)])
        doc.sections.append(sec)
    if r.bad_lines:
        doc.intro.append(f"{r.bad_lines} malformed JSONL lines were skipped.")
    return doc, doc.write("diagnosis")


def command(cfg: DictConfig) -> int:
    """Run the checklist and print one verdict line per check."""
    require(cfg, "run", command="analysis.diagnose")
    doc, files = run(cfg)
    for s in doc.sections:
        print(f"[{STATUS_ICON.get(s.status, s.status):>10}] {s.title}: {s.verdict}")
    print(f"wrote {files['markdown']} and {files['html']}")
    return 0


main = hydra_main("analysis", "diagnose", command)
