"""The ``verl-async-bench`` block of docs/engines.md: veRL's async trainer modes against its sync trainer
on this CPU, from ``results/bench_verl_async/latest.json`` (``benchmarks.bench_verl_async``).

Renders, per mode, the trained samples per second over steps 2.., seconds per step, the whole
command's seconds, the largest staleness the rollout's version stamps showed against the bound, and
the throughput / sync's; with the load average the runs saw (a shared machine: CPU seconds, never a GPU's).
"""

from __future__ import annotations

from analysis.render import Table
from docgen.engine import Rendered, source_line
from docgen.results import missing, table


def verl_async_bench() -> Rendered:
    """One row per ``trainer.v1.trainer_mode`` (see the module docstring)."""
    res = table("bench_verl_async", "latest")
    if res is None:
        return missing("bench_verl_async")
    st, med, ratios = res["settings"], res["median"], res["ratios"]
    rows = []
    for mode, m in sorted(med.items(), key=lambda kv: (kv[0] != "sync", kv[0])):
        stale = "—" if mode == "sync" else f"{m['max_staleness']} (allowed {int(st['threshold']) - 1})"
        ratio = "1" if mode == "sync" else f"{ratios[f'{mode}/sync']:.2f}"
        rows.append(
            [
                f"`{mode}`",
                f"{m['samples_per_s']:.2f}",
                f"{m['step_s']:.2f}",
                f"{m['wall_s']:.0f}",
                stale,
                ratio,
            ]
        )
    head = [
        "trainer mode",
        "samples/s",
        "s/step",
        "command s",
        "max staleness (updates)",
        "throughput / sync",
    ]
    loads = sorted(x["load_avg_before"][0] for rs in res["runs"].values() for x in rs)
    extra = " ".join(f"`{x}`" for x in st.get("extra", []))
    text = (
        f"`{st['recipe']}` at its laptop profile on a {st['model']}{', with ' + extra if extra else ''}, "
        f"{st['steps']} steps per run, "
        f"{st['rounds']} runs per mode alternating, `trainer.v1.sampler.max_off_policy_threshold={st['threshold']}`; "
        f"medians of steps 2-{st['steps']} (step 1 pays warm-up), {st['threads']} torch thread(s). Staleness: the "
        "largest lag, in weight updates, of the weights behind a trained trajectory, from the rollout's own version "
        f"stamps (`verl_cpu.staleness`). Measured on a shared 2-core machine (1-minute load average {loads[0]:.0f}-"
        f"{loads[-1]:.0f} at the runs' starts): CPU numbers, to be re-recorded on an idle machine.\n\n"
        + Table(head, rows).markdown()
    )
    return Rendered(
        text, sources=[source_line("results/bench_verl_async/latest.json", res.get("provenance"))]
    )
