"""Pre-flight check ``verl_trainer``: one step of the run's config *shape* through veRL's own ``main_ppo`` on CPU.

:func:`check_verl_trainer` takes the composed config (typically ``scale=gpu_node``) and runs it for
one step on veRL's whole trainer -- Ray, the worker groups, the agent loop and the CPU rollout
backend (:mod:`verl_cpu`), the reward loop, old/ref log-probs, advantages, the actor (and critic)
update, the weight sync -- so what veRL raises after start-up (a batch that does not divide, a
token budget below a sequence, a loss or KL setting its workers refuse, DAPO's group filter, the
critic's shapes) is raised on a laptop. What it keeps and what it changes (:func:`shape`):

- kept: every algorithmic key (loss, clip, aggregation, KL, entropy, advantage estimator, dynamic
  sampling, reward and its shaping), ``rollout.n`` (up to 16), updates per rollout (train batch /
  mini-batch, for the actor and the critic), dynamic batching, micro-batch sizes (capped at the
  samples one rank gets) and the token budgets, scaled with the lengths;
- changed: the model (a tiny Qwen2 built here with a ChatML byte tokenizer: the recipe's own
  checkpoint is too large for a CPU or not on disk), the data (generated chain sums in veRL's
  schema), the reward function (a deterministic coin, :mod:`recipes.preflight.rehearsal_reward`: the
  random model solves nothing, and DAPO's filter would wait forever for a group with varied
  rewards; the reward manager and its overlong penalty stay the recipe's; with a reward model on,
  ``recipes.learned_reward`` stays and the reward model is an ORM built on the tiny model, served
  by the CPU backend, :mod:`verl_cpu.reward_model`), the lengths (prompt and response capped at
  :data:`PROMPT` and :data:`RESPONSE` tokens;
  each budget x its Ulysses size x the same factor, rounded down, so veRL's budget assert fires iff
  it would at full length), the batch (``world`` ranks, :data:`MAX_WORLD` at most, one prompt per
  rank per mini-batch), one step, no validation or checkpoint, and the CPU changes of
  :mod:`recipes.launch_cpu`, each listed in the finding.

Not rehearsed on a CPU (the finding names each that the config uses): vLLM/SGLang generation,
Ulysses sequence parallelism, tensor-parallel rollouts, bf16 numerics,
several nodes, GPU memory (the ``memory`` check estimates it).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from recipes.preflight.context import Context, sel
from recipes.preflight.verl_cpu import sp_size
from recipes.preflight.verl_engine import BUDGET_KEYS
from recipes.validate.models import LEARNED_FN

#: Longest prompt and response of the rehearsal, in tokens (byte tokenizer: a chain sum's chat prompt is ~40).
PROMPT, RESPONSE = 48, 32
#: Most trainer ranks the rehearsal starts (2 cores).
MAX_WORLD = 2
#: Largest rollout group the rehearsal keeps.
MAX_N = 16
#: Seconds the rehearsal may take before it is stopped.
TIMEOUT_S = 900.0
A, R, F, C = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref", "critic"


class _Changed:
    """A copy of a config and the (key, before, after) of every key :meth:`put` changes. Unresolved:
    what veRL derives from a changed key (the rollout's lengths from the data's) follows it."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
        self.changes: list[tuple[str, Any, Any]] = []

    def put(self, key: str, value: Any) -> None:
        before = OmegaConf.select(self.cfg, key, default=None)
        if before != value:
            with open_dict(self.cfg):
                OmegaConf.update(self.cfg, key, value, force_add=True, merge=False)
            self.changes.append((key, before, value))


