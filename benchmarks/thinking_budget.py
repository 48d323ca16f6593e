"""``make results NAME=thinking_budget``: seed 002's thinking-budget curve on an R1-Zero laptop run.

Trains one ``recipe`` run at ``scale`` (``benchmarks.seed_table.run_one``: a finished run of the
same code, keyed by :func:`core.fingerprint.source_hash`, is reused), then evaluates the
thinking-budget curve (``benchmarks.budget``: hard budgets, forced answers, the project's verifier)
on its latest checkpoint and on the base model it started from, and records ``results/<results>/``
through ``core.results``: the design (claim and metrics, written before the run), the run's record
and ``budget.json``; ``docs/r1_zero.md`` renders from it with ``make docs``. A Hydra app
(``conf/command/thinking_budget.yaml``)::

    python -m benchmarks.thinking_budget [seed=0] "budget=['n=2']"

Does not build the base model itself (the run does, through ``recipes.local.pretrain``).
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from analysis.results_io import run_record
from benchmarks import budget
from benchmarks.seed_table import CODE, run_one
from core import results
from core.cli import hydra_main, load, route_argv
from core.fingerprint import source_hash


def command(a: DictConfig) -> int:
    code = source_hash(CODE)
    out = Path(str(a.out)) / code
    out.mkdir(parents=True, exist_ok=True)
    bcfg = load("command", "budget", ["model=placeholder", *[str(x) for x in a.budget]])
    design = {
        "claim": str(a.claim),
        "metrics": list(a.metrics),
        "recipe": str(a.recipe),
        "seeds": [int(a.seed)],
        "scale": str(a.scale),
        "budgets": [int(b) for b in bcfg.budgets],
        "budget_overrides": [str(x) for x in a.budget],
        "overrides": list(a.overrides),
        "code": code,
    }
    results.write_experiment(str(a.results), design=design)  # declared before the run
    r = run_one(str(a.recipe), int(a.seed), out, list(a.overrides), scale=str(a.scale))
    if "error" in r:
        print(f"[thinking_budget] the run failed ({r['error']}); its log: {out}/{a.recipe}-s{a.seed}.log")
        return 1
    bcfg.model = r["run_dir"]
    bcfg.out = str(Path(r["run_dir"]) / "budget")
    res = budget.evaluate(bcfg)
    print(budget.tables(res))
    rec = run_record(r["run_dir"])
    rec["label"] = str(a.recipe)
    results.write_run(str(a.results), f"{a.recipe}-s{a.seed}", rec)
    print(f"recorded {results.write_table(str(a.results), 'budget', res)}")
    return 0


main = hydra_main("command", "thinking_budget", command)


if __name__ == "__main__":
    route_argv("command", "thinking_budget")
    main()
