"""Multi-seed target runs of the local engine: recipe x seed -> held-out accuracy start/end, minutes.

Runs ``python -m recipes.run recipe=<r> engine=local scale=<profile> rlvr.seed=<s>
run_dir=<out>/<code>/<r>-s<s>-<setting>`` (:func:`run_dir_of`) for every pair, at each recipe's own laptop profile
(``rlvr.laptop_scale``: ``laptop_base`` for recipes that start from a base model in their papers) unless
``scale=`` names one for all (``jobs`` at a time; each run uses one torch thread), prints a markdown table
(``analysis.render``) plus whether each recipe met the target (end >= start + 0.15 for every seed),
and records every finished run in ``results/<results>/`` (``core.results``; the README's seed table
renders from it with ``make docs``). ``control=true`` adds shuffled-reward runs
(``local.shuffle_rewards=true``) of the first recipe.

A finished run is reused only when it was made by the same code and setting: run directories live
under ``<out>/<code>/``, where ``<code>`` is a hash of the project's sources and configs
(``core.fingerprint.source_hash``), so a code change runs everything again instead of mixing
versions in one table, and each run's folder name ends in a hash of its scale and extra overrides,
so experiments that share ``out`` (e.g. the R1-Zero curves and the overtime-pay runs) never reuse
each other's runs. A Hydra app (``conf/command/seed_table.yaml``):

    python -m experiments.seed_table recipes=[grpo,dapo,drgrpo,cispo,gspo] seeds=[0,1,2,3,4] jobs=2
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import DictConfig

from analysis.render import Table
from analysis.results_io import run_record
from core import results
from core.cli import hydra_main, load, route_argv
from core.fingerprint import source_hash
from recipes.compose import compose, laptop_scale
from recipes.launch_local import local_command

CODE = ("core", "recipes", "rewards", "data_pipelines", "conf")


def run_dir_of(
    out: Path,
    recipe: str,
    seed: int,
    extra: list[str],
    tag: str = "",
    scale: str = "laptop",
    engine: str = "local",
) -> Path:
    """``<out>/<recipe><tag>-s<seed>-<setting>``: ``<setting>`` hashes the scale and the extra overrides
    (and the engine, when not ``local``), so a finished run is reused only by a call that would have
    made the same run (``out`` already holds the code's hash).

    >>> a = run_dir_of(Path("o"), "r1_zero", 1, [])
    >>> a == run_dir_of(Path("o"), "r1_zero", 1, []), a == run_dir_of(Path("o"), "r1_zero", 1, ["x=1"])
    (True, False)
    >>> a.name.startswith("r1_zero-s1-"), a == run_dir_of(Path("o"), "r1_zero", 1, [], scale="laptop_base")
    (True, False)
    """
    key = [scale, [str(x) for x in extra]] + ([] if engine == "local" else [engine])
    setting = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:8]
    return out / f"{recipe}{tag}-s{seed}-{setting}"


def run_one(
    recipe: str,
    seed: int,
    out: Path,
    extra: list[str],
    tag: str = "",
    scale: str = "laptop",
    engine: str = "local",
) -> dict:
    """One run at ``scale`` on ``engine`` (reused when finished), as its summary plus ``run_dir``;
    ``error`` when it failed."""
    run_dir = run_dir_of(out, recipe, seed, extra, tag, scale, engine)
    log_path, summ = run_dir.with_name(run_dir.name + ".log"), run_dir / "summary.json"
    if not summ.is_file():
        cmd = local_command(
            recipe,
            run_dir,
            f"rlvr.seed={seed}",
            "local.progress=false",
            "trainer.logger=[file]",
            *extra,
            scale=scale,
            engine=engine,
        )
        t0 = time.time()
        with open(log_path, "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        if rc != 0 or not summ.is_file():
            return {
                "recipe": recipe + tag,
                "seed": seed,
                "error": f"exit {rc}",
                "log": str(log_path),
                "minutes": (time.time() - t0) / 60,
            }
    s = json.loads(summ.read_text())
    return {**s, "recipe": recipe + tag, "run_dir": str(run_dir)}


def laptop_scales(recipes: list[str], scale: str) -> dict[str, str]:
    """The scale profile each recipe runs at: ``scale`` for all, or with ``recipe`` its own laptop profile."""
    if scale != "recipe":
        return {r: scale for r in recipes}
    return {r: laptop_scale(compose([f"recipe={r}"])) for r in recipes}


def record(experiment: str, rows: list[dict], design: dict) -> Path:
    """Write ``results/<experiment>/``: the design and one record per finished run (others removed)."""
    path = results.write_experiment(experiment, design=design)
    written = set()
    for r in rows:
        if "error" in r:
            continue
        rec = run_record(r["run_dir"])
        rec["label"] = r["recipe"]
        written.add(results.write_run(experiment, f"{r['recipe']}-s{r['seed']}", rec).name)
    for stale in (path.parent / "runs").glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    return path.parent


def results_experiment(a: DictConfig) -> str | None:
    """``results`` when given by name; with ``auto``, ``seed_table`` only if the invocation is the
    declared design (recipes, seeds, control and overrides as in the YAML), else None."""
    if not a.results:
        return None
    if a.results != "auto":
        return str(a.results)
    d = load("command", "seed_table")
    same = all(list(a[k]) == list(d[k]) for k in ("recipes", "seeds", "overrides"))
    same = same and a.control == d.control and a.scale == d.scale
    return "seed_table" if same else None


def command(a: DictConfig) -> int:
    recipes, seeds, extra = list(a.recipes), [int(x) for x in a.seeds], list(a.overrides)
    code = source_hash(CODE)
    out = Path(str(a.out)) / code
    out.mkdir(parents=True, exist_ok=True)
    scales = laptop_scales(recipes, str(a.scale))
    jobs = [(r, s, extra, "") for s in seeds for r in recipes]
    if a.control:
        jobs += [(recipes[0], s, [*extra, "local.shuffle_rewards=true"], "-shuffled") for s in seeds]
    with ThreadPoolExecutor(int(a.jobs)) as ex:
        rows = list(ex.map(lambda j: run_one(j[0], j[1], out, j[2], j[3], scale=scales[j[0]]), jobs))
    header = [
        "recipe",
        "seed",
        "start",
        "end",
        "gain",
        "minutes (wall)",
        "RL minutes",
        "setup minutes",
        "CPU minutes",
    ]
    table = Table(header, [])
    for r in sorted(rows, key=lambda x: (x["recipe"], x["seed"])):
        if "error" in r:
            table.rows.append(
                [r["recipe"], r["seed"], "-", "-", "-", f"{r['minutes']:.1f}", f"error: {r['error']}", "", ""]
            )
            continue
        table.rows.append(
            [
                r["recipe"],
                r["seed"],
                f"{r['start_acc']:.3f}",
                f"{r['end_acc']:.3f}",
                f"{r['end_acc'] - r['start_acc']:+.3f}",
            ]
            + [f"{r[k]:.1f}" for k in ("minutes", "rl_minutes", "setup_minutes")]
            + [f"{r.get('cpu_minutes', float('nan')):.1f}"]
        )
    print(table.markdown() + "\n")
    for rec in dict.fromkeys(r["recipe"] for r in rows):
        rs = [r for r in rows if r["recipe"] == rec and "error" not in r]
        met = sum(r["end_acc"] >= r["start_acc"] + 0.15 for r in rs)
        print(f"{rec}: {met}/{len([r for r in rows if r['recipe'] == rec])} seeds gained >= 15 points")
    experiment = results_experiment(a)
    if experiment:
        design = {
            "claim": str(a.claim),
            "recipes": recipes,
            "seeds": seeds,
            "control": bool(a.control),
            "scales": scales,
            "overrides": extra,
            "code": code,
        }
        print(f"recorded {record(experiment, rows, design)}")
    else:
        print(
            "not recorded in results/ (the runs differ from the declared design; to record: results=<name>)"
        )
    return 1 if any("error" in r for r in rows) else 0


main = hydra_main("command", "seed_table", command)


if __name__ == "__main__":
    route_argv("command", "seed_table")  # keys that are not the command's own are overrides of every run
    main()
