"""The real model's start accuracy per candidate task, before any RL: where does it start?

Issue 47 item 3 asks for RL on the task where SmolLM2-135M-Instruct starts between 5% and 60%
(``band``), measured first. ``python -m experiments.real_model_start`` (``make results
NAME=real_model_start``) composes ``recipe=grpo scale=laptop_smollm2 dataset=<candidate>`` for every
candidate, writes its task files as a run would (:func:`recipes.local.data.ensure_task_files`, the
run cache) and runs ``make eval`` (:mod:`analysis.evaluate`, the local engine's sampler, the model's
chat template) on the held-out prompts a run evaluates on (the first ``local.eval_samples`` rows) at
the runs' sampling temperature and response length, ``n`` samples each: mean@1 (``pass@1``), pass@k,
the mean reply length and the verifier's account of the replies
(:func:`experiments.real_model_paths.verifier_report`). Recorded in
``results/<results>/latest.json``; ``docs/real_model.md`` renders it.
Does not pick the task (the experiment's registered command does, from this record) and does not
run RL.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import results
from core.cli import hydra_main
from experiments.real_model_paths import run_cmd, verifier_report


def held_out(dataset: str) -> tuple[Path, int, dict[str, Any]]:
    """The held-out parquet a ``scale=laptop_smollm2 dataset=<dataset>`` run evaluates on (written to
    the run cache when missing), how many of its rows the run reads, and the task's generator spec."""
    from core.compose import compose  # the run's own config
    from recipes.local.data import ensure_task_files  # the run's own task files (torch-free)

    cfg = compose(["recipe=grpo", "scale=laptop_smollm2", f"dataset={dataset}"])
    ensure_task_files(cfg)
    task = OmegaConf.to_container(cfg.local.task, resolve=True)
    limit = min(int(cfg.local.eval_samples), int(cfg.local.task.val_n))
    return Path(str(cfg.data.val_files)).expanduser(), limit, task


def measure(c: DictConfig, a: DictConfig, work: Path) -> dict[str, Any]:
    """One candidate: ``make eval`` on its held-out prompts; what it measured and how long it took."""
    data, limit, task = held_out(str(c.dataset))
    out = work / str(c.dataset)
    cmd = [sys.executable, "-m", "analysis.evaluate", "model=smollm2_135m", f"data={data}", f"limit={limit}"]
    cmd += [f"n={c.n}", f"k=[{','.join(map(str, c.k))}]", f"temperature={a.temperature}"]
    cmd += [f"max_tokens={a.max_tokens}", f"sampler={a.sampler}", f"out={out}"]
    rc, secs = run_cmd(cmd, {**os.environ, "PYTHONUNBUFFERED": "1"}, out.with_suffix(".log"))
    if rc != 0:
        raise RuntimeError(f"[{c.dataset}] make eval failed (exit {rc}); its log: {out.with_suffix('.log')}")
    ov = json.loads((out / "result.json").read_text())["overall"]
    mean1 = float(ov["pass"]["1"]["mean"])
    lo, hi = (float(x) for x in a.band)
    return {
        "dataset": str(c.dataset),
        "task": task,
        "prompts": limit,
        "n": int(c.n),
        "pass@k": {k: v["mean"] for k, v in ov["pass"].items()},
        "pass@1_ci": [ov["pass"]["1"]["lo"], ov["pass"]["1"]["hi"]],
        "verifier": verifier_report(out / "samples.jsonl"),
        "in_band": lo <= mean1 <= hi,
        "command": " ".join(cmd[2:]),
        "seconds": secs,
    }


def command(a: DictConfig) -> int:
    work = Path(str(a.work)).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for c in a.candidates:
        row = measure(c, a, work)
        rows.append(row)
        print(
            f"[real_model_start] {row['dataset']}: mean@1 {row['pass@k']['1']:.3f} over {row['prompts']} "
            f"prompts x {row['n']} ({'in' if row['in_band'] else 'outside'} the band {list(a.band)}), "
            f"{row['seconds']:.0f} s",
            flush=True,
        )
    if a.results:
        settings = OmegaConf.to_container(a, resolve=True)
        print(
            f"recorded {results.write_table(str(a.results), 'latest', {'rows': rows, 'settings': settings})}"
        )
    return 0


main = hydra_main("command", "real_model_start", command)


if __name__ == "__main__":
    main()
