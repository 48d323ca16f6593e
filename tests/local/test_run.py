"""End-to-end runs of the local engine: smoke, resume after a kill, dynamic sampling, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.compose import compose
from recipes.local import run_local
from recipes.validate import validate

COIN = f"file://{Path(__file__).with_name('coin_reward.py')}"


pytestmark = pytest.mark.usefixtures("hydra_ctx")  # one Hydra context for the module (tests/conftest.py)


def cfg_for(*overrides: str):
    return compose(list(overrides))


def read_jsonl(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


#: one grpo run (KL loss against a reference) that the smoke test reads and the resume test reruns
#: killed: 4 steps of 4 updates, held-out evaluations at 0, 3 and 4 (the last step, though not a
#: multiple of test_freq), checkpoints at 2 and 4
GRPO = (
    "trainer.total_training_steps=4",
    "trainer.test_freq=3",
    "trainer.save_freq=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=4",
)


@pytest.fixture(scope="module")
def grpo_args(fast) -> tuple[str, ...]:
    return ("recipe=grpo", *fast, *GRPO)


@pytest.fixture(scope="module")
def grpo_full(cache_dir, grpo_args, tmp_path_factory) -> tuple[dict, Path]:
    """The shared run, once per module: (its summary, its run directory)."""
    run = tmp_path_factory.mktemp("grpo") / "full"
    return run_local(cfg_for(*grpo_args), run), run


@pytest.fixture(scope="module")
def grpo_resumed(grpo_full, grpo_args, tmp_path_factory) -> SimpleNamespace:
    """The same command killed after step 3 (checkpoint at 2) and rerun; then the finished run rerun."""
    from recipes.local import trainer

    full, full_dir = grpo_full
    killed_dir = tmp_path_factory.mktemp("grpo") / "killed"
    real = trainer.Engine.train_step

    def dies_at_3(self):
        if self.step == 2 and not getattr(self, "_killed", False):
            real(self)
            raise KeyboardInterrupt("simulated kill during step 3")
        return real(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trainer.Engine, "train_step", dies_at_3)
        try:
            run_local(cfg_for(*grpo_args), killed_dir)
            killed = False
        except KeyboardInterrupt:
            killed = True
    resumed = run_local(cfg_for(*grpo_args), killed_dir)
    # the same command on a finished run reports it and changes nothing (a resumed sweep relies on it)
    before = {p.name: p.read_bytes() for p in full_dir.iterdir() if p.is_file()}
    again = run_local(cfg_for(*grpo_args), full_dir)
    after = {p.name: p.read_bytes() for p in full_dir.iterdir() if p.is_file()}
    return SimpleNamespace(
        full=full, full_dir=full_dir, killed=killed, killed_dir=killed_dir, resumed=resumed,
        again=again, before=before, after=after,
    )  # fmt: skip


def test_a_cold_cache_leaves_the_run_where_a_warm_one_does(fast, tmp_path, monkeypatch) -> None:
    """Building the cold start in the run's own process (it seeds torch for its SFT) must not leave
    the run's random state or thread count elsewhere than loading it from the cache does."""
    import random

    import torch

    from recipes.local import build_engine

    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))
    # a 2-step cold start: what is compared is the state a build leaves, not what it learns
    cfg = cfg_for("recipe=grpo", *fast, "local.sft.max_steps=2", "local.sft.eval_every=2")

    def after_setup() -> tuple:
        torch.manual_seed(123), random.seed(123), torch.set_num_threads(2)  # a caller's own state
        _, path, _ = build_engine(cfg)
        return path, torch.get_rng_state(), random.getstate(), torch.get_num_threads()

    threads = torch.get_num_threads()
    try:
        cold = after_setup()  # builds the cold start
        assert (cold[0] / "rlvr_meta.json").is_file()
        warm = after_setup()  # loads it
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(cold[1], warm[1]) and cold[2] == warm[2]
    assert cold[3] == warm[3] == int(cfg.local.threads)


