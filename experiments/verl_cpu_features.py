"""veRL's features beyond the plain sync loop on this CPU, each run from one empty cache with its check's number.

``python -m experiments.verl_cpu_features`` (``make results NAME=verl_cpu_features``) points
``RLVR_CACHE`` at an empty ``<work>/cache`` and runs, one ``python -m recipes.run engine=verl`` each,
as a user types it, grpo at its laptop profile (the first run builds the laptop base model):

- ``lora_merged``, ``lora_unmerged``: LoRA rank 8 (alpha 16), ``model.lora.merge`` true / false, with a
  coin-flip reward and a learning rate that moves the adapter (as ``tests/verl_cpu/test_lora_slow.py``);
  check: the largest ``training/rollout_probs_diff_max`` over the steps below 1e-4; control: the same
  run with the weight sync skipped (``VERL_CPU_SKIP_WEIGHT_SYNC``) must exceed 1e-3;
- ``lora_resume``: the merged run again with one more step (it resumes) and ``verl.model_merger`` on
  its last checkpoint: the merger must write the adapter (``lora_adapter/adapter_config.json``);
- ``reward_model``: ``reward_model=orm``, an ORM built on the base model (``core.reward_model.build``);
  check: the largest |trained score - offline score| (:func:`verl_cpu.rm_check.offline_scores`) <= 1e-5;
- ``colocate_async``, ``separate_async``: the V1 trainer mode for ``async_steps`` steps; check: the
  largest staleness the rollout's own stamps show (:mod:`verl_cpu.staleness`) <= the bound - 1;
  control: one weight update dropped (``VERL_CPU_DROP_WEIGHT_UPDATE``) must fail that check;
- ``offload_dynbsz``: world size 2, FSDP parameter and optimizer offload, ``use_dynamic_bsz``;
- ``opd_lora``: ``recipe=opd`` with its source's LoRA rank 128 (``conf/recipe/opd.yaml``);
- ``lora_smollm2`` (not in the default arms): grpo with merged LoRA on SmolLM2-135M (``make real-model``),
  4 prompts a step.

Per arm: the command, exit code, steps, the median ``timing_s/step`` of steps 2.., the check's name,
largest difference, threshold and verdict, whether every logged value is finite, the load average
before and after (the machine is shared). Recorded after every arm in
``results/verl_cpu_features/latest.json`` (``core.results``), rendered by ``make docs`` into
docs/engines.md (``verl-cpu-features``). Not covered: learning (2-3 steps), a GPU, Ulysses (refused).
"""

from __future__ import annotations

import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from core import results
from core.cli import hydra_main
from experiments.verl_cpu_recipes import read_steps
from verl_cpu import staleness

DIFF = "training/rollout_probs_diff_max"
#: the sync check's bound (the rollout's log-probs are the actor's) and the control's floor
SYNC_TOL, CONTROL_FLOOR, SCORE_TOL = 1e-4, 1e-3, 1e-5
#: a coin per response and a learning rate that moves a LoRA adapter off its zero init in one step
#: (no pre-flight: its golds check rightly refuses such a reward), as the slow LoRA test
COIN = [
    "reward.custom_reward_function.path=pkg://recipes.preflight.rehearsal_reward",
    "preflight=false",
    "actor_rollout_ref.actor.optim.lr=5e-2",
    "actor_rollout_ref.actor.optim.lr_warmup_steps=0",
]
LORA = ["actor_rollout_ref.model.lora_rank=8", "actor_rollout_ref.model.lora_alpha=16"]
SKIP = "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_CPU_SKIP_WEIGHT_SYNC='1'"
DROP = "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_CPU_DROP_WEIGHT_UPDATE='1'"
#: opd's source setting (conf/recipe/opd.yaml, the lora_rank deviation's note)
OPD_LORA = ["actor_rollout_ref.model.lora_rank=128", "actor_rollout_ref.actor.optim.lr=1e-4"]


