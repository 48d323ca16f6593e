"""``make gpu-smoke``: veRL's own trainer, end to end, on one CUDA GPU, once per loss family.

Prepared for the first GPU; it has not yet run on one (docs/gpu_smoke.md). On one CUDA GPU with
the GPU extras installed (``make setup`` with a GPU: ``verl[vllm]==0.9.1``) it:

1. prints the versions it runs on (Python, torch, CUDA, veRL, vLLM, transformers) and the GPU;
2. exports the project's tiny base model (``model=tiny_base``: a ~1M-parameter Qwen2 pretrained
   locally, :mod:`recipes.local.pretrain`) in Hugging Face format from the run cache -- built on
   first use on the CPU (~3.5 min), never downloaded -- into ``<out>/model``;
3. writes a small veRL parquet of the task that model was trained for (``chain_sum``: 64 train,
   16 validation rows) into ``<out>/data``;
4. for each loss family of :data:`FAMILIES` (GRPO clip, DAPO's clip-higher with token-mean,
   GSPO, CISPO, Dr. GRPO) composes the family's own recipe at ``scale=gpu_node`` with the small
   overrides of :func:`overrides` (one GPU, the tiny model and data, 2 steps, small batches),
   checks that the family's defining keys survived them, validates it with the project's one
   validation layer, writes ``verl_config.yaml`` + ``launch.sh`` (:mod:`recipes.launch_verl`) and
   runs veRL's ``main_ppo`` (Ray, FSDP, vLLM rollout) with a time limit;
5. checks each run's ``metrics.jsonl`` (veRL's ``FileLogger``): every step logged, with finite
   loss (``actor/pg_loss``), entropy (``actor/entropy``) and reward (``critic/score/mean``).

Exit codes: 0 every family passed, 1 a run failed or its metrics did not check, 2 refused (no
CUDA GPU, vLLM missing, a config the validation refuses) with a one-line ``error:``.
``--dry-run`` does steps 2-4 without running anything (no GPU needed): the launch files of every
family. Not covered: multi-GPU or multi-node runs, the recipes' published model sizes and lengths,
learning anything (2 steps only check that every family's path runs and logs finite numbers).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

#: Families of the recipes' losses: name -> (recipe, what it is, the keys that define it and their values).
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "grpo": (
        "grpo",
        "GRPO clip: vanilla PPO clip 0.2, seq-mean-token-mean, KL loss to a reference",
        {
            "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",
            "actor_rollout_ref.actor.clip_ratio_high": 0.2,
            "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-mean",
            "actor_rollout_ref.actor.use_kl_loss": True,
        },
    ),
    "dapo": (
        "dapo",
        "DAPO: clip-higher 0.2/0.28 with token-mean, dynamic sampling, overlong penalty",
        {
            "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",
            "actor_rollout_ref.actor.clip_ratio_low": 0.2,
            "actor_rollout_ref.actor.clip_ratio_high": 0.28,
            "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
        },
    ),
    "gspo": (
        "gspo",
        "GSPO: sequence-level importance ratio",
        {"actor_rollout_ref.actor.policy_loss.loss_mode": "gspo"},
    ),
    "cispo": (
        "cispo",
        "CISPO: clipped importance-sampling weights, token-mean",
        {
            "actor_rollout_ref.actor.policy_loss.loss_mode": "cispo",
            "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
        },
    ),
    "drgrpo": (
        "drgrpo",
        "Dr. GRPO: seq-mean-token-sum-norm, advantages not divided by the group std",
        {
            "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-sum-norm",
            "algorithm.norm_adv_by_std_in_grpo": False,
        },
    ),
}

#: The metrics each step must log, finite: what they are in veRL 0.9.1's trainer.
REQUIRED = {"actor/pg_loss": "loss", "actor/entropy": "entropy", "critic/score/mean": "reward"}

#: Rows of the smoke data (chain sums, the tiny base model's task).
TRAIN_ROWS, VAL_ROWS = 64, 16


@dataclass
class Result:
    """One family's run: exit code, seconds, the problems its metrics showed, the last step's values."""

    family: str
    returncode: int
    seconds: float
    problems: list[str]
    last: dict[str, float]

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.problems


class Refused(RuntimeError):
    """This machine or config cannot run the smoke test (exit 2, one ``error:`` line)."""


def overrides(family: str, model: Path, data: Path, run_dir: Path, steps: int = 2) -> list[str]:
    """The composition of one family: its recipe at ``scale=gpu_node`` + the smoke's small overrides.

    Only sizes and places change: one GPU (no tensor or sequence parallelism), the tiny model and
    its lengths (32 + 96 tokens, the ``laptop_base`` profile's), 8 prompts x 4 samples per step,
    ``steps`` steps, no validation or checkpoints, metrics to ``<run_dir>/metrics.jsonl``. The
    token budgets stay the profile's derived ones (they follow the lengths)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown loss family {family!r}; available: {', '.join(FAMILIES)}")
    recipe = FAMILIES[family][0]
    a = "actor_rollout_ref"
    return [
        f"recipe={recipe}",
        "engine=verl",
        "scale=gpu_node",
        "trainer.n_gpus_per_node=1",
        "trainer.nnodes=1",
        f"trainer.total_training_steps={steps}",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        "trainer.logger=[console,file]",
        "trainer.project_name=gpu_smoke",
        f"trainer.experiment_name={family}",
        f"trainer.default_local_dir={run_dir / 'checkpoints'}",
        f"{a}.model.path={model}",
        f"data.train_files={data / 'train.parquet'}",
        f"data.val_files={data / 'val.parquet'}",
        "data.max_prompt_length=32",
        "data.max_response_length=96",
        "data.train_batch_size=8",
        f"{a}.rollout.n=4",
        f"{a}.actor.ppo_mini_batch_size=4",
        f"{a}.actor.ulysses_sequence_parallel_size=1",
        f"{a}.rollout.tensor_model_parallel_size=1",
        f"{a}.rollout.gpu_memory_utilization=0.3",
        "rlvr.overlong_buffer_len=24",
        f"run_dir={run_dir}",
    ]


def compose_family(family: str, model: Path, data: Path, run_dir: Path, steps: int = 2) -> Any:
    """The family's composed, validated config (``recipes.run.prepare_config`` + ``validate``).

    Raises ``ValueError`` naming the key when the overrides changed a key that defines the family,
    and the validation layer's ``ConfigError`` when the config would not launch."""
    from omegaconf import OmegaConf  # lazy, with the rest: --help and the no-GPU refusal stay fast

    from recipes.run import prepare_config  # ~5 s (Hydra, veRL's config tree): composing only
    from recipes.validate import validate  # ~5 s (veRL): composing only

    cfg, engine, _, _ = prepare_config(overrides(family, model, data, run_dir, steps), changes=False)
    for key, want in FAMILIES[family][2].items():
        got = OmegaConf.select(cfg, key)
        if got != want:
            raise ValueError(f"[{key}] {got!r} after the smoke overrides, the {family} family needs {want!r}")
    validate(cfg, engine)
    return cfg


def read_metrics(path: Path) -> dict[int, dict[str, Any]]:
    """veRL ``FileLogger`` lines (``{"step": N, "data": {...}}``) as step -> metrics (later lines win)."""
    steps: dict[int, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            steps.setdefault(int(row["step"]), {}).update(row.get("data") or {})
    return steps


def check_metrics(path: Path, steps: int) -> tuple[list[str], dict[str, float]]:
    """Problems of a run's ``metrics.jsonl`` (missing file or step, a required metric absent or not
    finite) and the last step's required values. veRL's logger writes with orjson, which turns NaN
    and infinities into ``null``: they read back as None and are reported as not finite."""
    if not path.is_file():
        return [f"{path}: no metrics file (veRL's file logger wrote nothing)"], {}
    by_step = read_metrics(path)
    problems: list[str] = []
    for step in range(1, steps + 1):
        data = by_step.get(step)
        if data is None:
            problems.append(f"{path}: step {step} not logged (logged: {sorted(by_step)})")
            continue
        for key, what in REQUIRED.items():
            value = data.get(key)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                problems.append(f"{path}: step {step} {what} {key} = {value!r}, not a finite number")
    last = by_step.get(max(by_step)) if by_step else {}
    return problems, {k: float(last[k]) for k in REQUIRED if isinstance(last.get(k), (int, float))}


def versions() -> dict[str, str]:
    """Versions this run uses, and the GPU (name, memory) when CUDA answers."""
    out = {"python": platform.python_version()}
    for pkg in ("torch", "verl", "vllm", "transformers", "ray"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    import torch  # ~3 s: only reporting versions needs it

    out["cuda"] = str(torch.version.cuda)
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        out["gpu"] = (
            f"{props.name}, {props.total_memory / 2**30:.0f} GiB ({torch.cuda.device_count()} visible)"
        )
    return out


def require_gpu() -> None:
    """Raise :class:`Refused` without a CUDA GPU or without vLLM."""
    from recipes.launch_verl import cuda_gpus  # its torch import is the cost of asking for a GPU

    if cuda_gpus() == 0:
        raise Refused(
            "make gpu-smoke needs one CUDA GPU and none is visible (torch.cuda.is_available() is False); "
            "run it on a GPU machine after `make setup` (which installs verl[vllm]==0.9.1 there)"
        )
    try:
        metadata.version("vllm")
    except metadata.PackageNotFoundError as e:
        raise Refused(
            "vLLM is not installed: the GPU extras are missing (fix: `make setup GPU=1` installs verl[vllm]==0.9.1)"
        ) from e


def export_base_model(out: Path) -> Path:
    """The tiny base model (built into the run cache on first use, on the CPU) copied to ``out``."""
    from verl.trainer.ppo.reward import get_custom_reward_fn  # ~5 s (veRL): exporting the model only

    from core.compose import compose  # Hydra: exporting the model only
    from recipes.local.data import ensure_task_files  # the task files the base model's probe reads
    from recipes.local.pretrain import ensure_base_model  # torch + the local engine: exporting only

    cfg = compose(["recipe=grpo", "scale=laptop_base"])
    ensure_task_files(cfg)  # the probe samples held-out prompts: they must exist in the cache first
    src = ensure_base_model(cfg, get_custom_reward_fn(cfg), lambda m: print(m, flush=True))
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out)
    return out


def write_data(out: Path, seed: int = 0) -> Path:
    """Small chain-sum train/validation parquet files in veRL's schema."""
    from data_pipelines.io import write_rows  # pyarrow: writing data only
    from data_pipelines.tasks import TASKS  # the task generators: writing data only

    gen = TASKS.get("chain_sum")
    out.mkdir(parents=True, exist_ok=True)
    write_rows(gen(n=TRAIN_ROWS, seed=seed, split="train"), out / "train.parquet")
    write_rows(gen(n=VAL_ROWS, seed=seed, split="test"), out / "val.parquet")
    return out


def run_family(cfg: Any, run_dir: Path, steps: int, timeout: float) -> Result:
    """Write the family's launch files, run ``launch.sh`` (veRL's ``main_ppo``) as ``make run`` does
    (:func:`recipes.supervise.launch`), check its metrics."""
    from recipes.launch_verl import prepare  # launching only
    from recipes.supervise import launch  # psutil, subprocesses: launching only

    prepare(cfg, run_dir)
    family = str(cfg.trainer.experiment_name)
    t0 = time.time()
    (run_dir / "train.log").unlink(missing_ok=True)
    code = launch(run_dir, timeout=timeout, echo=False)
    problems, last = check_metrics(run_dir / "metrics.jsonl", steps)
    if code:
        problems.insert(
            0, f"main_ppo exited {code}{' (time limit)' if code == 124 else ''}; log: {run_dir / 'train.log'}"
        )
    return Result(family, code, time.time() - t0, problems, last)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m recipes.gpu_smoke", description=__doc__.split("\n")[0])
    p.add_argument(
        "--families", default=",".join(FAMILIES), help=f"comma-separated subset of {','.join(FAMILIES)}"
    )
    p.add_argument("--out", default="outputs/gpu_smoke", help="directory for the model, data and runs")
    p.add_argument("--steps", type=int, default=2, help="training steps per family")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per family's run")
    p.add_argument("--dry-run", action="store_true", help="compose, validate and write launch files only")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    out = Path(args.out).resolve()
    try:
        unknown = [f for f in families if f not in FAMILIES]
        if unknown:
            raise Refused(f"unknown loss families {unknown}; available: {', '.join(FAMILIES)}")
        if not args.dry_run:
            require_gpu()
        for k, v in versions().items():
            print(f"[gpu-smoke] {k}: {v}", flush=True)
        model = export_base_model(out / "model")
        data = write_data(out / "data")
        cfgs = {}
        for fam in families:  # every family composes and validates before the first GPU second is spent
            try:
                cfgs[fam] = compose_family(fam, model, data, out / fam, args.steps)
            except ValueError as e:  # ConfigError is a ValueError
                raise Refused(f"{fam}: {str(e).splitlines()[0]}") from e
    except Refused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.dry_run:
        from recipes.launch_verl import prepare  # launching only

        for fam, cfg in cfgs.items():
            prepare(cfg, out / fam)
            print(f"[gpu-smoke] {fam}: {FAMILIES[fam][1]}; launch files in {out / fam}")
        return 0
    results = []
    for fam, cfg in cfgs.items():
        print(f"[gpu-smoke] {fam}: {FAMILIES[fam][1]} ...", flush=True)
        res = run_family(cfg, out / fam, args.steps, args.timeout)
        results.append(res)
        vals = ", ".join(f"{REQUIRED[k]} {v:.4g}" for k, v in res.last.items())
        print(
            f"[gpu-smoke] {fam}: {'PASS' if res.ok else 'FAIL'} in {res.seconds:.0f} s; last step {vals}",
            flush=True,
        )
        for prob in res.problems:
            print(f"    {prob}", flush=True)
    total = sum(r.seconds for r in results)
    print(f"[gpu-smoke] {sum(r.ok for r in results)}/{len(results)} families passed in {total:.0f} s")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