def test_smoke_grpo(grpo_full) -> None:
    """A 4-step grpo run (KL loss against a reference) writes every output, with veRL metric names."""
    out, run = grpo_full
    assert Path(out["run_dir"]) == run
    # the summary's accuracies are the held-out dumps' (step 0 and the last step), not a copy of each other
    for key, step in (("start_acc", 0), ("end_acc", 4)):
        rows = read_jsonl(run / "validation" / f"{step}.jsonl")
        assert len(rows) == 32 and out[key] == round(sum(r["acc"] for r in rows) / len(rows), 4), key
    assert out["steps"] == 4
    lines = read_jsonl(run / "metrics.jsonl")
    train = [x for x in lines if "critic/score/mean" in x["data"]]
    assert [x["step"] for x in train] == [1, 2, 3, 4]
    keys = set(train[-1]["data"])
    for k in (
        "critic/score/mean",
        "critic/rewards/mean",
        "critic/advantages/mean",
        "response_length/mean",
        "actor/entropy",
        "actor/pg_clipfrac",
        "actor/ppo_kl",
        "actor/pg_loss",
        "actor/kl_loss",
        "actor/grad_norm",
        "actor/lr",
        "train/num_gen_batches",
        "rlvr/unfiltered_score/mean",
        "rlvr/zero_variance_group_frac",
    ):
        assert k in keys, k
    assert any("val-core/arithmetic/acc/mean@1" in x["data"] for x in lines)
    # veRL's rollout-vs-training log-prob check: the sampler's and the trainer's log-probs agree
    last = train[-1]["data"]
    assert last["training/rollout_probs_diff_valid"] == 1
    assert 0.0 <= last["training/rollout_probs_diff_max"] < 1e-3
    assert last["training/rollout_actor_probs_pearson_corr"] > 0.999
    roll = read_jsonl(run / "rollouts" / "4.jsonl")
    assert len(roll) == 16 * 8  # laptop: 16 prompts x 8 responses
    assert {
        "input",
        "output",
        "gts",
        "score",
        "step",
        "acc",
        "pred",
        "format",
        "uid",
        "response_length",
    } <= set(roll[0])
    # evaluated at the start, every test_freq steps and at the last step
    assert sorted(p.name for p in (run / "validation").glob("*.jsonl")) == ["0.jsonl", "3.jsonl", "4.jsonl"]
    assert (run / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "4"
    meta = json.loads((Path(out["model"]) / "rlvr_meta.json").read_text())
    assert meta["num_params"] > 0
    # the summary names the model the run started from: its build key and weights hash
    assert out["model_key"] == {"build": meta["build"], "weights_sha256": meta["weights_sha256"]}
    assert len(out["model_key"]["weights_sha256"]) == 64


def test_checkpoint_holds_the_policy_as_an_hf_checkpoint(grpo_full) -> None:
    """Each checkpoint saves the policy as an HF checkpoint beside state.pt, and evaluating the run dir
    reads it: the trained weights, with no need for the model cache."""
    import torch

    from analysis.evaluate import resolve_model
    from core import model as models

    _, run = grpo_full
    hf = run / "checkpoints" / "global_step_4" / "huggingface"
    assert (run / "checkpoints" / "global_step_2" / "huggingface" / "config.json").is_file()
    assert resolve_model(str(run)) == (str(hf), None)
    model, tok = models.load(hf)
    state = torch.load(hf.parent / "state.pt", weights_only=False)["model"]
    saved = model.state_dict()
    assert set(saved) == set(state) and all(torch.equal(saved[k], state[k]) for k in state)
    base, _ = models.load(json.loads((run / "summary.json").read_text())["model"])
    assert any(not torch.equal(p, q) for p, q in zip(base.parameters(), model.parameters(), strict=True))
    assert tok.chat_template


def test_export_policy_copies_the_last_checkpoints_policy(grpo_full, tmp_path) -> None:
    """export_policy (the teacher's and the pipeline's rl stage's output) is the run's last saved policy."""
    from core import model as models
    from recipes.local.trainer import export_policy

    _, run = grpo_full
    out = export_policy(run, tmp_path / "out")
    hf = run / "checkpoints" / "global_step_4" / "huggingface"
    assert models.weights_sha256(out) == models.weights_sha256(hf)
    assert models.weights_sha256(out) != models.weights_sha256(
        hf.parent.parent / "global_step_2" / "huggingface"
    )
    assert models.load_tokenizer(out).chat_template
    # the same weight files as loading state.pt onto the run's model and saving that (the former export)
    models.save(
        *models.load(json.loads((run / "summary.json").read_text())["model"], hf.parent / "state.pt"),
        tmp_path / "old",
    )
    assert models.weights_sha256(tmp_path / "old") == models.weights_sha256(out)
    with pytest.raises(FileNotFoundError, match=r"no saved policy.*save_freq"):
        export_policy(tmp_path / "not_a_run", tmp_path / "out2")


def test_resume_onto_a_rebuilt_model_is_refused(grpo_full, grpo_args, tmp_path) -> None:
    """A run resumed after its model path was rebuilt stops, naming both weight hashes and the fix."""
    import shutil

    _, run = grpo_full
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    (copy / "summary.json").unlink()  # not finished: the checkpoint at step 4 would be resumed
    state = json.loads((copy / "local_state.json").read_text())
    state["model_key"] = {"build": {}, "weights_sha256": "cd" * 32}
    (copy / "local_state.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match=r"cdcdcdcdcdcd then.*rebuilt since.*resume_mode=disable"):
        run_local(cfg_for(*grpo_args), copy)


def test_resume_after_kill_continues_identically(grpo_resumed) -> None:
    """Killed after step 3 (checkpoint at 2), the rerun resumes at step 2 with the same data and samples."""
    r = grpo_resumed
    assert r.killed, "the simulated kill did not reach run_local's caller"
    assert r.resumed["steps"] == 4
    for step in (3, 4):
        a = read_jsonl(r.full_dir / "rollouts" / f"{step}.jsonl")
        b = read_jsonl(r.killed_dir / "rollouts" / f"{step}.jsonl")
        assert [(x["input"], x["output"]) for x in a] == [(x["input"], x["output"]) for x in b]
    steps = [
        x["step"] for x in read_jsonl(r.killed_dir / "metrics.jsonl") if "critic/score/mean" in x["data"]
    ]
    assert steps == [1, 2, 3, 4]  # earlier lines kept, step 3 logged once (re-done after the kill)
    assert r.resumed["end_acc"] == r.full["end_acc"] and r.resumed["start_acc"] == r.full["start_acc"]
    # the same command on a finished run reports it and changes nothing (a resumed sweep relies on it)
    assert r.again == r.full
    assert r.after == r.before


def test_dynamic_sampling_keeps_only_varied_groups(cache_dir, fast, tmp_path) -> None:
    cfg = cfg_for(
        "recipe=dapo",
        *fast,
        "trainer.total_training_steps=2",
        "trainer.test_freq=-1",
        f"reward.custom_reward_function.path={COIN}",
        "algorithm.filter_groups.max_num_gen_batches=0",
        "data.gen_batch_size=null",  # rounds of one batch (not DAPO's 3), so dropped groups force more rounds
    )
    out = run_local(cfg, tmp_path / "run")
    lines = [
        x["data"]
        for x in read_jsonl(Path(out["run_dir"]) / "metrics.jsonl")
        if "critic/score/mean" in x["data"]
    ]
    assert sum(x["train/num_gen_batches"] for x in lines) > 2  # some groups were dropped, so more batches
    roll = read_jsonl(Path(out["run_dir"]) / "rollouts" / "2.jsonl")
    by_uid: dict[str, set] = {}
    for r in roll:
        by_uid.setdefault(r["uid"], set()).add(r["acc"])
    assert len(by_uid) == 16 and all(len(v) == 2 for v in by_uid.values())


def test_dynamic_sampling_fails_clearly_after_max_batches(cache_dir, fast, tmp_path) -> None:
    cfg = cfg_for(
        "recipe=dapo",
        *fast,
        "trainer.total_training_steps=1",
        "algorithm.filter_groups.max_num_gen_batches=1",
        "algorithm.filter_groups.metric=format",
    )  # the untrained model never formats: all groups flat
    with pytest.raises(ValueError, match=r"max_num_gen_batches=1"):
        run_local(cfg, tmp_path / "run")


@pytest.mark.parametrize(
    "override,key",
    [
        ("algorithm.adv_estimator=remax", "algorithm.adv_estimator"),
        ("actor_rollout_ref.rollout.n=1", "actor_rollout_ref.rollout.n"),
        ("actor_rollout_ref.actor.policy_loss.loss_mode=bypass_mode", "policy_loss.loss_mode"),
        ("actor_rollout_ref.actor.ppo_mini_batch_size=3", "actor_rollout_ref.actor.ppo_mini_batch_size"),
        ("actor_rollout_ref.actor.shuffle=true", "actor_rollout_ref.actor.shuffle"),
        ("algorithm.use_pf_ppo=true", "algorithm.use_pf_ppo"),
        ("actor_rollout_ref.actor.optim.lr_scheduler_type=wsd", "lr_scheduler_type"),
    ],
)
def test_unsupported_keys_are_refused_by_name(override: str, key: str) -> None:
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        validate(cfg_for("recipe=grpo", "scale=laptop", override), "local")


def test_orz_ppo_trains_a_critic(cache_dir, fast, tmp_path) -> None:
    """adv=gae: values from the small critic, veRL's GAE, and critic metrics under veRL's names."""
    cfg = cfg_for("recipe=orz_ppo", *fast, "trainer.total_training_steps=2", "trainer.test_freq=-1")
    out = run_local(cfg, tmp_path / "run")
    last = [
        x["data"]
        for x in read_jsonl(Path(out["run_dir"]) / "metrics.jsonl")
        if "critic/score/mean" in x["data"]
    ][-1]
    for k in (
        "critic/vf_loss",
        "critic/vf_clipfrac",
        "critic/values/mean",
        "critic/vf_explained_var",
        "actor/pg_loss",
    ):
        assert k in last, k
    # the last step is checkpointed though it is not a multiple of save_freq (laptop: 20)
    assert (Path(out["run_dir"]) / "checkpoints" / "latest_checkpointed_iteration.txt").read_text() == "2"
