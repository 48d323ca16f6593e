"""``make reproduce``: re-run seed 0 (or ``seeds``) of each headline experiment from an empty cache and compare.

For every experiment in ``names`` (default :data:`HEADLINE`), runs its registered command
(:data:`EXPERIMENTS`) with ``seeds=[...]`` and a fresh ``RLVR_CACHE`` and ``RLVR_RESULTS``
under ``out`` (so nothing cached on this machine is reused and ``results/`` is not touched), then
prints, per metric (held-out accuracy and mean held-out response length at the start and end, and
their gains), the committed value of that seed, the committed seeds' range and the fresh value, and
whether the fresh value lies inside the range. Exit code 1 when a fresh value falls outside.

Does not decide what an experiment measures (its command does); the comparison is written to
``<out>/reproduce.json``, and with ``record=true`` also to ``results/reproduce/latest.json`` (with
the commit, command and machine, and the base models and test splits the fresh runs built, by
sha256, beside the hashes the committed records name), which
``docs/provenance.md`` renders. Runs whose records hold no accuracy and
length curves (measurements of speed, error rates) are not covered.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from analysis.render import Table
from core import results
from core.cli import UsageError, hydra_main
from experiments.registry import EXPERIMENTS, run_hashes

ACC, LEN = "rlvr/val_acc", "rlvr/val_response_length"
#: the experiments whose numbers the README leads with
HEADLINE = ("r1_zero_arms-format", "r1_zero_arms-outcome", "r1_zero_arms-shuffled")


#: the metrics :func:`metrics` returns, in its order
METRICS = ("acc start", "acc end", "acc gain", "length start", "length end", "length gain")


def metrics(rec: dict[str, Any]) -> dict[str, float]:
    """A run record's headline metrics (:data:`METRICS`): accuracy and length at start and end, and
    their gains.

    >>> rec = {"curves": {ACC: {"value": [0.25, 0.5]}, LEN: {"value": [20.0, 30.0]}}}
    >>> metrics(rec)
    {'acc start': 0.25, 'acc end': 0.5, 'acc gain': 0.25, 'length start': 20.0, 'length end': 30.0, 'length gain': 0.5}
    >>> tuple(metrics(rec)) == METRICS
    True
    """
    a, n = rec["curves"][ACC]["value"], rec["curves"][LEN]["value"]
    a0, a1, n0, n1 = float(a[0]), float(a[-1]), float(n[0]), float(n[-1])
    values = (a0, a1, a1 - a0, n0, n1, n1 / n0 - 1 if n0 else float("nan"))
    return dict(zip(METRICS, values, strict=True))


def by_run(runs: dict[str, dict]) -> dict[str, dict[int, dict[str, float]]]:
    """Per run label (recipe or arm), per seed, the metrics of run records that hold the curves.

    >>> rec = {"seed": 3, "label": "grpo", "curves": {ACC: {"value": [0.1, 0.3]}, LEN: {"value": [10, 10]}}}
    >>> by_run({"grpo-s3": rec})["grpo"][3]["acc gain"]
    0.19999999999999998
    """
    out: dict[str, dict[int, dict[str, float]]] = {}
    for run_id, rec in runs.items():
        if ACC in rec.get("curves", {}) and LEN in rec.get("curves", {}):
            label, seed = str(rec.get("label") or run_id.rsplit("-s", 1)[0]), int(rec["seed"])
            out.setdefault(label, {})[seed] = metrics(rec)
    return out


def committed(name: str) -> dict[str, dict[int, dict[str, float]]]:
    """:func:`by_run` of ``results/<name>/runs/*``."""
    return by_run(results.read_experiment(name).get("runs", {}))


def seed_command(argv: list[str], seeds: list[int], runs: Path, jobs: int = 1) -> list[str]:
    """``argv`` with its seeds replaced by ``seeds`` and its runs written under ``runs``.

    >>> seed_command(["py", "-m", "x", "seeds=[0,1]", "jobs=2", "out=runs/a", "k=v"], [0], Path("/t"))
    ['py', '-m', 'x', 'k=v', 'seeds=[0]', 'out=/t', 'jobs=1']
    >>> seed_command(["py", "-m", "x", "seeds=[0,1]"], [1, 2], Path("/t"), jobs=2)[-3:]
    ['seeds=[1,2]', 'out=/t', 'jobs=2']
    """
    drop = ("seeds=", "out=", "jobs=")
    picked = ",".join(str(x) for x in seeds)
    return [a for a in argv if not a.startswith(drop)] + [f"seeds=[{picked}]", f"out={runs}", f"jobs={jobs}"]


def compare(
    name: str,
    seed: int,
    fresh: dict[str, dict[int, dict[str, float]]],
    past: dict[str, dict[int, dict[str, float]]],
) -> list[dict]:
    """One row per run label and metric: the committed value of ``seed``, the committed seeds' range,
    the fresh value and whether it lies inside the range (a label with no fresh run is a miss)."""
    rows = []
    for label, seeds in past.items():
        new = fresh.get(label, {}).get(seed)
        for m in METRICS:
            vals = [p[m] for p in seeds.values()]
            v = None if new is None else new[m]
            rows.append(
                {
                    "experiment": name,
                    "run": label,
                    "seed": seed,
                    "metric": m,
                    "committed": seeds.get(seed, {}).get(m),
                    "range": [min(vals), max(vals)],
                    "seeds": sorted(seeds),
                    "fresh": v,
                    "inside": v is not None and min(vals) <= v <= max(vals),
                }
            )
    return rows


def run_inputs(runs: list[dict]) -> dict[str, list[str]]:
    """The base models (``pretraining seed <s>``) and test splits the run records name, by sha256
    (:func:`experiments.registry.run_hashes`, keyed for the record).

    >>> run_inputs([{"run": {"model": {"weights_sha256": "ab", "build": {"pretrain": {"seed": 0}}},
    ...                      "data_sha256": {"t/test.parquet": "cd", "t/train.parquet": "ef"}}}])
    {'base model, pretraining seed 0': ['ab'], 'test split t/test.parquet': ['cd']}
    """
    named = run_hashes(runs)
    out = {f"base model, pretraining seed {seed}": v for seed, v in named.models.items()}
    out.update({f"test split {file}": v for file, v in named.splits.items()})
    return {k: sorted(v) for k, v in sorted(out.items())}


def committed_inputs(names: list[str]) -> dict[str, list[str]]:
    """:func:`run_inputs` over the committed runs of ``names``: the records the fresh values are
    compared with (not every record in ``results/``, which holds other experiments' base models --
    another pretraining corpus, an older record kept for comparison -- under the same labels)."""
    runs: list[dict] = []
    for name in names:
        try:
            runs += list(results.read_experiment(name)["runs"].values())
        except FileNotFoundError:
            continue
    return run_inputs(runs)


def fmt_metric(m: str, v: float | None, sign: bool = False) -> str:
    """A metric's value as the tables show it (``sign``: a difference, with its sign).

    >>> fmt_metric("length gain", 0.5), fmt_metric("length end", 3.25, sign=True), fmt_metric("acc end", 0.5)
    ('+50.0%', '+3.2', '0.500')
    """
    if v is None:
        return "-"
    if m == "length gain":
        return f"{v:+.1%}"
    spec = ".1f" if m.startswith("length") else ".3f"
    return format(v, ("+" if sign else "") + spec)


def comparison_table(rows: list[dict]) -> Table:
    """:func:`compare`'s rows as a table (a fresh value outside the committed range is marked NO)."""
    return Table(
        ["experiment", "run", "seed", "metric", "committed", "committed range", "fresh", "inside"],
        [
            [
                r["experiment"],
                r["run"],
                str(r.get("seed", "")),
                r["metric"],
                fmt_metric(r["metric"], r["committed"]),
                f"{fmt_metric(r['metric'], r['range'][0])} .. {fmt_metric(r['metric'], r['range'][1])}",
                fmt_metric(r["metric"], r["fresh"]),
                "yes" if r["inside"] else "NO",
            ]
            for r in rows
        ],
    )


def command(cfg: DictConfig) -> int:
    names = list(cfg.names or HEADLINE)
    seeds = [int(x) for x in cfg.seeds]
    if not seeds:
        raise UsageError("[seeds] give at least one seed, e.g. seeds=[0]")
    out = Path(str(cfg.out) if cfg.out else tempfile.mkdtemp(prefix="rlvr-reproduce-")).resolve()
    rows: list[dict] = []
    fresh_runs: list[dict] = []
    for name in names:
        try:
            argv = EXPERIMENTS.get(name)
        except KeyError as e:
            raise UsageError(f"[names] {e.args[0]} (make results list=true lists them)") from e
        past = committed(name)
        if not past:
            raise UsageError(f"[names] {name}: results/{name} holds no runs with accuracy and length curves")
        env = {
            **os.environ,
            "RLVR_CACHE": str(out / "cache"),  # empty: nothing built on this machine is reused
            "RLVR_RESULTS": str(out / "results"),
        }
        cmd = seed_command(argv, seeds, out / "runs" / name, jobs=int(cfg.jobs))
        print(f"[reproduce] {name} seeds {seeds}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        rc = subprocess.call(cmd, env=env)
        records = {
            p.stem: json.loads(p.read_text()) for p in (out / "results" / name / "runs").glob("*.json")
        }
        fresh = by_run(records)
        if rc != 0 or not fresh:
            print(f"error: {name} seeds {seeds} failed (exit {rc}); its logs are under {out / 'runs' / name}")
            return 1
        fresh_runs += list(records.values())
        for seed in seeds:
            rows += compare(name, seed, fresh, past)
    print(comparison_table(rows).markdown())
    now, then = run_inputs(fresh_runs), committed_inputs(names)
    inputs = {k: {"fresh": v, "committed": then.get(k, [])} for k, v in now.items()}
    for k, v in inputs.items():
        same = (
            "same as committed" if set(v["fresh"]) <= set(v["committed"]) else "NOT in the committed records"
        )
        print(f"[reproduce] {k}: {', '.join(x[:12] for x in v['fresh'])} ({same})")
    summary = {"seeds": seeds, "rows": rows, "inputs": inputs}
    (out / "reproduce.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"written {out / 'reproduce.json'}")
    if cfg.record:
        print(f"written {results.write_table('reproduce', 'latest', summary)}")
    outside = [f"{r['experiment']}/{r['run']} s{r['seed']} {r['metric']}" for r in rows if not r["inside"]]
    print(
        "every fresh value lies inside the committed range"
        if not outside
        else f"outside: {', '.join(outside)}"
    )
    return 0 if not outside else 1


main = hydra_main("command", "reproduce", command)


if __name__ == "__main__":
    main()