class Ctx:
    """What every arm shares: the work folder, the environment, the settings."""

    def __init__(self, a: DictConfig, work: Path) -> None:
        self.work, self.logs = work, work / "logs"
        self.env = {**os.environ, "RLVR_CACHE": str(work / "cache")}
        self.env.pop("VERL_PLATFORM", None)
        self.steps, self.async_steps, self.bound = int(a.steps), int(a.async_steps), int(a.threshold)
        self.eval = [f"local.eval_samples={int(a.eval_samples)}"]

    def short(self, steps: int) -> list[str]:
        return [
            f"trainer.total_training_steps={steps}",
            f"trainer.test_freq={steps}",
            f"trainer.save_freq={steps}",
            *self.eval,
        ]


def launch(ctx: Ctx, name: str, args: list[str], run_dir: Path) -> dict[str, Any]:
    """One ``recipes.run engine=verl`` run: command, exit, wall, steps, s/step, finiteness, load."""
    cmd = [sys.executable, "-m", "recipes.run", "engine=verl", *args, f"run_dir={run_dir}"]
    load0 = os.getloadavg()[0]
    t0 = time.time()
    with open(ctx.logs / f"{name}.log", "w") as f:
        code = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT, env=ctx.env)
    wall = time.time() - t0
    text = (ctx.logs / f"{name}.log").read_text(errors="replace")
    by_step = read_steps(run_dir / "metrics.jsonl")
    trained = sorted(s for s, v in by_step.items() if "timing_s/step" in v)
    per_step = [by_step[s]["timing_s/step"] for s in trained]
    return {
        "command": " ".join(["python -m recipes.run engine=verl", *args, f"run_dir={run_dir.name}"]),
        "code": code,
        "wall_s": round(wall, 1),
        "steps": trained,
        "s_per_step": round(statistics.median(per_step[1:] or per_step), 3) if per_step else None,
        "all_finite": bool(trained)
        and all(
            isinstance(v, (int, float)) and math.isfinite(v)
            for s in trained
            for v in by_step[s].values()
            if isinstance(v, (int, float)) or v is None
        ),
        "load": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "error": next((ln for ln in text.splitlines() if ln.startswith("error:")), ""),
        "_by_step": by_step,
    }


def verdict(rec: dict[str, Any], check: str, largest: float | None, threshold: float, ok: bool) -> None:
    """Write the check into the arm's record; the arm passes when it ran, is finite and the check holds."""
    rec.update(check=check, largest=largest, threshold=threshold)
    rec["passed"] = bool(rec["code"] == 0 and rec["all_finite"] and ok and largest is not None)


def _per_step(rec: dict[str, Any]) -> dict[str, Any]:
    return {str(s): rec["_by_step"][s].get(DIFF) for s in rec["steps"]}


def _diff_max(rec: dict[str, Any], steps: list[int] | None = None) -> float | None:
    vals = [rec["_by_step"][s].get(DIFF) for s in (steps or rec["steps"])]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return max(vals) if vals else None


def sync_arm(ctx: Ctx, name: str, args: list[str], control: str | None) -> dict[str, Any]:
    """A run whose check is the rollout's log-probs against the actor's at every step (+ its control)."""
    rec = launch(ctx, name, args, ctx.work / name)
    worst = _diff_max(rec)
    ok = worst is not None and worst < SYNC_TOL and len(rec["steps"]) == ctx.steps
    verdict(rec, f"max over steps of {DIFF}", worst, SYNC_TOL, ok)
    rec["per_step"] = _per_step(rec)
    if control is not None:
        ctl = launch(ctx, f"{name}_control", [*args, control], ctx.work / f"{name}_control")
        value = _diff_max(ctl)
        rec["control"] = {
            "command": ctl["command"],
            "code": ctl["code"],
            "largest": value,
            "per_step": _per_step(ctl),
            "detected": bool(
                ctl["code"] == 0 and value is not None and value > max(CONTROL_FLOOR, 100 * (worst or 0))
            ),
            "what": "the weight sync skipped (VERL_CPU_SKIP_WEIGHT_SYNC): must exceed 1e-3 and 100x the synced run",
        }
    return rec


