"""Every generated block of README.md and docs/, in one list: block name -> the function rendering it.

A block ``<!-- gen:<name> -->`` of a Markdown file is rendered by ``SECTIONS[name]`` (a test checks
that every block of the docs is listed here). Nothing registers itself on import: a new block is one
line below. The blocks per sweep (``ablation-<sweep>``), per pipeline (``pipeline-<name>``) and per
recipe (``recipe-<recipe>``, the whole of ``docs/recipes/<recipe>.md``) come from the files in
``conf/sweep/``, ``conf/pipeline/`` and ``conf/recipe/``; :func:`generate` writes the page of a new
recipe before filling it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path

from core.results import REPO
from docgen import (
    ablations,
    benchmarks,
    engine,
    pipelines,
    r1_zero,
    r1_zero_engines,
    real_model,
    recipe_pages,
    recipes,
    reward_models,
    reward_models_runs,
    seed_table,
    status,
    thinking_budget,
    verl_async,
    verl_cpu,
    verl_features,
)
from docgen.engine import Rendered


def _sections() -> dict[str, Callable[[], Rendered]]:
    out: dict[str, Callable[[], Rendered]] = {
        # the recipes (README.md, docs/provenance.md), from conf/; one page each: recipe-<recipe> below
        "recipes-table": recipes.recipes_table,
        "recipes-provenance": recipes.recipes_provenance,
        # what is recorded in results/ (docs/provenance.md)
        "results-status": status.results_status,
        "results-inputs": status.results_inputs,
        "results-agreement": status.results_agreement,
        "results-reproduce": status.results_reproduce,
        "results-reproduce-unfused": status.results_reproduce_unfused,
        "numerics-trace": status.numerics_trace,
        # the seed table (README.md)
        "seed-table": seed_table.seed_table,
        # R1-Zero in miniature (docs/r1_zero.md; first-run: docs/first_run.md)
        "first-run": r1_zero.first_run,
        "r1-zero-arms": r1_zero.r1_zero_arms,
        "r1-zero-headline": r1_zero.r1_zero_headline,  # README.md
        "r1-zero-two-machines": r1_zero.r1_zero_two_machines,  # docs/provenance.md
        "r1-zero-curves": r1_zero.r1_zero_curves,
        "r1-zero-base": r1_zero.r1_zero_base,
        "base-recipes-curves": r1_zero.base_recipes_curves,
        "pretrain-seeds-curves": r1_zero.pretrain_seeds_curves,
        "pretrain-seeds-base": r1_zero.pretrain_seeds_base,
        "overtime-curves": r1_zero.overtime_curves,
        "overtime-base": r1_zero.overtime_base,
        # the R1-Zero arms on both engines, and which engine is the CPU default (docs/r1_zero.md)
        "r1-zero-engines": r1_zero_engines.r1_zero_engines,
        "r1-zero-engine-bench": r1_zero_engines.r1_zero_engine_bench,
        # the thinking budget (docs/r1_zero.md)
        "thinking-budget": thinking_budget.thinking_budget,
        # reward models (docs/reward_models.md)
        "rm-labels": reward_models.rm_labels,
        "rm-models": reward_models.rm_models,
        "tts": reward_models.tts,
        "rm-cost": reward_models.rm_cost,
        "overopt": reward_models_runs.overopt,
        "opd": reward_models_runs.opd,
        # the benchmarks (docs/verifiers.md, docs/verifier_log.md, docs/engines.md, docs/preflight.md)
        "verifier-summary": benchmarks.verifier_summary,
        "verifier-tables": benchmarks.verifier_tables,
        "verifier-iterations": benchmarks.verifier_iterations,
        "engine-bench": benchmarks.engine_bench,
        "engine-bench-base": benchmarks.engine_bench_base,
        "engine-profile": benchmarks.engine_profile,
        # veRL's own trainer on a CPU (docs/engines.md)
        "verl-cpu-patches": verl_cpu.patches_block,
        "verl-cpu-changes": verl_cpu.changes_block,
        "verl-cpu-recipes": verl_cpu.recipes_block,
        "verl-cpu-bench": verl_cpu.verl_cpu_bench,
        "verl-cpu-profile": verl_cpu.verl_cpu_profile,
        "verl-async-bench": verl_async.verl_async_bench,
        "verl-cpu-features": verl_features.verl_cpu_features,  # LoRA, RM, async, offload from an empty cache
        "preflight-timings": benchmarks.preflight_timings,
        "numerics-cost": benchmarks.numerics_cost,  # docs/first_run.md
        "filter-overhead": benchmarks.filter_overhead,  # docs/data.md
        # a real pretrained model on the laptop (docs/real_model.md)
        "real-model-paths": real_model.paths_block,
        "real-model-eval": real_model.eval_block,
        "real-model-start": real_model.start_block,
        "real-model-engines": real_model.engines_block,
        "real-model-rl": real_model.rl_block,
        "real-model-bench": real_model.bench_block,
        "smollm2-run-time": real_model.run_time_block,
        # ablations (docs/ablations.md, README.md) and pipelines (docs/pipelines.md): one block per file in conf/
        "ablations-overview": ablations.overview,
    }
    for name in ablations.sweeps_with_spec():
        out[f"ablation-{name}"] = functools.partial(ablations.sweep_section, name)
    for name in pipelines.names():
        out[f"pipeline-{name}"] = functools.partial(pipelines.pipeline_block, name)
    out.update(recipe_pages.sections())
    return out


#: Every block the docs may hold: name -> section function.
SECTIONS: dict[str, Callable[[], Rendered]] = _sections()


def generate(check: bool = False, root: Path = REPO, only: Iterable[str] | None = None) -> list[str]:
    """Regenerate (or, with ``check``, compare) the blocks of README.md and docs/; the stale items.

    A recipe without its page (``docs/recipes/<recipe>.md``) is stale; outside ``check`` the page is
    written first and then filled like every other block."""
    only = None if only is None else list(only)
    with recipes.composing():  # each recipe composed once, in one Hydra context
        missing = recipe_pages.ensure_pages(check=check, root=root, only=only)
        return missing + engine.generate(SECTIONS, check=check, root=root, only=only)
