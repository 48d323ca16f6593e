"""Entry point: ``python -m recipes.run recipe=<name> [engine=auto|local|verl] [scale=...] [dry_run=true] [k=v ...]``.

Composes the recipe, decides the engine (``auto``: veRL when CUDA GPUs are visible, the local CPU
engine otherwise), applies a scale profile (on the local engine the recipe's ``rlvr.laptop_scale`` -- ``laptop`` or
``laptop_base`` -- unless a scale is given) and prints every key the profile changed, validates everything before anything starts,
writes ``config.yaml`` + ``run.json`` (+ ``verl_config.yaml`` and ``launch.sh`` for veRL) into the
run directory, then launches -- or, with ``dry_run=true``, prints the resolved veRL config as YAML
on stdout (logs go to stderr) and stops. Works as a Hydra multirun (``-m``) for sweeps.
"""

from __future__ import annotations

import hashlib
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict

from core import locks
from core.cli import user_errors
from recipes import launch_cpu
from recipes.cluster import ray_check
from recipes.compose import compose, diff, laptop_scale, options
from recipes.launch_verl import cuda_gpus, on_cpu, prepare, verl_config
from recipes.manifest import write_manifest
from recipes.validate import ConfigError, validate
from recipes.validate.models import TEACHER_KEY

#: Overrides that do not change what a run computes (left out of the run-directory hash).
_NO_HASH = ("run_dir", "dry_run")
MODEL_PATH = "actor_rollout_ref.model.path"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def resolve_engine(name: str) -> str:
    """``auto`` -> ``verl`` when CUDA GPUs are visible, else ``local``; others pass through."""
    if name not in ("auto", "local", "verl"):
        raise ValueError(f"[engine] unknown engine {name!r}; fix: engine=auto, engine=local or engine=verl")
    if name == "auto":
        return "verl" if cuda_gpus() > 0 else "local"
    return name


def here_on_cpu(cfg: DictConfig, engine: str) -> bool:
    """Whether veRL's trainer runs on a CPU: ``engine=verl``, no CUDA GPU, not a dry run
    (a dry run writes the launch for a GPU machine, the published config unless a scale is given).
    Submitted to a cluster (``cluster=slurm``), the job's nodes decide: ``cluster.gpus_per_node=0``
    is a CPU run, dry run or not, wherever it is submitted from."""
    if cluster(cfg) != "none":
        return engine == "verl" and not int(OmegaConf.select(cfg, "cluster.gpus_per_node", default=0) or 0)
    return engine == "verl" and not cfg.dry_run and on_cpu()


def cluster(cfg: DictConfig) -> str:
    """Where the run is submitted: ``none`` (here) or ``slurm`` (``conf/cluster/``)."""
    return str(OmegaConf.select(cfg, "cluster.name", default="none") or "none")


def _key(ov: str) -> str:
    return ov.split("=", 1)[0].lstrip("+~")


def given_model(overrides: list[str]) -> str | None:
    """The ``actor_rollout_ref.model.path=...`` given on the command line (the last one), if any."""
    given = [o.split("=", 1)[1] for o in overrides if _key(o) == MODEL_PATH]
    return given[-1] if given else None


def _local_model_error(overrides: list[str]) -> str | None:
    """engine=local (and veRL's trainer on a CPU) runs a command-line model path as is: it must be a
    checkpoint directory."""
    given = given_model(overrides)
    if given is None or (Path(given).expanduser() / "config.json").is_file():
        return None
    return (
        f"[{MODEL_PATH}] {given} is not a checkpoint directory (no config.json); a run on this CPU uses a given "
        "checkpoint as is (nothing is downloaded). Fix: point it at a save_pretrained directory on disk, or "
        "leave it unset to build the laptop model."
    )


def _local_teacher_error(overrides: list[str]) -> str | None:
    """engine=local builds a missing teacher only at the configured path: a typed one must exist."""
    given = [o.split("=", 1)[1] for o in overrides if _key(o) == TEACHER_KEY]
    if not given or given[-1] in ("", "null") or (Path(given[-1]).expanduser() / "config.json").is_file():
        return None
    return (
        f"[{TEACHER_KEY}] {given[-1]} is not an HF checkpoint directory (no config.json); engine=local uses a "
        "given teacher as is. Fix: point it at a save_pretrained directory on disk, or leave it unset to "
        "build the laptop teacher (local.teacher)."
    )


