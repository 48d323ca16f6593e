"""``make reproduce``: re-run seed 0 of each headline experiment from an empty cache and compare.

For every experiment in ``names`` (default :data:`HEADLINE`), runs its registered command
(:data:`EXPERIMENTS`) with ``seeds=[<seed>]`` and a fresh ``RLVR_CACHE`` and ``RLVR_RESULTS``
under ``out`` (so nothing cached on this machine is reused and ``results/`` is not touched), then
prints, per metric (held-out accuracy and mean held-out response length at the start and end, and
their gains), the committed value of that seed, the committed seeds' range and the fresh value, and
whether the fresh value lies inside the range. Exit code 1 when a fresh value falls outside.

Does not decide what an experiment measures (its command does); the comparison is written to
``<out>/reproduce.json``, and with ``record=true`` also to ``results/reproduce/latest.json`` (with
the commit, command and machine, and the base-model weight hashes each fresh run built), which
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
from experiments.registry import EXPERIMENTS

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


def seed_command(argv: list[str], seed: int, runs: Path) -> list[str]:
    """``argv`` with its seeds replaced by ``seed`` and its runs written under ``runs``.

    >>> seed_command(["py", "-m", "x", "seeds=[0,1]", "jobs=2", "out=runs/a", "k=v"], 0, Path("/t"))
    ['py', '-m', 'x', 'k=v', 'seeds=[0]', 'out=/t', 'jobs=1']
    """
    drop = ("seeds=", "out=", "jobs=")
    return [a for a in argv if not a.startswith(drop)] + [f"seeds=[{seed}]", f"out={runs}", "jobs=1"]


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
                    "metric": m,
                    "committed": seeds.get(seed, {}).get(m),
                    "range": [min(vals), max(vals)],
                    "seeds": sorted(seeds),
                    "fresh": v,
                    "inside": v is not None and min(vals) <= v <= max(vals),
                }
            )
    return rows


def weights(folder: Path) -> set[str]:
    """The weight hashes of the base models an experiment folder's ``base_model.json`` names (the
    table :mod:`experiments.r1_zero_curves` writes: ``{"models": [{..., "weights_sha256": ...}]}``);
    empty when the experiment built no base model."""
    path = folder / "base_model.json"
    if not path.is_file():
        return set()
    return {m["weights_sha256"] for m in results.read_json(path)["models"] if m.get("weights_sha256")}


def _fmt(m: str, v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:+.1%}" if m == "length gain" else (f"{v:.1f}" if m.startswith("length") else f"{v:.3f}")


def comparison_table(rows: list[dict], seed: int) -> Table:
    """:func:`compare`'s rows as a table (a fresh value outside the committed range is marked NO)."""
    return Table(
        ["experiment", "run", "metric", f"committed s{seed}", "committed range", "fresh", "inside"],
        [
            [
                r["experiment"],
                r["run"],
                r["metric"],
                _fmt(r["metric"], r["committed"]),
                f"{_fmt(r['metric'], r['range'][0])} .. {_fmt(r['metric'], r['range'][1])}",
                _fmt(r["metric"], r["fresh"]),
                "yes" if r["inside"] else "NO",
            ]
            for r in rows
        ],
    )


def command(cfg: DictConfig) -> int:
    names = list(cfg.names or HEADLINE)
    out = Path(str(cfg.out) if cfg.out else tempfile.mkdtemp(prefix="rlvr-reproduce-")).resolve()
    rows: list[dict] = []
    built: dict[str, dict[str, Any]] = {}
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
        cmd = seed_command(argv, int(cfg.seed), out / "runs" / name)
        print(f"[reproduce] {name} seed {cfg.seed}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
        rc = subprocess.call(cmd, env=env)
        fresh = by_run(
            {p.stem: json.loads(p.read_text()) for p in (out / "results" / name / "runs").glob("*.json")}
        )
        if rc != 0 or not fresh:
            print(
                f"error: {name} seed {cfg.seed} failed (exit {rc}); its logs are under {out / 'runs' / name}"
            )
            return 1
        rows += compare(name, int(cfg.seed), fresh, past)
        old_w, new_w = weights(results.results_dir() / name), weights(out / "results" / name)
        if new_w:
            same = "not recorded then" if not old_w else ("same" if old_w == new_w else "DIFFERENT")
            print(f"[reproduce] {name}: base model weights sha256 {sorted(new_w)[0][:16]}… ({same})")
        built[name] = {"fresh": sorted(new_w), "committed": sorted(old_w)}
    table = comparison_table(rows, int(cfg.seed))
    print(table.markdown())
    summary = {"seed": int(cfg.seed), "rows": rows, "base_model_weights": built}
    (out / "reproduce.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"written {out / 'reproduce.json'}")
    if cfg.record:
        print(f"written {results.write_table('reproduce', 'latest', summary)}")
    outside = [f"{r['experiment']}/{r['run']} {r['metric']}" for r in rows if not r["inside"]]
    print(
        "every fresh value lies inside the committed range"
        if not outside
        else f"outside: {', '.join(outside)}"
    )
    return 0 if not outside else 1


main = hydra_main("command", "reproduce", command)


if __name__ == "__main__":
    main()
