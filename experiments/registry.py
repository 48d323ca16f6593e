"""``make results NAME=<experiment>``: re-run one experiment the docs cite, into ``results/<experiment>/``.

Every experiment whose numbers appear in README.md or docs/ is registered here with the one command
that produces it (the command records its own results through ``core.results``); ``make docs`` then
renders the docs from ``results/``. ``list=true`` prints every experiment with the commit its
results were recorded at and whether the project's code changed since (by the source fingerprint
recorded with the results, where the experiment records one).

Does not render anything (``docgen``) and does not decide what an experiment measures
(its command and config do).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from typing import NamedTuple

from omegaconf import DictConfig

from analysis.render import Table
from core import locks, results
from core.cli import hydra_main
from core.compose import CONF_DIR
from core.registry import Registry
from core.sweeps import load as sweep_spec

EXPERIMENTS: Registry[list[str]] = Registry("experiment")
PY = [sys.executable, "-m"]

EXPERIMENTS.add("seed_table", [*PY, "experiments.seed_table"])
for _p in sorted((CONF_DIR / "sweep").glob("*.yaml")):
    EXPERIMENTS.add(f"sweep-{_p.stem}", [*PY, "recipes.sweep", f"sweep={_p.stem}"])
    _pilot = sweep_spec(_p.stem).pilot
    if _pilot is not None:  # the pilot that set the sweep's seed count, on its own seeds
        _seeds = ",".join(str(s) for s in _pilot.seeds)
        EXPERIMENTS.add(
            _pilot.experiment,
            [*PY, "recipes.sweep", f"sweep={_p.stem}", f"rlvr.seed={_seeds}", f"results={_pilot.experiment}"],
        )
for _p in sorted((CONF_DIR / "pipeline").glob("*.yaml")):
    EXPERIMENTS.add(f"pipeline-{_p.stem}", [*PY, "recipes.pipeline", f"pipeline={_p.stem}"])
EXPERIMENTS.add("bench_rewards", [*PY, "benchmarks.bench_rewards"])
EXPERIMENTS.add("bench_engine", [*PY, "benchmarks.bench_engine"])
EXPERIMENTS.add(
    "bench_engine_base", [*PY, "benchmarks.bench_engine", "shape=base"]
)  # the ablations' step shape
EXPERIMENTS.add("profile_engine", [*PY, "benchmarks.profile_engine"])  # issue 15 item 7: the profile first
# veRL's own trainer on this CPU (docs/engines.md): against the local engine, and every recipe through it
EXPERIMENTS.add("bench_verl_cpu", [*PY, "benchmarks.bench_verl_cpu"])
EXPERIMENTS.add("verl_cpu_recipes", [*PY, "experiments.verl_cpu_recipes"])
EXPERIMENTS.add("verl_cpu_features", [*PY, "experiments.verl_cpu_features"])  # LoRA, RM, async, offload
# veRL's async trainer modes against its sync trainer on this CPU (docs/engines.md)
EXPERIMENTS.add("bench_verl_async", [*PY, "benchmarks.bench_verl_async"])
EXPERIMENTS.add("profile_verl_cpu", [*PY, "benchmarks.profile_verl_cpu"])
EXPERIMENTS.add("bench_recompute", [*PY, "benchmarks.bench_recompute"])
# which engine is the default on a CPU: one full laptop run of r1_zero on each (issue 48; docs/r1_zero.md)
EXPERIMENTS.add("bench_cpu_engines", [*PY, "benchmarks.bench_cpu_engines"])
EXPERIMENTS.add("bench_analysis", [*PY, "benchmarks.bench_analysis"])
EXPERIMENTS.add("bench_data_filter", [*PY, "benchmarks.bench_data_filter"])
EXPERIMENTS.add("preflight", [*PY, "benchmarks.bench_preflight"])
# R1-Zero in miniature with its confounds beside it, each arm over seeds 0-4 (docs/r1_zero.md):
# outcome only, outcome + format (the recipe), and the recipe with its rewards shuffled
for _arm, _extra in (
    ("format", []),
    ("outcome", ["verifier=plain"]),
    ("shuffled", ["++local.shuffle_rewards=true"]),
):
    EXPERIMENTS.add(
        f"r1_zero_arms-{_arm}",
        [
            *PY,
            "experiments.r1_zero_curves",
            "seeds=[0,1,2,3,4]",
            "jobs=2",
            f"results=r1_zero_arms-{_arm}",
            "out=runs/arms",
            *_extra,
        ],
    )
# The same three arms on veRL's own trainer (issue 48; docs/r1_zero.md): main_ppo on this CPU through
# verl_cpu, the same base model, held-out prompts, seeds and recipe values; the shuffled control is
# adv=grpo_shuffled there (veRL scores each sample alone: recipes/shuffled_rewards.py). One run at a time.
for _arm, _extra in (("format", []), ("outcome", ["verifier=plain"]), ("shuffled", ["adv=grpo_shuffled"])):
    EXPERIMENTS.add(
        f"r1_zero_verl-{_arm}",
        [
            *PY,
            "experiments.r1_zero_curves",
            "seeds=[0,1,2,3,4]",
            "jobs=1",
            "engine=verl",
            f"results=r1_zero_verl-{_arm}",
            "out=runs/arms_verl",
            f"claim=\"On veRL's own trainer (main_ppo on this CPU), from the base model and held-out prompts of "
            f"results/r1_zero_arms-{_arm}, the arm's gains in held-out accuracy and mean response length lie "
            "within the local engine's seed range for that arm, or the difference is explained by a named cause "
            'that a run shows"',
            *_extra,
        ],
    )
# Why veRL's outcome-only arm grew length less (+144% mean; seeds 0 and 4 +67%) than the local engine's
# seeds 0-4 (+199% to +335%) while its accuracy gain sat inside their range: more local seeds of the same
# arm, never run before, measure the local engine's own seed-to-seed spread of the length gain.
EXPERIMENTS.add(
    "r1_zero_outcome_seeds",
    [
        *PY,
        "experiments.r1_zero_curves",
        "seeds=[5,6,7,8,9,10,11,12,13,14]",
        "jobs=2",
        "results=r1_zero_outcome_seeds",
        "out=runs/arms",
        "claim=\"On the local engine, the outcome-only arm's length gain over seeds 5-14 reaches down to +100% "
        "or less on at least one seed: veRL's lower outcome-arm length gain is within the local engine's "
        'seed-to-seed spread, not a difference between the engines"',
        "verifier=plain",
    ],
)
EXPERIMENTS.add(
    "base_recipes",
    [*PY, "experiments.r1_zero_curves", "recipes=[dapo,drgrpo]", "seeds=[0,1,2,3,4]", "results=base_recipes"],
)
EXPERIMENTS.add(  # seed 000's overtime-pay task, laptop variant, from its own base model (docs/r1_zero.md)
    "overtime_pay",
    [
        *PY,
        "experiments.r1_zero_curves",
        "scale=laptop_overtime",
        "seeds=[0,1,2,3,4]",
        "results=overtime_pay",
        "target_length_gain=null",
        "claim='RL with the outcome (+ format) reward alone, from a base model pretrained on the overtime-pay "
        "corpus, raises held-out accuracy on the laptop overtime-pay task by at least 15 points within one run'",
    ],
)
EXPERIMENTS.add(  # R1-Zero in miniature from other base models: RL seed s from pretraining seed s
    "pretrain_seeds",
    [
        *PY,
        "experiments.r1_zero_curves",
        "seeds=[1,2,3,4]",
        "results=pretrain_seeds",
        "overrides=['local.pretrain.seed=\\${rlvr.seed}']",  # escaped: each run resolves it to its seed
        "jobs=2",
        "claim='RL with the outcome (+ format) reward alone raises held-out accuracy and mean held-out "
        "response length together within one laptop run also from base models pretrained with other "
        "seeds (RL seed s starts from pretraining seed s)'",
    ],
)
# Can RL move a real model on a laptop? (issue 47 item 3; docs/real_model.md) GRPO from SmolLM2-135M-Instruct
# (make real-model) on single-digit sums, the task where it starts inside 5-60% (results/real_model_start),
# 3 seeds, and the same with its rewards shuffled; the claim, metric and seeds are recorded before the runs
# (experiments.r1_zero_curves writes the design first). Sizes: what fits one hour of this 2-core machine for
# all six runs (one step of 16 replies of this model takes about a minute here), the profile's lr and
# temperature; every held-out question (15) sampled 4 times at the start and the end.
REAL_MODEL_RL = [
    *PY,
    "experiments.r1_zero_curves",
    "recipes=[grpo]",
    "scale=laptop_smollm2",
    "seeds=[0,1,2]",
    "out=runs/real_model_rl",
    "target_length_gain=null",
    "target_acc_gain=0.05",
    "claim='GRPO with the outcome reward, from SmolLM2-135M-Instruct (4-bit weights dequantised to fp32), "
    "raises held-out accuracy on single-digit sums by at least 5 points in 8 steps of 4 prompts x 4 samples "
    "on every seed, and with its rewards shuffled it does not'",
    "dataset=sum_question_1digit",
    "data.train_batch_size=4",
    "trainer.total_training_steps=8",
    "trainer.test_freq=8",
    "data.max_response_length=64",
    "actor_rollout_ref.rollout.val_kwargs.n=4",
]
EXPERIMENTS.add("real_model_start", [*PY, "experiments.real_model_start", "results=real_model_start"])
EXPERIMENTS.add("real_model_rl", [*REAL_MODEL_RL, "results=real_model_rl"])
EXPERIMENTS.add(
    "real_model_rl-shuffled",
    [*REAL_MODEL_RL, "results=real_model_rl-shuffled", "++local.shuffle_rewards=true"],
)
# which engine runs the real-model experiment faster: its run for 2 steps on each engine, side by side
EXPERIMENTS.add(
    "bench_real_model_engines",
    [
        *PY,
        "benchmarks.bench_real_model_engines",
        "results=bench_real_model_engines",
        *(a for a in REAL_MODEL_RL if a.startswith(("dataset=", "data.", "actor_"))),
    ],
)
# every real-checkpoint path on the real model, each timed from an empty cache (docs/real_model.md)
EXPERIMENTS.add("real_model_paths", [*PY, "experiments.real_model_paths", "results=real_model_paths"])
EXPERIMENTS.add("bench_real_model", [*PY, "benchmarks.bench_real_model", "record=true"])
# every committed seed of each headline experiment re-run from an empty cache (on whatever machine
# runs it) and compared with the committed seeds: the spread between machines
EXPERIMENTS.add("reproduce", [*PY, "experiments.reproduce", "seeds=[0,1,2,3,4]", "jobs=2", "record=true"])
EXPERIMENTS.add("numerics_trace", [*PY, "experiments.numerics_trace", "record=true"])
EXPERIMENTS.add("bench_numerics", [*PY, "benchmarks.bench_numerics", "record=true"])  # what the pins cost
EXPERIMENTS.add("thinking_budget", [*PY, "experiments.thinking_budget"])  # seed 002 §3.2-3.4
for _name in ("rm_labels", "tts", "overopt", "opd"):  # seed 004 §4/§8 (docs/reward_models.md)
    EXPERIMENTS.add(_name, [*PY, "experiments.rm_study", f"experiment={_name}"])


#: when the commit that made pretraining, SFT and the RL engine take the IEEE square root
#: (``core.numerics.adamw``, 103e36c) landed; records written before it built models whose weights
#: depend on the processor (records are written at the head of main, so the time tells)
ADAMW_FIX = "2026-12-04T14:07:38+0000"


def before_adamw_fix(prov: dict) -> bool:
    """Was a results file written before :data:`ADAMW_FIX` (its models' weights depend on the processor)?

    >>> before_adamw_fix({"written": "2026-12-01T00:00:00+0000"}), before_adamw_fix({"written": ADAMW_FIX})
    (True, False)
    """
    return str(prov.get("written", "")) < ADAMW_FIX


def arithmetic(prov: dict) -> str:
    """The CPU arithmetic a results file was recorded under (``core.numerics``), from its versions,
    and whether its optimizer was the per-processor one (written before :data:`ADAMW_FIX`)."""
    v = prov.get("versions") or {}
    if "mkl_cbwr" not in v:
        return "unpinned (recorded before `core/numerics.py`: not reproducible on another CPU)"
    adamw = (
        "fused AdamW"
        if not before_adamw_fix(prov)
        else "unfused AdamW (before `core.numerics.adamw`: weights depend on the processor)"
    )
    return f"pinned ({v.get('aten_cpu_capability')}, MKL_CBWR={v.get('mkl_cbwr')}); {adamw}"


def status() -> Table:
    """One row per registered experiment: recorded at which commit, when, by which command, under
    which CPU arithmetic, on which machine."""
    rows = []
    for name in EXPERIMENTS:
        try:
            data = results.read_experiment(name)
            tables = [t.get("provenance") or {} for t in data.get("tables", {}).values()]
            prov = data.get("provenance") or max(tables, key=lambda p: p.get("written", ""), default={})
        except FileNotFoundError:
            rows.append([name, "not recorded", "", "", ""])
            continue
        commit = (prov.get("git_commit") or "?")[:10] + (" (dirty)" if prov.get("git_dirty") else "")
        rows.append(
            [
                name,
                commit,
                prov.get("written", ""),
                arithmetic(prov),
                machine_of(prov),
                f"`{prov.get('command', '')}`",
            ]
        )
    return Table(
        ["experiment", "recorded at commit", "written", "CPU arithmetic", "machine", "command"], rows
    )


def short_machine(prov: dict) -> str:
    """:func:`machine_of` in a few words: the processor model, or "processor not recorded", and
    the virtual machine's kernel build.

    >>> short_machine({"machine": {"platform": "Linux-6.18.44-fc-v1252-x86_64-with-glibc2.36", "cpu": {"model": "AMD EPYC"}}})
    'AMD EPYC (fc-v1252)'
    >>> short_machine({"machine": {"platform": "Linux-6.1-x86_64"}})
    'processor not recorded (Linux-6.1-x86_64)'
    """
    m = prov.get("machine") or {}
    plat = str(m.get("platform", "?"))
    where = "fc-" + plat.split("-fc-", 1)[1].split("-x86", 1)[0] if "-fc-" in plat else plat
    return f"{cpu_label(m.get('cpu') or {}, vendor=False)} ({where})"


def cpu_label(cpu: dict, vendor: bool = True, flags: bool = False) -> str:
    """A recorded processor (``core.results.cpu``) in words; "processor not recorded" when empty.

    >>> cpu_label({"model": "AMD EPYC", "vendor": "AuthenticAMD", "flags": ["avx2", "fma"]}, flags=True)
    'AMD EPYC (AuthenticAMD; avx2, fma)'
    """
    if not cpu:
        return "processor not recorded"
    parts = [cpu.get("vendor") if vendor else None, ", ".join(cpu.get("flags", [])) if flags else None]
    detail = "; ".join(str(x) for x in parts if x)
    return f"{cpu.get('model')} ({detail})" if detail else str(cpu.get("model"))


def machine_of(prov: dict) -> str:
    """The processor a results file was recorded on, and its platform string (the virtual machine's
    kernel build: two records with different strings ran on different machines).

    >>> machine_of({"machine": {"platform": "Linux-6.1-x86_64", "cpu": {"model": "AMD EPYC", "vendor": "AuthenticAMD"}}})
    'AMD EPYC (AuthenticAMD); `Linux-6.1-x86_64`'
    >>> machine_of({"machine": {"platform": "Linux-6.1-x86_64"}})
    'processor not recorded; `Linux-6.1-x86_64`'
    """
    m = prov.get("machine") or {}
    return f"{cpu_label(m.get('cpu') or {})}; `{m.get('platform', '?')}`"


def _short(sha: str | None) -> str:
    return f"`{sha[:12]}`" if sha else ""


class RunHashes(NamedTuple):
    """The inputs a set of run records name by sha256."""

    models: dict[int | None, set[str]]  # pretraining seed (None: a given checkpoint) -> weights
    splits: dict[str, set[str]]  # test file -> its sha256
    bare: int  # runs that recorded no weights hash


def run_hashes(runs: Iterable[dict]) -> RunHashes:
    """The base-model weights (by pretraining seed) and test splits the run records name.

    >>> h = run_hashes([{"run": {"model": {"weights_sha256": "ab", "build": {"pretrain": {"seed": 0}}},
    ...                          "data_sha256": {"t/test.parquet": "cd", "t/train.parquet": "ef"}}}, {}])
    >>> h.models, h.splits, h.bare
    ({0: {'ab'}}, {'t/test.parquet': {'cd'}}, 1)
    """
    models: dict[int | None, set[str]] = {}
    splits: dict[str, set[str]] = {}
    bare = 0
    for rec in runs:
        run = rec.get("run") or {}
        model = run.get("model") or {}
        if not model.get("weights_sha256"):
            bare += 1
        else:
            seed = ((model.get("build") or {}).get("pretrain") or {}).get("seed")
            models.setdefault(seed, set()).add(model["weights_sha256"])
        for file, sha in (run.get("data_sha256") or {}).items():
            if "test" in file:
                splits.setdefault(file, set()).add(sha)
    return RunHashes(models, splits, bare)


def inputs() -> Table:
    """One row per registered experiment with run records: the base models and test splits its runs
    name (pretraining seed -> sha256 of the weights; test file -> sha256), as the runs recorded them.

    Two experiments naming the same weights hash trained from bit-identical base models, whatever
    commit and cache each was recorded from; a run that recorded no hash shows "not recorded".
    """
    rows = []
    for name in EXPERIMENTS:
        try:
            runs = results.read_experiment(name)["runs"].values()
        except FileNotFoundError:
            continue
        if not runs:
            continue
        named = run_hashes(runs)
        models = {f"seed {seed}" if seed is not None else "given": v for seed, v in named.models.items()}
        splits, bare = named.splits, named.bare
        model_cell = "; ".join(f"{k}: {', '.join(map(_short, sorted(v)))}" for k, v in sorted(models.items()))
        if bare:
            model_cell = (model_cell + "; " if model_cell else "") + f"not recorded ({bare} runs)"
        split_cell = "; ".join(f"{k}: {', '.join(map(_short, sorted(v)))}" for k, v in sorted(splits.items()))
        rows.append([name, str(len(runs)), model_cell, split_cell or "not recorded"])
    return Table(
        ["experiment", "runs", "base model weights (pretraining seed: sha256)", "test split (sha256)"], rows
    )


#: overrides that say where and how a run logs, not what it computes
_PLUMBING = ("run_dir=", "++local.progress=", "trainer.logger=", "engine=", "recipe=", "scale=", "rlvr.seed=")
#: the curves two records of the same run are compared on
AGREE_ON = ("rlvr/val_acc", "rlvr/val_response_length")


def _run_key(rec: dict) -> tuple | None:
    """What determines a laptop run: recipe, scale, seed, the other overrides and the evaluation grid."""
    curve = (rec.get("curves") or {}).get(AGREE_ON[0])
    if not curve or rec.get("engine") != "local":
        return None
    rest = tuple(sorted(o for o in rec.get("overrides") or () if not str(o).startswith(_PLUMBING)))
    return (rec.get("recipe"), rec.get("scale"), rec.get("seed"), rest, tuple(curve["step"]))


def _curves(rec: dict) -> tuple:
    return tuple(tuple((rec.get("curves") or {}).get(k, {}).get("value") or ()) for k in AGREE_ON)


def _versions(recs: list[tuple[str, str, dict]]) -> str:
    """``identical``, or each version of the curves with the records that hold it and the base model
    they started from (``{a @ c, b @ c} base `ab12…` · {d @ c} base `cd34…`; max |Δ| x``).

    >>> r = lambda acc, sha: {"curves": {"rlvr/val_acc": {"value": acc}}, "run": {"model": {"weights_sha256": sha}}}
    >>> _versions([("a", "c1", r([0.1, 0.5], "ab" * 8)), ("b", "c2", r([0.1, 0.5], "ab" * 8))])
    'identical'
    >>> _versions([("a", "c1", r([0.1, 0.5], "ab" * 8)), ("b", "c2", r([0.1, 0.5], "ab" * 8)), ("t", "c0", r([0.1, 0.6], "cd" * 8))])
    'differ: {a @ c1, b @ c2} base `abababababab` · {t @ c0} base `cdcdcdcdcdcd`; max |Δ| 0.1'
    """
    classes: dict[tuple, list[tuple[str, str, dict]]] = {}
    for r in recs:
        classes.setdefault(_curves(r[2]), []).append(r)
    if len(classes) == 1:
        return "identical"
    first = next(iter(classes))
    diff = max(
        abs(a - b) for c in classes for x, y in zip(first, c, strict=True) for a, b in zip(x, y, strict=True)
    )

    def base(rs: list[tuple[str, str, dict]]) -> str:
        shas = sorted(
            {((r.get("run") or {}).get("model") or {}).get("weights_sha256") or "?" for _, _, r in rs}
        )
        return ", ".join(f"`{s[:12]}`" for s in shas)

    parts = [f"{{{', '.join(f'{n} @ {c}' for n, c, _ in rs)}}} base {base(rs)}" for rs in classes.values()]
    return f"differ: {' · '.join(parts)}; max |Δ| {diff:.3g}"


def agreement() -> Table:
    """The same run recorded by more than one experiment (each at its own commit, from its own empty
    cache): do the recorded curves agree, value for value? One row per run recorded twice or more; where
    they differ, each version of the curves with the records holding it and the base model it started from."""
    seen: dict[tuple, list[tuple[str, str, dict]]] = {}
    for name in EXPERIMENTS:
        try:
            data = results.read_experiment(name)
        except FileNotFoundError:
            continue
        commit = ((data.get("provenance") or {}).get("git_commit") or "?")[:10]
        for rec in data["runs"].values():
            key = _run_key(rec)
            if key is not None:
                seen.setdefault(key, []).append((name, commit, rec))
    rows = []
    for (recipe, _scale, seed, rest, steps), recs in sorted(
        seen.items(), key=lambda kv: (str(kv[0][0]), kv[0][2])
    ):
        if len({n for n, _, _ in recs}) < 2:
            continue
        newest = max(recs, key=lambda r: str((r[2].get("provenance") or {}).get("written") or ""))
        acc = newest[2]["curves"][AGREE_ON[0]]["value"]  # the most recent record's
        rows.append(
            [
                f"{recipe}-s{seed}" + (f" ({' '.join(rest)})" if rest else ""),
                ", ".join(f"{n} @ {c}" for n, c, _ in recs),
                f"{acc[0]:.3f} → {acc[-1]:.3f} over {steps[-1]} steps",
                _versions(recs),
            ]
        )
    return Table(
        [
            "run",
            "recorded by (experiment @ commit)",
            "held-out accuracy (newest record)",
            "curves (accuracy, length)",
        ],
        rows,
    )


def command(cfg: DictConfig) -> int:
    """Run the experiment ``name`` (its command with ``args`` appended), or list them."""
    if cfg.list or not cfg.name:
        print(status().markdown())
        return 0 if cfg.list else 2
    try:
        argv = [*EXPERIMENTS.get(str(cfg.name)), *[str(a) for a in cfg.args]]
    except KeyError as e:
        print(f"error: {e.args[0]} (`make results` lists them)", file=sys.stderr)
        return 2
    print("[results] " + " ".join(argv[1:]), file=sys.stderr)
    try:  # one run per results folder; the command (a child) inherits the lock
        with results.lock(str(cfg.name)):
            return subprocess.call(argv)
    except locks.FolderBusy as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


main = hydra_main("command", "results", command)


if __name__ == "__main__":
    main()