def default_run_dir(cfg: DictConfig, overrides: list[str], engine: str) -> Path:
    """``runs/<recipe>/<scale>-seed<seed>-<hash>``: the same command maps to the same directory."""
    kept = sorted(o for o in overrides if _key(o) not in _NO_HASH)
    digest = hashlib.sha256("\n".join([engine, *kept]).encode()).hexdigest()[:8]
    return (
        Path("runs") / str(cfg.rlvr.recipe) / f"{cfg.rlvr.scale or 'published'}-seed{cfg.rlvr.seed}-{digest}"
    )


def _multirun_dir() -> Path | None:
    if HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN:
        return Path(HydraConfig.get().runtime.output_dir)
    return None


def force_local(overrides: list[str]) -> list[str]:
    """``local.*`` overrides force-added (``++``): they may name sections only a scale profile fills
    (``local.task.train_n=64`` before ``scale=laptop`` is chosen). A typo cannot slip through:
    validate() checks ``local`` against its schema and names unknown keys. Idempotent."""
    return [f"++{o}" if o.startswith("local.") else o for o in overrides]


def prepare_config(
    overrides: list[str], changes: bool = True, cfg: DictConfig | None = None, pick_laptop: bool = True
) -> tuple[DictConfig, str, list[tuple], list[str]]:
    """Pick the engine and apply the scale profile; returns (cfg, engine, scale_changes, overrides).

    ``cfg``: the config already composed from ``overrides`` (``@hydra.main``'s), else composed here.
    One more composition only where a scale profile is in effect: the scaled config when the local
    engine picks the recipe's laptop scale (the given config is then the published one the changes
    are listed against), or the published config when a scale was given (``changes=False``: the
    scale's changes are not listed, and it is not composed). ``pick_laptop=False`` keeps the published
    config where a CPU run would pick the laptop scale (the pre-flight of a GPU run from here)."""
    overrides = force_local(overrides)
    cfg = compose(overrides) if cfg is None else cfg
    engine = resolve_engine(cfg.engine.name)
    published = None
    cpu_run = pick_laptop and (engine == "local" or here_on_cpu(cfg, engine))
    if cpu_run and not any(_key(o) == "scale" for o in overrides):
        laptop = _announce_laptop_scale(cfg, overrides)
        published, overrides = cfg, [*overrides, f"scale={laptop}"]
        cfg = compose(overrides)
    scale_changes: list[tuple] = []
    if changes and cfg.rlvr.scale is not None:
        if published is None:
            published = compose([o for o in overrides if _key(o) != "scale"])
        scale_changes = diff(published, cfg)
    return cfg, engine, scale_changes, overrides


def _announce_laptop_scale(cfg: DictConfig, overrides: list[str]) -> str:
    """The scale the local engine (and veRL's trainer on a CPU) applies when none is given (logged with
    what it runs)."""
    given = given_model(overrides)
    model = (
        f"the checkpoint {given} as is, with its own tokenizer and chat template"
        if given
        else "a ~1M-parameter model built locally"
    )
    # a given checkpoint keeps the plain laptop profile (no base model to build)
    laptop = "laptop" if given else laptop_scale(cfg)
    if laptop == "laptop_base":
        model = "a tiny base model pretrained locally on a designed corpus, on chain sums"
    elif not given and cfg.rlvr.get("model_laptop_scale"):
        model = f"the model option's own profile, {_model_option(overrides)}"
    elif not given:
        model += ", on the embedded arithmetic task"
    engine = resolve_engine(cfg.engine.name)
    where = "engine=local" if engine == "local" else "engine=verl on a machine without a GPU"
    log(
        f"[scale] {where} and no scale given: using scale={laptop} ({model}; the recipe's "
        "algorithmic settings are kept). Pass scale=... to change."
    )
    return laptop


