"""R1-Zero in miniature: held-out accuracy and mean response length over RL steps, per seed.

Runs ``python -m recipes.run recipe=<r> engine=local scale=laptop_base rlvr.seed=<s>`` for every
recipe x seed (``engine=verl``: on veRL's own trainer, whose ``summary.json`` and held-out curves
``recipes.verl_summary`` derives with the local engine's definitions; reusing a finished run of the
same code, as :mod:`experiments.seed_table` does),
prints start -> end held-out accuracy and mean held-out response length with the per-seed targets
(accuracy +15 points, length +30%), and records every finished run -- with its curves
``rlvr/val_acc``, ``rlvr/val_response_length`` and the shares of worked, checking and correcting
held-out responses (``rlvr/val_{worked,check,fix}_share``, from the validation dumps) -- and the base model's probe (the build's
``rlvr_meta.json``: sampled pass rate by difficulty, by length and by mode) in
``results/<results>/`` (``core.results``; ``docs/r1_zero.md`` renders from it with ``make docs``).
A Hydra app (``conf/command/r1_zero_curves.yaml``)::

    python -m experiments.r1_zero_curves seeds=[0,1]
Does not build the base model itself (the first run does, through ``recipes.local.pretrain``).
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import DictConfig

from analysis.render import Table
from analysis.results_io import run_record
from core import results
from core.cli import hydra_main, route_argv
from core.fingerprint import source_hash
from experiments.seed_table import CODE, run_one
from recipes.local.probe import response_kind

ACC, LEN = "rlvr/val_acc", "rlvr/val_response_length"
#: shares of held-out responses by kind, per evaluation (from the run's validation dumps)
KINDS = {"worked": "rlvr/val_worked_share", "check": "rlvr/val_check_share", "fix": "rlvr/val_fix_share"}
#: the sources a run's reuse is keyed by, per engine (veRL's trainer on a CPU also runs verl_cpu/)
ENGINE_CODE = {"local": CODE, "verl": (*CODE, "verl_cpu")}


def kind_curves(run_dir: str | Path) -> dict[str, dict[str, list]]:
    """Per evaluation step, the share of held-out responses that work steps, check, or fix a slip
    (:func:`recipes.local.probe.response_kind`), as downsampled curves named by :data:`KINDS`."""
    steps, shares = [], {k: [] for k in KINDS}
    files = sorted(Path(run_dir, "validation").glob("*.jsonl"), key=lambda p: int(p.stem))
    for f in files:
        rows = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        kinds = [response_kind(r["output"]) for r in rows]
        steps.append(int(f.stem))
        for k in KINDS:
            shares[k].append(sum(x[k] for x in kinds) / max(1, len(kinds)))
    return {KINDS[k]: results.downsample(steps, v) for k, v in shares.items()}


def _ends(rec: dict, key: str) -> tuple[float, float]:
    c = rec["curves"][key]
    return float(c["value"][0]), float(c["value"][-1])


HEAD = ["recipe", "seed", "acc start", "acc end", "length start", "length end", "met", "wall min", "CPU min"]
BASE_KEYS = (
    "build",
    "build_cpu_seconds",
    "build_wall_seconds",
    "corpus",
    "probe",
    "num_params",
    "loss_history",
    "weights_sha256",
)


def _row(r: dict, rec: dict, a: DictConfig) -> list:
    """One table row of a finished run: start -> end accuracy and length, whether both targets hold."""
    (a0, a1), (l0, l1) = _ends(rec, ACC), _ends(rec, LEN)
    met = a1 - a0 >= a.target_acc_gain and (
        a.target_length_gain is None or l1 / l0 - 1 >= a.target_length_gain
    )
    return [
        r["recipe"],
        r["seed"],
        f"{a0:.3f}",
        f"{a1:.3f}",
        f"{l0:.1f}",
        f"{l1:.1f}",
        "yes" if met else "no",
        f"{r['minutes']:.1f}",
        f"{r.get('cpu_minutes', float('nan')):.1f}",
    ]


def _record(name: str, design: dict, rows: list[dict], recs: dict[str, dict]) -> Path:
    """Write ``results/<name>/``: the design, one record per finished run and the base models' builds."""
    path = results.write_experiment(name, design=design)
    for run_id, rec in recs.items():
        results.write_run(name, run_id, rec)
    done = [r for r in rows if "error" not in r]
    models = {json.loads(Path(r["run_dir"], "summary.json").read_text())["model"] for r in done}
    base = [json.loads(Path(m, "rlvr_meta.json").read_text()) for m in sorted(models)]
    results.write_table(name, "base_model", {"models": [{k: b.get(k) for k in BASE_KEYS} for b in base]})
    return path.parent


def command(a: DictConfig) -> int:
    recipes, seeds, extra = list(a.recipes), [int(x) for x in a.seeds], list(a.overrides)
    engine = str(a.engine)
    if engine not in ENGINE_CODE:
        print(f"error: [engine] {engine!r} is no engine; fix: one of {sorted(ENGINE_CODE)}", file=sys.stderr)
        return 2
    code = source_hash(ENGINE_CODE[engine])
    out = Path(str(a.out)) / code
    out.mkdir(parents=True, exist_ok=True)
    design = {
        "claim": str(a.claim),
        "metrics": list(a.metrics),
        "recipes": recipes,
        "seeds": seeds,
        "scale": str(a.scale),
        "engine": engine,
        "targets": {
            "acc_gain": float(a.target_acc_gain),
            "length_gain": None if a.target_length_gain is None else float(a.target_length_gain),
        },
        "overrides": extra,
        "code": code,
    }
    if a.results:
        results.write_experiment(str(a.results), design=design)  # declared before the runs
    jobs = [(r, s) for s in seeds for r in recipes]
    with ThreadPoolExecutor(int(a.jobs)) as ex:
        rows = list(
            ex.map(lambda j: run_one(j[0], j[1], out, extra, scale=str(a.scale), engine=engine), jobs)
        )
    table, recs = Table(HEAD, []), {}
    for r in rows:
        if "error" in r:
            table.rows.append([r["recipe"], r["seed"], "-", "-", "-", "-", f"error: {r['error']}", "", ""])
            continue
        rec = run_record(r["run_dir"])
        rec["label"] = r["recipe"]
        rec["curves"].update(kind_curves(r["run_dir"]))
        recs[f"{r['recipe']}-s{r['seed']}"] = rec
        table.rows.append(_row(r, rec, a))
    print(table.markdown())
    if a.results:
        print(f"recorded {_record(str(a.results), design, rows, recs)}")
    return 1 if any("error" in r for r in rows) else 0


main = hydra_main("command", "r1_zero_curves", command)


if __name__ == "__main__":
    route_argv("command", "r1_zero_curves")
    main()
