"""veRL's async trainer modes on this CPU (``make test-all``): each runs 3 steps of grpo from a tiny model,
and the rollout's own weight-version stamps show every step's batch was generated with weights at most
``max_off_policy_threshold - 1`` updates old; with one step's weight update dropped
(``VERL_CPU_DROP_WEIGHT_UPDATE``, the negative control) the same check fails, naming the step.
separate_async's standalone replica gets its weights through the ``cpu_gloo`` checkpoint engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_main_ppo import finite, run_verl, steps

from benchmarks.bench_verl_async import mode_args
from verl_cpu import staleness

pytestmark = pytest.mark.slow

ASYNC = ("colocate_async", "separate_async")
THRESHOLD = 2
RUN = [
    "recipe=grpo",
    "trainer.total_training_steps=3",
    "trainer.test_freq=-1",
    "trainer.save_freq=-1",
    "trainer.val_before_train=false",
    "++local.task.train_n=64",
    "++local.task.val_n=16",
    "local.eval_samples=16",
    "data.max_response_length=24",
]
DROP = "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_CPU_DROP_WEIGHT_UPDATE='1'"


@pytest.fixture(scope="module")
def model(tiny_checkpoint) -> Path:
    return tiny_checkpoint(spec=(32, 2, 4, 2, 64, 256), tokenizer="byte")


def _run(mode: str, model: Path, run_dir: Path, *extra: str) -> list[staleness.Step]:
    args = [*RUN, f"actor_rollout_ref.model.path={model}", f"run_dir={run_dir}", *mode_args(mode, THRESHOLD)]
    p = run_verl([*args, *extra], run_dir.parent / "cache", timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    return staleness.read(run_dir)


@pytest.mark.parametrize("mode", ASYNC)
def test_an_async_mode_runs_three_steps_within_its_staleness_bound(
    mode: str, model: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / mode
    recorded = _run(mode, model, run_dir)
    assert staleness.check(recorded, THRESHOLD, want=3) == []
    assert [s.step for s in recorded] == [1, 2, 3]
    assert max(s.worst for s in recorded) == THRESHOLD - 1  # one step off-policy: the bound is reached
    by_step = steps(run_dir)
    for s in (1, 2, 3):
        assert finite(by_step[s], "actor/pg_loss", "actor/grad_norm", "timing_s/update_weights"), by_step[s]
    log = (run_dir / "train.log").read_text()
    assert "'backend': 'cpu_gloo'" in log
    if mode == "separate_async":  # a standalone replica served the rollouts and was synced by cpu_gloo
        assert "LLMServerManager: ['cpu_rollout_server_1:0']" in log


@pytest.mark.parametrize("mode", ASYNC)
def test_a_dropped_weight_update_fails_the_staleness_check(mode: str, model: Path, tmp_path: Path) -> None:
    recorded = _run(mode, model, tmp_path / mode, DROP)
    errors = staleness.check(recorded, THRESHOLD, want=3)
    assert len(errors) == 1 and errors[0].startswith(
        "step 3: a trajectory was generated with weights 2 updates old"
    )
    assert staleness.main([str(tmp_path / mode)]) == 1


def test_the_trainer_rehearsal_runs_an_async_mode_instead_of_skipping_it(tmp_path: Path) -> None:
    """The pre-flight's whole-trainer rehearsal (``checks=[verl_trainer]``) of a GPU profile in
    separate_async: one step at world size 2 with a standalone replica, synced by ``cpu_gloo``."""
    from core.compose import compose
    from recipes.preflight.verl_trainer import rehearse

    cfg = compose(["recipe=grpo", "scale=gpu_node", *mode_args("separate_async", THRESHOLD)])
    res = rehearse(cfg, tmp_path / "sep")
    assert res["code"] == 0 and finite(res["metrics"], "actor/pg_loss", "actor/grad_norm"), res["failure"]
    assert ("actor_rollout_ref.rollout.checkpoint_engine.backend", "naive", "cpu_gloo") in res["cpu"]