def _model_option(overrides: list[str]) -> str:
    """``model=<name>`` as typed (the last one), or the recipe's model."""
    typed = [o for o in overrides if _key(o) == "model"]
    return typed[-1] if typed else "the recipe's model"


def _resolved(cfg: DictConfig, key: str, written: object) -> str:
    """A changed value as the run will use it; an interpolation also shows as written."""
    if not (isinstance(written, str) and "${" in written):
        return str(written)
    value = OmegaConf.select(cfg, key, throw_on_resolution_failure=False)
    return str(written) if value is None else f"{value}  (= {written})"


def run(overrides: list[str], cfg: DictConfig | None = None) -> int:
    """Validate, record and launch one run; returns a process exit code. ``cfg``: the config composed
    from ``overrides`` (``@hydra.main``'s), else composed here (:func:`prepare_config`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never block on the hub while validating
    typed = list(overrides)  # as the user typed them: their problems are listed first
    try:
        cfg, engine, changes, overrides = prepare_config(overrides, cfg=cfg)
    except ValueError as e:
        return _refused(str(e))
    run_dir = (
        Path(cfg.run_dir) if cfg.run_dir else (_multirun_dir() or default_run_dir(cfg, overrides, engine))
    )
    with open_dict(cfg):
        cfg.run_dir = str(run_dir)
        cfg.engine.name = engine
    log(
        f"[recipe] {cfg.rlvr.recipe}  [engine] {engine}  [scale] {cfg.rlvr.scale or 'published'}  [run_dir] {run_dir}"
    )
    if changes:
        log(f"[scale] scale={cfg.rlvr.scale} changed {len(changes)} keys (published -> used):")
        for key, before, after in changes:
            log(f"    {key}: {before} -> {_resolved(cfg, key, after)}")
    if cluster(cfg) != "none":
        return _submit(cfg, run_dir, engine, overrides, typed)
    cpu = here_on_cpu(cfg, engine)
    try:
        if cpu:
            refused = launch_cpu.refusal(cfg)
            if refused:
                raise ValueError(refused)
            _log_cpu(launch_cpu.apply(cfg), "no GPU here: veRL's own trainer with the CPU backend (verl_cpu)")
        check(cfg, engine, overrides, typed)
        if engine == "verl" and not cfg.dry_run and (address := os.environ.get("RAY_ADDRESS")):
            ray_check.check(cfg, address)  # the cluster holds the run, or one line before anything starts
        if engine == "local" and not cfg.dry_run:
            from recipes.local.data import ensure_task_files  # the task generators: local runs only

            ensure_task_files(cfg)  # before run.json hashes the data; a user's missing path stops here
        if cpu and not cfg.dry_run:
            _log_cpu(launch_cpu.prepare_inputs(cfg, run_dir, log), "")
    except (ConfigError, ValueError) as e:
        return _refused(str(e))
    try:  # one writer per run folder: a second local run into it stops here, before writing
        on_gpu = engine == "verl" and not cpu  # a GPU launch may run elsewhere (Slurm, a Ray cluster)
        guard = nullcontext() if on_gpu or cfg.dry_run else locks.hold(run_dir, "run folder", _FIX)
        with guard:
            return _launch(cfg, run_dir, engine, overrides, changes)
    except locks.FolderBusy as e:
        return _refused(str(e))


def _log_cpu(changes: list[tuple], intro: str) -> None:
    """Print each CPU change once: key, before -> after, why."""
    if intro:
        log(f"[cpu] {intro}; {len(changes)} keys changed for the CPU (before -> after: why):")
    for key, before, after, why in changes:
        log(f"    {key}: {before} -> {after}  ({why})")


def check(cfg: DictConfig, engine: str, overrides: list[str], typed: list[str]) -> None:
    """What refuses a composed run before anything is written (``ConfigError``/``ValueError``):
    :func:`recipes.validate.validate` (the ``typed`` overrides' problems first) and, on the local
    engine, a given model path that is no checkpoint. ``recipes.sweep`` checks every arm with it."""
    if cluster(cfg) != "none":
        _cluster_check(cfg, engine)
        if here_on_cpu(cfg, engine):  # validated as the job's head will run it: with the CPU changes
            cfg = cfg.copy()
            launch_cpu.apply(cfg)
    validate(cfg, engine, typed)
    if (engine == "local" or here_on_cpu(cfg, engine)) and not cfg.dry_run:
        for err in (_local_model_error(overrides), _local_teacher_error(overrides)):
            if err:
                raise ValueError(err)


def _cluster_check(cfg: DictConfig, engine: str) -> None:
    """What refuses a cluster submission before anything is submitted (``ValueError``): another
    engine than veRL's, a job whose nodes disagree with the config (:func:`recipes.cluster.slurm.refusal`),
    and on CPU nodes what veRL's trainer cannot run on a CPU (the node count aside: the job's Ray
    cluster holds it)."""
    from recipes.cluster import slurm  # the job script: cluster submissions only

    if engine != "verl":
        raise ValueError(
            f"[cluster] cluster={cluster(cfg)} submits veRL's trainer, not engine={engine}; fix: engine=verl, "
            "or drop cluster= to run the local engine here"
        )
    refused = slurm.refusal(cfg)
    if refused is None and here_on_cpu(cfg, engine):
        alone = cfg.copy()
        with open_dict(alone):
            alone.trainer.nnodes = 1
        refused = launch_cpu.refusal(alone)
    if refused:
        raise ValueError(refused)


def _submit(cfg: DictConfig, run_dir: Path, engine: str, overrides: list[str], typed: list[str]) -> int:
    """``cluster=slurm``: check, pre-flight, write the job script into the run folder, then print it
    (dry run) or submit it and wait for the job (:func:`recipes.cluster.slurm.submit`)."""
    from recipes.cluster import slurm  # the job script: cluster submissions only

    try:
        check(cfg, engine, overrides, typed)
    except (ConfigError, ValueError) as e:
        return _refused(str(e))
    run_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    staged = cfg  # what the pre-flight judges: on CPU nodes the config the job's head runs
    if here_on_cpu(cfg, engine):
        staged = cfg.copy()
        launch_cpu.apply(staged)
        if cfg.preflight and not cfg.dry_run:
            try:  # the task files and the laptop model the pre-flight reads (the head finds them built)
                launch_cpu.prepare_inputs(staged, run_dir, log)
            except ValueError as e:
                return _refused(str(e))
    if cfg.preflight and not _preflight_passes(staged, run_dir):
        return 2
    if cfg.dry_run:
        script = slurm.write_script(cfg, run_dir, overrides)
        sys.stdout.write(script.read_text())
        log(f"[dry_run] the Slurm job script written to {script}; nothing was submitted.")
        return 0
    return slurm.submit(cfg, run_dir, overrides, log)


def _refused(message: str) -> int:
    """Log a refusal (``error: ...``; nothing was launched) and return exit code 2. An arm of a
    multirun also leaves the line in ``<its dir>/error.txt``, which ``recipes.sweep`` reports."""
    log(f"error: {message}\nnothing was launched.")
    if (job := _multirun_dir()) is not None:
        arm = " ".join(o for o in HydraConfig.get().overrides.task if not _key(o).startswith("sweep"))
        job.mkdir(parents=True, exist_ok=True)
        (job / "error.txt").write_text(f"{message.splitlines()[0]}\narm: {arm}\n")
    return 2


_FIX = "give this run its own run_dir=<folder>"


def _launch(cfg: DictConfig, run_dir: Path, engine: str, overrides: list[str], changes: list) -> int:
    """Write the run folder's config and manifest, then dry-run, launch veRL or run the local engine."""
    run_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    if engine == "verl":
        if cfg.preflight and not _preflight_passes(cfg, run_dir):
            return 2
        cmds = prepare(cfg, run_dir)
    else:
        cmds = [[sys.executable, "-m", "recipes.run", *overrides, f"run_dir={run_dir}", "engine=local"]]
        (run_dir / "launch.sh").write_text(
            "#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(" ".join(c) for c in cmds) + "\n"
        )
    write_manifest(
        run_dir,
        cfg,
        engine=engine,
        overrides=overrides,
        scale_changes=changes,
        launch=[" ".join(c) for c in cmds],
    )
    if cfg.dry_run:
        sys.stdout.write(OmegaConf.to_yaml(verl_config(cfg)))
        log(
            f"[dry_run] resolved config, manifest and launch command written to {run_dir}/ "
            f"(launch: {run_dir / 'launch.sh'}); nothing was launched."
        )
        return 0
    if engine == "verl":
        from recipes import supervise  # psutil, subprocesses: launching only

        code = supervise.launch(run_dir)
        if code:
            log(f"error: {supervise.failure(run_dir, code)}")
            return 2
        from recipes.verl_summary import summarize  # the tokenizer and Hydra: after a finished launch only

        summary = summarize(run_dir)  # the local engine's held-out metrics and summary.json (None: a note)
        if summary is not None:
            log(_format_summary(summary))
        return 0
    summary = _local().run_local(cfg, run_dir)
    log(_format_summary(summary))
    return 0


