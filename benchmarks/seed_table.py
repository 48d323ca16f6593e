"""Multi-seed target runs of the local engine: recipe x seed -> held-out accuracy start/end, minutes.

Runs ``python -m recipes.run recipe=<r> engine=local rlvr.seed=<s> run_dir=<out>/<r>-s<s>`` for
every pair (``jobs`` at a time; each run uses one torch thread), reads each run's
``summary.json`` and prints a markdown table (``analysis.render``) plus whether each recipe met the
target (end >= start + 0.15 for every seed). ``control=true`` adds shuffled-reward runs
(``local.shuffle_rewards=true``) of the first recipe. Finished runs are reused (delete the
directory to redo one). A Hydra app (``conf/command/seed_table.yaml``):

    python -m benchmarks.seed_table recipes=[grpo,dapo,drgrpo,cispo,gspo] seeds=[0,1,2,3,4] jobs=2
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from omegaconf import DictConfig

from analysis.render import Table
from core.cli import hydra_main, route_argv


def run_one(recipe: str, seed: int, out: Path, extra: list[str], tag: str = "") -> dict:
    run_dir = out / f"{recipe}{tag}-s{seed}"
    summ = run_dir / "summary.json"
    if not summ.is_file():
        cmd = [
            sys.executable,
            "-m",
            "recipes.run",
            f"recipe={recipe}",
            "engine=local",
            f"rlvr.seed={seed}",
            f"run_dir={run_dir}",
            "scale=laptop",
            "local.progress=false",
            "trainer.logger=[file]",
            *extra,
        ]
        t0 = time.time()
        with open(out / f"{recipe}{tag}-s{seed}.log", "w") as log:
            rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT)
        if rc != 0 or not summ.is_file():
            return {
                "recipe": recipe + tag,
                "seed": seed,
                "error": f"exit {rc}",
                "minutes": (time.time() - t0) / 60,
            }
    s = json.loads(summ.read_text())
    s["recipe"] = recipe + tag
    return s


def command(a: DictConfig) -> int:
    out, recipes, seeds, extra = (
        Path(str(a.out)),
        list(a.recipes),
        [int(x) for x in a.seeds],
        list(a.overrides),
    )
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(r, s, extra, "") for s in seeds for r in recipes]
    if a.control:
        jobs += [(recipes[0], s, [*extra, "local.shuffle_rewards=true"], "-shuffled") for s in seeds]
    with ThreadPoolExecutor(int(a.jobs)) as ex:
        rows = list(ex.map(lambda j: run_one(j[0], j[1], out, j[2], j[3]), jobs))
    (out / "table.json").write_text(json.dumps(rows, indent=2) + "\n")
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
                f"{r['minutes']:.1f}",
                f"{r['rl_minutes']:.1f}",
                f"{r['setup_minutes']:.1f}",
                f"{r.get('cpu_minutes', float('nan')):.1f}",
            ]
        )
    print(table.markdown() + "\n")
    for rec in dict.fromkeys(r["recipe"] for r in rows):
        rs = [r for r in rows if r["recipe"] == rec and "error" not in r]
        met = sum(r["end_acc"] >= r["start_acc"] + 0.15 for r in rs)
        print(f"{rec}: {met}/{len([r for r in rows if r['recipe'] == rec])} seeds gained >= 15 points")
    return 0


main = hydra_main("command", "seed_table", command)


if __name__ == "__main__":
    route_argv("command", "seed_table")  # keys that are not the command's own are overrides of every run
    main()
