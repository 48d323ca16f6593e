"""Synthetic run directories in the run-dir contract, for tests, benchmarks and demos.

``write_run`` writes ``run.json``, ``config.yaml``, ``metrics.jsonl`` in veRL ``FileLogger``
format (``{"step": N, "data": {...}}``) and veRL ``_write_generations`` sample dumps under
``rollouts/`` and ``validation/``. Curves are simple parametric shapes plus seeded noise, so a
test can plant a pathology (entropy collapse, length rising with flat accuracy, false negatives)
and check that the diagnosis finds it. It does not simulate training.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml


def write_run(
    path: str | Path,
    *,
    steps: int = 50,
    seed: int = 0,
    recipe: str = "grpo",
    overrides: list[str] | None = None,
    acc_gain: float = 0.3,
    acc_start: float = 0.3,
    entropy_end: float = 0.7,
    length_growth: float = 0.2,
    dump_every: int = 10,
    group_size: int = 4,
    prompts: int = 8,
    drop_keys: tuple[str, ...] = (),
    false_negatives: int = 0,
    with_logprobs: bool = False,
    uid: bool = True,
) -> Path:
    """Write a synthetic run; curves: acc ``acc_start -> acc_start+acc_gain``, entropy ``1 -> entropy_end``.

    ``false_negatives`` zero-scored rows per dump carry a correct answer (a planted verifier bug).
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    overrides = list(overrides or []) + [f"recipe={recipe}", f"rlvr.seed={seed}"]
    _manifest_and_config(path, recipe, seed, overrides, prompts, group_size)
    t = np.linspace(0, 1, steps)
    acc = np.clip(acc_start + acc_gain * (1 - np.exp(-4 * t)) + rng.normal(0, 0.03, steps), 0, 1)
    ent = 1.0 + (entropy_end - 1.0) * t + rng.normal(0, 0.01, steps)
    length = 30 * (1 + length_growth * t) + rng.normal(0, 0.5, steps)
    lines = []
    for i in range(steps):
        data = {
            "critic/score/mean": acc[i],
            "critic/rewards/mean": acc[i],
            "response_length/mean": length[i],
            "actor/entropy": ent[i],
            "actor/pg_clipfrac": 0.02 + 0.01 * rng.random(),
            "actor/ppo_kl": 1e-3 * rng.random(),
            "actor/kl_loss": 1e-3 * t[i],
            "rlvr/unfiltered_score/mean": acc[i] - 0.05,
            "rlvr/zero_var_group_frac": 0.3 + 0.1 * rng.random(),
            "rlvr/gen_batches": 1.0,
            "training/global_step": i + 1,
        }
        if i % 10 == 0:
            data["val-core/arithmetic/acc/mean@4"] = acc[i] + 0.02
        lines.append(
            json.dumps({"step": i + 1, "data": {k: v for k, v in data.items() if k not in drop_keys}})
        )
    (path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    dumps = {"prompts": prompts, "group_size": group_size, "length_growth": length_growth, "uid": uid}
    _sample_dumps(path, rng, acc, steps, dump_every, false_negatives, with_logprobs, **dumps)
    return path


def _manifest_and_config(
    path: Path, recipe: str, seed: int, overrides: list[str], prompts: int, group_size: int
) -> None:
    """``run.json`` and a ``config.yaml`` that carries the overrides."""
    manifest = {
        "recipe": recipe,
        "engine": "local",
        "scale": "laptop",
        "config_path": "conf/config.yaml",
        "git_commit": "0" * 40,
        "git_dirty": False,
        "versions": {"verl": "0.9.1", "torch": "2.13.0"},
        "seed": seed,
        "data_hashes": {"data/arithmetic/train.parquet": "ab" * 32},
        "overrides": overrides,
        "started": "2026-01-01T00:00:00Z",
    }
    (path / "run.json").write_text(json.dumps(manifest, indent=1))
    config: dict[str, Any] = {
        "rlvr": {"recipe": recipe, "scale": "laptop", "seed": seed},
        "data": {"train_batch_size": prompts, "max_response_length": 48},
        "actor_rollout_ref": {"rollout": {"n": group_size}},
    }
    for item in overrides:
        key, val = item.split("=", 1)
        node = config
        *parents, leaf = key.lstrip("+").split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(val)
    (path / "config.yaml").write_text(yaml.safe_dump(config))


def _sample_dumps(
    path: Path,
    rng: np.random.Generator,
    acc: np.ndarray,
    steps: int,
    dump_every: int,
    false_negatives: int,
    with_logprobs: bool,
    *,
    prompts: int,
    group_size: int,
    length_growth: float,
    uid: bool,
) -> None:
    """``rollouts/<step>.jsonl`` and ``validation/<step>.jsonl`` rows graded with the accuracy curve."""
    for kind in ("rollouts", "validation"):
        (path / kind).mkdir(exist_ok=True)
        for step in range(0 if kind == "validation" else 1, steps + 1, dump_every):
            p_acc = acc[min(step, steps - 1)]
            rows = []
            for q in range(prompts):
                a, b = int(rng.integers(10, 99)), int(rng.integers(10, 99))
                for _ in range(group_size):
                    ok = bool(rng.random() < p_acc)
                    ans = a + b if ok else a + b + int(rng.integers(1, 9))
                    n_tok = int(
                        20 + 10 * length_growth * step / steps + (0 if ok else 5) + rng.integers(0, 4)
                    )
                    row = {
                        "input": f"{a}+{b}=",
                        "output": f"<think>{a}+{b}</think><answer>{ans}</answer>",
                        "gts": str(a + b),
                        "score": float(ok),
                        "step": step,
                        "acc": ok,
                        "pred": str(ans),
                        "format": 1.0,
                        "response_length": n_tok,
                    }
                    if uid:
                        row["uid"] = f"{step}-{q}"
                    if with_logprobs:
                        lp = -1.0 - rng.random()
                        row["rollout_log_prob"], row["old_log_prob"] = lp, lp + rng.normal(0, 0.005)
                    rows.append(row)
            for r in rows[:false_negatives]:
                r.update(
                    score=0.0, acc=False, pred=None, output=f"<think>add</think><answer>{r['gts']}</answer>"
                )
            (path / kind / f"{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_sweep(root: str | Path, axis: str, values: list[str], seeds: int = 2, **kw: Any) -> Path:
    """A Hydra-multirun-like tree: ``<root>/<i>/`` per job with ``.hydra/overrides.yaml``.

    Arm i gets an accuracy gain of ``0.2 + 0.15 * i`` (so later arms are better).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / "multirun.yaml").write_text(
        yaml.safe_dump({"hydra": {"sweeper": {"params": {axis: ",".join(values)}}}})
    )
    job = 0
    for vi, val in enumerate(values):
        for s in range(seeds):
            d = write_run(
                root / str(job), seed=s, overrides=[f"{axis}={val}"], acc_gain=0.2 + 0.15 * vi, **kw
            )
            (d / ".hydra").mkdir(exist_ok=True)
            (d / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump([f"{axis}={val}", f"rlvr.seed={s}"]))
            job += 1
    return root