def _preflight_passes(cfg: DictConfig, run_dir: Path) -> bool:
    """Run the pre-flight checks (report on stderr and in preflight.json); False stops a launch."""
    from recipes.preflight import preflight  # pulls torch and the verifiers: only veRL launches need it

    report = preflight(cfg, "verl", run_dir=run_dir)
    log(report.format())
    if report.exit_code < 2:
        return True
    if cfg.dry_run:
        log(
            f"[preflight] failed (see above, {run_dir / 'preflight.json'}): a launch would be refused; dry run goes on."
        )
        return True
    log(
        f"error: pre-flight failed (see above, {run_dir / 'preflight.json'}): nothing was launched and no launch.sh "
        "was written. Fix the findings, or skip the checks with preflight=false."
    )
    return False


def _local():
    import recipes.local as local  # torch and the engine load only for engine=local runs

    return local


def _format_summary(s: dict) -> str:
    return (
        f"\n=== {s.get('recipe', '')} done: held-out accuracy {s.get('start_acc', float('nan')):.3f} -> "
        f"{s.get('end_acc', float('nan')):.3f} in {s.get('steps')} steps, {s.get('minutes', 0):.1f} min; "
        f"run dir {s.get('run_dir')} ==="
    )


def _note_bare(choices: dict) -> None:
    """The note for a composition without a recipe (a sweep file picks its own without ``recipe=``)."""
    if choices.get("recipe") in (None, "null"):
        log(
            f"note: no recipe=... given; composing the bare defaults. Recipes: {', '.join(options('recipe'))}"
        )


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(cfg: DictConfig) -> None:
    """Hydra's entry: the arms of a multirun (``-m``, ``recipes.sweep``) and runs given Hydra's flags."""
    _note_bare(HydraConfig.get().runtime.choices)
    code = run(list(HydraConfig.get().overrides.task), cfg)
    if code:
        sys.exit(code)