def lora_arm(ctx: Ctx, merge: bool) -> dict[str, Any]:
    name = "lora_merged" if merge else "lora_unmerged"
    args = ["recipe=grpo", *LORA, f"actor_rollout_ref.model.lora.merge={merge}", *COIN, *ctx.short(ctx.steps)]
    return sync_arm(ctx, name, args, SKIP)


def lora_resume_arm(ctx: Ctx) -> dict[str, Any]:
    """The merged LoRA run again with one more step in its directory, then ``verl.model_merger``."""
    run_dir, more = ctx.work / "lora_merged", ctx.steps + 1
    args = ["recipe=grpo", *LORA, "actor_rollout_ref.model.lora.merge=True", *COIN, *ctx.short(more)]
    rec = launch(ctx, "lora_resume", args, run_dir)
    rec["command"] = rec["command"].replace("run_dir=lora_merged", "run_dir=lora_merged (lora_merged's)")
    train_log = run_dir / "train.log"
    rec["resumed"] = train_log.is_file() and "Resuming from" in train_log.read_text(errors="replace")
    rec["steps"] = [s for s in rec["steps"] if s > ctx.steps]  # the file keeps the first run's steps too
    rec["s_per_step"] = rec["_by_step"][more]["timing_s/step"] if more in rec["steps"] else None
    target = ctx.work / "lora_merged_hf"
    ckpt = run_dir / "checkpoints" / f"global_step_{more}" / "actor"
    merge = ["python", "-m", "verl.model_merger", "merge", "--backend", "fsdp"]
    merge += ["--local_dir", str(ckpt), "--target_dir", str(target)]
    with open(ctx.logs / "lora_resume_merger.log", "w") as f:
        code = subprocess.call([sys.executable, *merge[1:]], stdout=f, stderr=subprocess.STDOUT, env=ctx.env)
    rec["merger"] = {
        "command": " ".join(merge).replace(str(ctx.work) + "/", ""),
        "code": code,
        "adapter_written": (target / "lora_adapter" / "adapter_config.json").is_file(),
    }
    worst = _diff_max(rec, [more]) if more in rec["steps"] else None
    ok = rec["resumed"] and rec["steps"] == [more] and worst is not None and worst < SYNC_TOL
    verdict(
        rec, f"{DIFF} at the resumed step {more}", worst, SYNC_TOL, ok and rec["merger"]["adapter_written"]
    )
    return rec