def _budgets(cfg: DictConfig, out: _Changed) -> None:
    """Every token budget x its Ulysses size x the lengths' factor, rounded down (see module)."""
    total = int(cfg.data.max_prompt_length) + int(cfg.data.max_response_length)
    rehearsed = min(total, PROMPT + RESPONSE)
    roles = [(BUDGET_KEYS["actor"], A), (BUDGET_KEYS["old"], A), (BUDGET_KEYS["ref"], F)]
    if sel(cfg, "algorithm.adv_estimator") == "gae":
        roles += [(f"{C}.ppo_max_token_len_per_gpu", C), (f"{C}.forward_max_token_len_per_gpu", C)]
    for key, role in roles:
        budget = sel(cfg, key)
        if budget is None:
            continue
        sp = (
            int(sel(cfg, f"{C}.fsdp.ulysses_sequence_parallel_size") or 1)
            if role == C
            else sp_size(sel(cfg, role))
        )
        out.put(key, int(budget) * sp * rehearsed // total)


def _batch(cfg: DictConfig, out: _Changed) -> None:
    """``world`` ranks, the rollout group, the updates per rollout, micro-batches within a rank's share."""
    world = min(
        MAX_WORLD,
        max(1, int(sel(cfg, "trainer.n_gpus_per_node") or 1) * int(sel(cfg, "trainer.nnodes") or 1)),
    )
    n = min(int(sel(cfg, f"{R}.n") or 1), MAX_N)
    train = int(cfg.data.train_batch_size)
    out.put(f"{R}.n", n)
    new_train = None
    for mini_key in (f"{A}.ppo_mini_batch_size", f"{C}.ppo_mini_batch_size"):
        mini = sel(cfg, mini_key)
        if mini is not None:
            updates = max(1, train // int(mini))
            new_train = new_train or updates * world
            out.put(mini_key, max(world, new_train // updates))
    new_train = new_train or world
    gen = sel(cfg, "data.gen_batch_size")
    if gen is not None and int(gen) != train:
        out.put("data.gen_batch_size", max(new_train, new_train * int(gen) // train))
    out.put("data.train_batch_size", new_train)
    per_rank = n * int(sel(out.cfg, f"{A}.ppo_mini_batch_size") or new_train) // world
    for key, cap in (
        (f"{A}.ppo_micro_batch_size_per_gpu", per_rank),
        (f"{C}.ppo_micro_batch_size_per_gpu", per_rank),
        (f"{R}.log_prob_micro_batch_size_per_gpu", new_train * n // world),
        (f"{F}.log_prob_micro_batch_size_per_gpu", new_train * n // world),
    ):
        micro = sel(cfg, key)
        if micro is not None and int(micro) > cap:
            out.put(key, cap)
    out.put("trainer.n_gpus_per_node", world)
    out.put("trainer.nnodes", 1)


def shape(
    cfg: DictConfig, model: Path, data: Path, run_dir: Path
) -> tuple[DictConfig, list[tuple[str, Any, Any]]]:
    """The rehearsal's config: ``cfg`` at the rehearsal's size (see module); returns it and the
    (key, before, after) of every key changed for size (the CPU changes come on top)."""
    out = _Changed(cfg)
    _budgets(cfg, out)
    P, Rl = int(cfg.data.max_prompt_length), int(cfg.data.max_response_length)
    out.put("data.max_prompt_length", min(P, PROMPT))
    out.put("data.max_response_length", min(Rl, RESPONSE))
    _batch(cfg, out)
    rm = bool(sel(cfg, "reward.reward_model.enable"))
    for key, value in (
        ("actor_rollout_ref.model.path", str(model)),
        ("critic.model.path", str(model)),
        ("data.train_files", str(data / "train.parquet")),
        ("data.val_files", str(data / "val.parquet")),
        ("trainer.total_training_steps", 1),
        ("trainer.val_before_train", False),
        ("trainer.test_freq", -1),
        ("trainer.save_freq", -1),
        ("trainer.logger", ["console", "file"]),
        ("trainer.resume_mode", "disable"),
        ("trainer.default_local_dir", str(run_dir / "checkpoints")),
        ("trainer.rollout_data_dir", None),
        ("trainer.validation_data_dir", None),
        ("rlvr.ref_reset_steps", None),
        ("run_dir", str(run_dir)),
        (
            "reward.custom_reward_function.path",
            LEARNED_FN if rm else "pkg://recipes.preflight.rehearsal_reward",
        ),
        ("reward.custom_reward_function.name", "compute_score"),
    ):
        out.put(key, value)
    if sel(out.cfg, "distillation.enabled"):
        out.put("distillation.teacher_models.teacher_model.model_path", str(model))
    if rm:  # the reward model scores, served by the CPU backend
        out.put("reward.reward_model.model_path", str(reward_model_path(model)))
    if sel(cfg, "reward.reward_kwargs.max_resp_len") is not None:  # DAPO's overlong buffer, scaled alike
        out.put("reward.reward_kwargs.max_resp_len", min(Rl, RESPONSE))
        buffer = int(sel(cfg, "reward.reward_kwargs.overlong_buffer_cfg.len") or 0)
        out.put("reward.reward_kwargs.overlong_buffer_cfg.len", max(1, buffer * min(Rl, RESPONSE) // Rl))
    return out.cfg, out.changes


def reward_model_path(model: Path) -> Path:
    """Where the rehearsal builds its reward model: an ORM on the rehearsal's model (its vocabulary)."""
    return model.parent / "orm"


def not_rehearsed(cfg: DictConfig) -> list[str]:
    """What the config uses that a CPU cannot rehearse (named in the finding)."""
    out = [f"{sel(cfg, f'{R}.name')} generation (the CPU backend samples instead)"]
    sps = {s: sp_size(sel(cfg, s)) for s in (A, F)}
    if any(v > 1 for v in sps.values()):
        out.append(f"Ulysses sequence parallelism (size {max(sps.values())})")
    if int(sel(cfg, f"{R}.tensor_model_parallel_size") or 1) > 1:
        out.append(f"tensor-parallel rollout (size {sel(cfg, f'{R}.tensor_model_parallel_size')})")
    if int(sel(cfg, "trainer.nnodes") or 1) > 1:
        out.append(f"{sel(cfg, 'trainer.nnodes')} nodes")
    return out + ["bf16 numerics", "GPU memory (the memory check estimates it)"]


def rehearse(cfg: DictConfig, work: Path) -> dict[str, Any]:
    """Build the tiny model and data in ``work``, shape the config, apply the CPU changes, run one
    step of ``main_ppo``; returns what happened (code, seconds, step-1 metrics, the changes)."""
    from core import model as models  # torch: the rehearsal only
    from recipes import launch_cpu, supervise  # psutil, subprocesses: the rehearsal only
    from recipes.gpu_smoke import read_metrics, write_data  # the task generators: the rehearsal only
    from recipes.launch_verl import prepare  # the rehearsal only

    work.mkdir(parents=True, exist_ok=True)
    model = work / "model"
    if not (model / "config.json").is_file():
        models.build_checkpoint(model, models.ModelSpec(64, 2, 4, 2, 128, 256), "byte", seed=0)
    if sel(cfg, "reward.reward_model.enable") and not (reward_model_path(model) / "rlvr_rm.json").is_file():
        from core import reward_model as rmod  # transformers: a rehearsal with a reward model only

        rmod.save(rmod.build(model, "orm"), reward_model_path(model))
    data = write_data(work / "data")
    run_dir = work / "run"
    shaped, sized = shape(cfg, model, data, run_dir)
    cpu = launch_cpu.apply(shaped)
    prepare(shaped, run_dir)
    for stale in (run_dir / "metrics.d").glob("*.jsonl"):
        stale.unlink()
    (run_dir / "train.log").unlink(missing_ok=True)
    t0 = time.time()
    code = supervise.launch(run_dir, timeout=TIMEOUT_S, echo=False)
    metrics = (
        read_metrics(run_dir / "metrics.jsonl").get(1, {}) if (run_dir / "metrics.jsonl").is_file() else {}
    )
    return {
        "code": code,
        "seconds": time.time() - t0,
        "metrics": metrics,
        "sized": sized,
        "cpu": [(k, a, b) for k, a, b, _ in cpu],
        "failure": supervise.failure(run_dir, code) if code else "",
        "run_dir": str(run_dir),
    }


#: Metrics step 1 must hold, finite (the critic's only with GAE).
REQUIRED = ("actor/pg_loss", "actor/grad_norm", "critic/score/mean")


def check_verl_trainer(ctx: Context) -> dict[str, float]:
    """Pre-flight check ``verl_trainer`` (opt-in): :func:`rehearse` in ``<run_dir>/verl_trainer``,
    then a ``fail`` naming the error veRL raised, or an ``info`` with the step's numbers, every
    change and what was not rehearsed; a ``skip`` when veRL's trainer cannot run the config on a CPU."""
    from recipes.launch_cpu import refusal  # the rehearsal only

    work = (
        Path(str(ctx.settings.get("run_dir") or sel(ctx.cfg, "run_dir") or "outputs/preflight"))
        / "verl_trainer"
    )
    # what the rehearsal runs (one machine, at most MAX_WORLD ranks), not the GPU run's node count
    refused = refusal(shape(ctx.cfg, work / "model", work / "data", work / "run")[0])
    if refused:
        key = refused.split("]")[0].lstrip("[")
        ctx.report.add("verl_trainer", "skip", key, f"not rehearsed on this CPU: {refused}")
        return {"rehearsed": 0.0}
    res = rehearse(ctx.cfg, work.resolve())
    ctx.report.facts["verl_trainer"] = {k: v for k, v in res.items() if k != "metrics"} | {
        "metrics": {k: res["metrics"].get(k) for k in (*REQUIRED, "critic/vf_loss", "timing_s/step")}
    }
    need = [*REQUIRED, *(["critic/vf_loss"] if sel(ctx.cfg, "algorithm.adv_estimator") == "gae" else [])]
    bad = [
        k
        for k in need
        if not isinstance(res["metrics"].get(k), (int, float)) or not math.isfinite(res["metrics"][k])
    ]
    where = "actor_rollout_ref"
    if res["code"] or bad:
        why = res["failure"] or f"step 1 logged no finite {bad}"
        ctx.report.add(
            "verl_trainer",
            "fail",
            where,
            f"one step of this config on veRL's trainer failed: {why}",
            f"the full log is {res['run_dir']}/train.log; the config as run: {res['run_dir']}/verl_config.yaml",
        )
        return {"rehearsed": 0.0, "seconds": res["seconds"]}
    m = res["metrics"]
    lines = [
        f"one step on veRL's trainer (main_ppo, CPU backend) in {res['seconds']:.0f} s: "
        + ", ".join(f"{k}={m[k]:.4g}" for k in need)
    ]
    lines += [f"  sized for CPU: {k}: {a} -> {b}" for k, a, b in res["sized"]]
    lines += [f"  CPU change: {k}: {a} -> {b}" for k, a, b in res["cpu"]]
    lines.append("  not rehearsed on CPU: " + "; ".join(not_rehearsed(ctx.cfg)))
    ctx.report.add("verl_trainer", "info", where, "\n".join(lines))
    return {"rehearsed": 1.0, "seconds": res["seconds"]}