def single(argv: list[str]) -> int:
    """One run from the command line, composed once: a mistake in the overrides is one ``error:``
    line (an unknown key with did-you-mean, an unknown option of a group, a malformed override)
    before anything else; the composed config is the one :func:`run` validates and launches, and an
    expected error the local engine raises while running is one ``error:`` line too (exit 2;
    :func:`core.cli.user_errors`).
    Hydra's own entry (:func:`main`) would compose it again and writes nothing more for a single run
    (``hydra.run.dir: .``, no output subdir, no job logging)."""
    try:
        cfg = compose(argv, hydra=True)
    except ValueError as err:
        log(f"error: {err}\nnothing was launched.")
        return 2
    _note_bare(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    with user_errors():  # a refusal the engine raises mid-run (data too easy, a rebuilt model): one line
        return run(argv, cfg)


def _hydra_flags(argv: list[str]) -> bool:
    """Flags (``--help``, ``-m``) or ``hydra.*`` keys: left to Hydra's own entry."""
    return any(a.startswith("-") or _key(a).startswith(("hydra.", "hydra/")) for a in argv)


if __name__ == "__main__":
    # `local.task.*` exists only once the laptop profile is chosen, which happens after Hydra composes
    sys.argv = force_local(sys.argv)
    if _hydra_flags(sys.argv[1:]):
        main()
    else:
        sys.exit(single(sys.argv[1:]))