def base_model(ctx: Ctx) -> Path:
    """grpo's laptop base model in the run cache (its ``rlvr.laptop_scale``; built here when no arm has)."""
    code = (
        "from core.compose import compose; from recipes.local import ensure_inputs; "
        "scale = compose(['recipe=grpo']).rlvr.laptop_scale; "
        "print(ensure_inputs(compose(['recipe=grpo', f'scale={scale}'])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=ctx.env, capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def reward_model_arm(ctx: Ctx) -> dict[str, Any]:
    """grpo on ``reward_model=orm`` (an ORM on the base model, as the slow test) and the score check."""
    from core import reward_model as rmod  # torch, transformers: this arm only
    from verl_cpu.rm_check import offline_scores  # torch, pandas: this arm only

    orm = rmod.save(rmod.build(base_model(ctx), "orm", seed=1), ctx.work / "orm")
    run_dir = ctx.work / "reward_model"
    args = ["recipe=grpo", "reward_model=orm", f"reward.reward_model.model_path={orm}", *ctx.short(ctx.steps)]
    rec = launch(ctx, "reward_model", [*args, f"trainer.rollout_data_dir={run_dir / 'rollouts'}"], run_dir)
    rec["command"] = rec["command"].replace(str(ctx.work) + "/", "")
    pairs = offline_scores(run_dir, orm) if rec["code"] == 0 else []
    worst = max((abs(a - b) for a, b in pairs), default=None)
    rec["samples"] = len(pairs)
    rec["score_spread"] = (max(a for a, _ in pairs) - min(a for a, _ in pairs)) if pairs else None
    verdict(
        rec, "max |trained score - offline score|", worst, SCORE_TOL, worst is not None and worst <= SCORE_TOL
    )
    return rec


def async_arm(ctx: Ctx, mode: str) -> dict[str, Any]:
    """A V1 trainer mode for ``async_steps`` steps: staleness from the rollout's stamps, and its control."""
    args = ["recipe=grpo", *staleness.MODES[mode], f"{staleness.THRESHOLD_KEY}={ctx.bound}"]
    args += [
        f"trainer.total_training_steps={ctx.async_steps}",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
    ]
    args += ["trainer.val_before_train=false"]
    rec = launch(ctx, mode, args, ctx.work / mode)
    seen = staleness.read(ctx.work / mode) if rec["steps"] else []
    errors = staleness.check(seen, ctx.bound, want=ctx.async_steps)
    worst = max((s.worst for s in seen), default=None)
    rec["staleness"] = [s.worst for s in seen]
    verdict(rec, f"max staleness (updates) vs {staleness.THRESHOLD_KEY}-1", worst, ctx.bound - 1, not errors)
    ctl = launch(ctx, f"{mode}_control", [*args, DROP], ctx.work / f"{mode}_control")
    ctl_seen = staleness.read(ctx.work / f"{mode}_control") if ctl["steps"] else []
    ctl_errors = staleness.check(ctl_seen, ctx.bound, want=ctx.async_steps)
    rec["control"] = {
        "command": ctl["command"],
        "code": ctl["code"],
        "largest": max((s.worst for s in ctl_seen), default=None),
        "detected": bool(ctl["code"] == 0 and ctl_errors),
        "what": "one weight update dropped (VERL_CPU_DROP_WEIGHT_UPDATE): the staleness check must fail",
        "error": ctl_errors[0] if ctl_errors else "",
    }
    return rec


def offload_arm(ctx: Ctx) -> dict[str, Any]:
    """World size 2 with FSDP param + optimizer offload and dynamic batch sizes (two sequences' budget)."""
    budget = (
        "192"  # tokens per rank per micro-batch: two laptop sequences (32 + 64), the gpu_node budget scaled
    )
    dyn = ["actor.use_dynamic_bsz=True", f"actor.ppo_max_token_len_per_gpu={budget}"]
    dyn += ["rollout.log_prob_use_dynamic_bsz=True", f"rollout.log_prob_max_token_len_per_gpu={budget}"]
    dyn += ["ref.log_prob_use_dynamic_bsz=True", f"ref.log_prob_max_token_len_per_gpu={budget}"]
    off = ["actor.fsdp_config.param_offload=True", "actor.fsdp_config.optimizer_offload=True"]
    off += ["ref.fsdp_config.param_offload=True"]
    keys = [f"actor_rollout_ref.{k}" for k in (*off, *dyn)]
    args = ["recipe=grpo", "trainer.n_gpus_per_node=2", *keys, *ctx.short(ctx.steps)]
    return sync_arm(ctx, "offload_dynbsz", args, None)


def opd_arm(ctx: Ctx) -> dict[str, Any]:
    return sync_arm(ctx, "opd_lora", ["recipe=opd", *OPD_LORA, *ctx.short(ctx.steps)], None)


def smollm2_arm(ctx: Ctx) -> dict[str, Any]:
    """grpo with merged LoRA on SmolLM2-135M (its laptop profile at 4 prompts a step, 16 responses: its
    64 take ~12 min a step here): the sync check."""
    # the model converted into the arm's own empty cache, as `make real-model` does
    subprocess.run([sys.executable, "-m", "core.real_model"], env=ctx.env, check=True, capture_output=True)
    args = ["recipe=grpo", "scale=laptop_smollm2", "data.train_batch_size=4", *LORA]
    args += ["actor_rollout_ref.model.lora.merge=True"]
    return sync_arm(ctx, "lora_smollm2", [*args, *COIN, *ctx.short(ctx.steps)], None)


ARMS: dict[str, Callable[[Ctx], dict[str, Any]]] = {
    "lora_merged": lambda ctx: lora_arm(ctx, True),
    "lora_unmerged": lambda ctx: lora_arm(ctx, False),
    "lora_resume": lora_resume_arm,
    "reward_model": reward_model_arm,
    "colocate_async": lambda ctx: async_arm(ctx, "colocate_async"),
    "separate_async": lambda ctx: async_arm(ctx, "separate_async"),
    "offload_dynbsz": offload_arm,
    "opd_lora": opd_arm,
    "lora_smollm2": smollm2_arm,
}

DESIGN = {
    "claim": "Each veRL feature beyond the plain sync loop (LoRA merged/unmerged with resume and the model "
    "merger, a model-based reward, the two async trainer modes, offload with dynamic batch sizes at world "
    "size 2, opd with its LoRA rank) runs on veRL's trainer on this CPU from an empty cache, with finite "
    "metrics and its check passing; each negative control trips its check.",
    "checks": {
        "lora/offload/opd": f"max over steps of {DIFF} < {SYNC_TOL}",
        "lora control": f"the sync skipped: {DIFF} > {CONTROL_FLOOR} and 100x the synced run",
        "reward_model": f"max |trained score - offline score| <= {SCORE_TOL}",
        "async": "max staleness <= threshold - 1 at every step; control (a dropped update) fails it",
    },
}


def command(a: DictConfig) -> int:
    experiment = str(a.results)
    arms = [str(x) for x in a.arms]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        print(f"error: [arms] unknown arm(s) {unknown} (known: {', '.join(ARMS)})", file=sys.stderr)
        return 2
    settings = {
        "arms": arms,
        "steps": int(a.steps),
        "async_steps": int(a.async_steps),
        "threshold": int(a.threshold),
    }
    settings["eval_samples"] = int(a.eval_samples)
    results.write_experiment(experiment, design={**DESIGN, **settings})
    work = Path(str(a.work)).resolve()
    if work.exists() and bool(a.fresh):
        shutil.rmtree(work)
    (work / "logs").mkdir(parents=True, exist_ok=True)
    ctx = Ctx(a, work)
    old = results.results_dir() / experiment / "latest.json"
    rows: dict[str, Any] = {}  # this invocation's arms; with fresh=false merged into the record at each write
    for name in arms:
        try:
            rec = ARMS[name](ctx)
        except Exception as e:  # noqa: BLE001 - one arm's failure is recorded, the others still run
            rec = {"command": name, "code": -1, "wall_s": 0.0, "steps": [], "passed": False, "error": repr(e)}
        rec.pop("_by_step", None)
        rows[name] = rec
        print(
            f"[verl_cpu_features] {name}: exit {rec['code']}, {rec['wall_s']} s, passed {rec['passed']}",
            flush=True,
        )
        # re-read before writing: another invocation (fresh=false) may have recorded its arms meanwhile
        kept = {} if bool(a.fresh) or not old.is_file() else _load_rows(old)
        merged = {**kept, **rows}
        merged = {k: merged[k] for k in sorted(merged, key=list(ARMS).index)}
        results.write_table(
            experiment, "latest", {"settings": {**settings, "arms": list(merged)}, "runs": merged}
        )
    print(f"recorded {results.results_dir() / experiment / 'latest.json'}")
    return 0 if all(r["passed"] and r.get("control", {}).get("detected", True) for r in rows.values()) else 1


def _load_rows(path: Path) -> dict[str, Any]:
    import json  # the keep-going path only

    return dict(json.loads(path.read_text()).get("runs") or {})


main = hydra_main("command", "verl_cpu_features", command)


if __name__ == "__main__":
    main()
