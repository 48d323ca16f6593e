"""``make results NAME=thinking_budget``: seed 002's thinking-budget curve on R1-Zero laptop runs.

Trains one ``recipe`` run per seed at ``scale`` (``experiments.seed_table.run_one``: a finished run
of the same code, keyed by :func:`core.fingerprint.source_hash`, is reused; ``jobs`` runs at once),
then evaluates the thinking-budget curve (``experiments.budget``: hard budgets, forced answers, the
project's verifier) on each run's latest checkpoint -- and, once, on the base model they all
started from -- and records ``results/<results>/`` through ``core.results``: the design (claim,
metrics and seeds, written before the runs), each run's record and one ``budget-s<seed>.json`` per
seed (files of seeds no longer in the list are removed); ``docs/r1_zero.md`` renders from it with
``make docs``. A Hydra app (``conf/command/thinking_budget.yaml``)::

    python -m experiments.thinking_budget ['seeds=[0,1,2,3,4]'] "budget=['n=2']"

Does not build the base model itself (the run does, through ``recipes.local.pretrain``).
"""

from __future__ import annotations

import copy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import DictConfig

from analysis.results_io import run_record
from core import results
from core.cli import hydra_main, load, route_argv
from core.fingerprint import source_hash
from experiments import budget
from experiments.seed_table import CODE, run_one


def _clear(experiment: str) -> None:
    """Drop the run records and per-seed tables of an earlier recording (this one rewrites them)."""
    root = results.results_dir() / experiment
    for stale in [*root.glob("budget*.json"), *(root / "runs").glob("*.json")]:
        stale.unlink()


def command(a: DictConfig) -> int:
    code = source_hash(CODE)
    out = Path(str(a.out)) / code
    out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in a.seeds]
    bcfg = load("command", "budget", ["model=placeholder", *[str(x) for x in a.budget]])
    design = {
        "claim": str(a.claim),
        "metrics": list(a.metrics),
        "recipe": str(a.recipe),
        "seeds": seeds,
        "scale": str(a.scale),
        "budgets": [int(b) for b in bcfg.budgets],
        "budget_overrides": [str(x) for x in a.budget],
        "overrides": list(a.overrides),
        "code": code,
    }
    results.write_experiment(str(a.results), design=design)  # declared before the runs
    _clear(str(a.results))
    with ThreadPoolExecutor(int(a.jobs)) as ex:
        runs = list(
            ex.map(lambda s: run_one(str(a.recipe), s, out, list(a.overrides), scale=str(a.scale)), seeds)
        )
    for i, (seed, r) in enumerate(zip(seeds, runs, strict=True)):
        if "error" in r:
            print(f"[thinking_budget] seed {seed} failed ({r['error']}); its log: {r['log']}")
            return 1
        one = copy.deepcopy(bcfg)
        one.model, one.out = r["run_dir"], str(Path(r["run_dir"]) / "budget")
        if i:  # every seed starts from the same base model: its curve is measured once
            one.base = None
        res = budget.evaluate(one)
        print(f"## seed {seed}\n\n{budget.tables(res)}")
        rec = run_record(r["run_dir"])
        rec["label"] = str(a.recipe)
        results.write_run(str(a.results), f"{a.recipe}-s{seed}", rec)
        print(f"recorded {results.write_table(str(a.results), f'budget-s{seed}', res)}")
    return 0


main = hydra_main("command", "thinking_budget", command)


if __name__ == "__main__":
    route_argv("command", "thinking_budget")
    main()
