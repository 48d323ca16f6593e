"""Multi-seed target runs of the local engine: recipe x seed -> held-out accuracy start/end, minutes.

Runs ``python -m recipes.run recipe=<r> engine=local rlvr.seed=<s> run_dir=<out>/<r>-s<s>`` for
every pair (``--jobs`` at a time; each run uses one torch thread), reads each run's
``summary.json`` and prints a markdown table plus whether each recipe met the target (end >= start
+ 0.15 for every seed). ``--control`` adds shuffled-reward runs (``local.shuffle_rewards=true``)
of the first recipe. Finished runs are reused (delete the directory to redo one).

    python -m benchmarks.seed_table --recipes grpo dapo drgrpo cispo gspo --seeds 0 1 2 3 4 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


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
            "++local.progress=false",
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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recipes", nargs="+", default=["grpo", "dapo", "drgrpo", "cispo", "gspo"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("runs/seed_table"))
    ap.add_argument(
        "--control", action="store_true", help="also run shuffled-reward controls of the first recipe"
    )
    ap.add_argument("extra", nargs="*", help="extra Hydra overrides for every run")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    # cold starts first (one per seed, shared by every recipe), so parallel runs do not race on them
    jobs = [(r, s, a.extra, "") for s in a.seeds for r in a.recipes]
    if a.control:
        jobs += [(a.recipes[0], s, [*a.extra, "++local.shuffle_rewards=true"], "-shuffled") for s in a.seeds]
    with ThreadPoolExecutor(a.jobs) as ex:
        rows = list(ex.map(lambda j: run_one(j[0], j[1], a.out, j[2], j[3]), jobs))
    (a.out / "table.json").write_text(json.dumps(rows, indent=2) + "\n")
    print(
        "| recipe | seed | start | end | gain | minutes (wall) | RL minutes | setup minutes | CPU minutes |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(rows, key=lambda x: (x["recipe"], x["seed"])):
        if "error" in r:
            print(f"| {r['recipe']} | {r['seed']} | - | - | - | {r['minutes']:.1f} | error: {r['error']} | |")
            continue
        print(
            f"| {r['recipe']} | {r['seed']} | {r['start_acc']:.3f} | {r['end_acc']:.3f} | "
            f"{r['end_acc'] - r['start_acc']:+.3f} | {r['minutes']:.1f} | {r['rl_minutes']:.1f} | "
            f"{r['setup_minutes']:.1f} | {r.get('cpu_minutes', float('nan')):.1f} |"
        )
    print()
    for rec in dict.fromkeys(r["recipe"] for r in rows):
        rs = [r for r in rows if r["recipe"] == rec and "error" not in r]
        met = sum(r["end_acc"] >= r["start_acc"] + 0.15 for r in rs)
        print(f"{rec}: {met}/{len([r for r in rows if r['recipe'] == rec])} seeds gained >= 15 points")


if __name__ == "__main__":
    main()
