"""veRL's trainer on this CPU, the long checks (``make test-all``): every recipe at its laptop profile
from an empty cache, world size 2, a resume, a kill -9 and its resume, the weight-sync control, and the
pre-flight's whole-trainer rehearsal catching what veRL raises after start-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_main_ppo import ROOT, SMALL, finite, run_verl, steps

pytestmark = pytest.mark.slow

RECIPES = sorted(p.stem for p in (ROOT / "conf" / "recipe").glob("*.yaml"))
TWO = ["trainer.total_training_steps=2", "trainer.test_freq=2", "trainer.save_freq=2"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One empty cache for the module: the first run builds the base model, the cold start, the teacher."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("recipe", RECIPES)
def test_every_recipe_runs_two_steps_on_verls_trainer(recipe: str, cache: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / recipe
    reset = ["rlvr.ref_reset_steps=1"] if recipe in ("r1_zero", "r1_reasoning") else []
    p = run_verl([f"recipe={recipe}", *TWO, *reset, f"run_dir={run_dir}"], cache, timeout=3600)
    assert p.returncode == 0, p.stderr[-4000:]
    by_step = steps(run_dir)
    need = ["actor/pg_loss", "actor/grad_norm", "critic/score/mean"]
    if recipe == "orz_ppo":
        need.append("critic/vf_loss")
    for s in (1, 2):
        assert finite(by_step[s], *need), (recipe, s, by_step.get(s))
    if reset:  # two segments: the policy merged by verl.model_merger became the second's model and reference
        assert (run_dir / "ref_reset" / "step_1" / "config.json").is_file()
        assert (run_dir / "launch.sh").read_text().count("verl.trainer.main_ppo") == 2


def test_world_size_two_then_a_resume_continues_at_step_three(cache: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "w2"
    common = ["recipe=grpo", "trainer.n_gpus_per_node=2", f"run_dir={run_dir}"]
    p = run_verl([*common, *TWO], cache, timeout=3600)
    assert p.returncode == 0, p.stderr[-4000:]
    ckpt = run_dir / "checkpoints" / "global_step_2" / "actor"
    assert {f.name for f in ckpt.glob("model_world_size_2_rank_*.pt")} == {
        "model_world_size_2_rank_0.pt",
        "model_world_size_2_rank_1.pt",
    }
    more = ["trainer.total_training_steps=3", "trainer.test_freq=3", "trainer.save_freq=3"]
    p = run_verl([*common, *more], cache, timeout=3600)
    assert p.returncode == 0, p.stderr[-4000:]
    assert "Resuming from" in (run_dir / "train.log").read_text()
    by_step = steps(run_dir)
    assert finite(by_step[3], "actor/pg_loss", "actor/grad_norm") and sorted(by_step)[-1] == 3
    assert len(list((run_dir / "metrics.d").glob("*.jsonl"))) == 2  # both invocations' files, merged


def test_a_kill_9_mid_run_then_the_same_command_resumes_from_the_last_checkpoint(
    tiny_checkpoint, tmp_path: Path
) -> None:
    from recipes.supervise import launched, run_key

    model = tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")
    run_dir = tmp_path / "killed"
    args = ["engine=verl", "recipe=grpo", f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}"]
    args += [a for a in SMALL if not a.startswith("trainer.")]
    args += ["trainer.total_training_steps=6", "trainer.save_freq=2", "trainer.test_freq=6"]
    env = {**os.environ, "RLVR_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "recipes.run", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 900
    while not (run_dir / "checkpoints" / "global_step_2").is_dir() and time.time() < deadline:
        time.sleep(1)
    assert (run_dir / "checkpoints" / "global_step_2").is_dir(), "no checkpoint within 15 min"
    os.kill(proc.pid, signal.SIGKILL)  # the launcher only: its trainer keeps running, as after a kill -9
    proc.wait()
    assert launched(run_key(run_dir)), "the killed launcher left nothing running (nothing to test)"
    p = subprocess.run(
        [sys.executable, "-m", "recipes.run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert p.returncode == 0, p.stderr[-4000:]
    assert "earlier, killed launch" in p.stderr  # what the killed launch left was stopped first
    log = (run_dir / "train.log").read_text()
    assert "Resuming from" in log
    by_step = steps(run_dir)
    assert sorted(s for s in by_step if "actor/pg_loss" in by_step[s])[-1] == 6
    assert not launched(run_key(run_dir))


def test_the_rollout_samples_with_the_actors_weights_only_when_they_are_pushed(
    tiny_checkpoint, tmp_path: Path
) -> None:
    """The negative control of the weight sync (verl_cpu.rollout.SKIP_SYNC): with the weights dropped, the
    rollout's log-probs leave the actor's recomputed ones; with them pushed, they agree."""
    model = tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")
    diff = {}
    for name, extra in (
        ("synced", []),
        ("dropped", ["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_CPU_SKIP_WEIGHT_SYNC='1'"]),
    ):
        run_dir = tmp_path / name
        args = ["recipe=grpo", f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}", *SMALL]
        args += ["actor_rollout_ref.actor.optim.lr=1e-2", "actor_rollout_ref.actor.optim.lr_warmup_steps=0"]
        # a coin per response: the random model solves nothing, and all-equal rewards would not move it
        # (and the pre-flight's golds check rightly refuses such a reward: skipped here)
        args += [
            "reward.custom_reward_function.path=pkg://recipes.preflight.rehearsal_reward",
            "preflight=false",
        ]
        p = run_verl([*args, *extra], tmp_path / "cache", timeout=1800)
        assert p.returncode == 0, p.stderr[-4000:]
        diff[name] = steps(run_dir)[2]["training/rollout_probs_diff_max"]
    assert diff["synced"] < 1e-4, diff
    assert diff["dropped"] > 100 * diff["synced"] and diff["dropped"] > 1e-3, diff


def test_the_trainer_rehearsal_raises_what_veRL_raises_after_start_up(tmp_path: Path) -> None:
    """A token budget below one sequence passes composition (the validation rule is bypassed here) and
    fails in veRL's worker; the rehearsal reports veRL's own assertion."""
    from core.compose import compose
    from recipes.preflight.verl_trainer import rehearse

    cfg = compose(["recipe=dapo", "scale=gpu_node"])
    good = rehearse(cfg, tmp_path / "good")
    assert good["code"] == 0 and finite(good["metrics"], "actor/pg_loss", "actor/grad_norm"), good["failure"]
    bad = compose(["recipe=dapo", "scale=gpu_node", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1024"])
    res = rehearse(bad, tmp_path / "bad")
    assert res["code"] != 0 and "max_token_len must be greater than the sequence length" in res["failure"]
    from recipes.supervise import launched, run_key

    assert not launched(run_key(Path(res["run_dir"]))), "a run that died in Ray left processes behind"
