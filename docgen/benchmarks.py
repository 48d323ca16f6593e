"""The benchmarks' blocks (``make docs``): verifier, engine and pre-flight measurements from ``results/``.

- ``verifier-summary``: the verifier benchmark's headline (``results/bench_rewards/latest.json``):
  FN/FP on the ex-held-out development set (``benchmarks/heldout/``, whose per-format totals steered
  verifier rounds 2, 4 and 6) out of sample for both, in-sample FN/FP, cold p99 latency, ours vs math-verify.
- ``verifier-tables``: every table of that file (``benchmarks.heldout.report.render``).
- ``verifier-iterations``: each recorded round of verifier changes (the other files in
  ``results/bench_rewards/``), totals as that round's protocol measured them.
- ``engine-bench``, ``engine-bench-base``: ``results/bench_engine/latest.json`` and
  ``results/bench_engine_base/latest.json`` (the two step shapes): medians per arm and the ratios, per clock.
- ``engine-profile``: ``results/profile_engine/latest.json``: per phase of a step, profiled seconds
  and the shares of dense arithmetic, other torch ops and time outside ops.
- ``preflight-timings``: ``results/preflight/timings_100k.json``: each pre-flight check's time per
  tokenizer on a generated 100k-row dataset, beside veRL's own overlong filter on the same rows.
- ``numerics-cost``: ``results/bench_numerics/latest.json``: what the CPU arithmetic pins cost.
- ``filter-overhead``: ``results/bench_data_filter/latest.json``: the difficulty filter's CPU time
  over generation alone, and its own work split into per-sample and per-run.
Blocks listed in ``docgen.blocks``; a missing results file renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table
from benchmarks.bench_numerics import report
from benchmarks.heldout.report import MV, OURS, render
from docgen.engine import Rendered, source_line
from docgen.results import missing, table
from experiments.registry import cpu_label

ITERATIONS = (
    "before_fixes",
    "after_fixes",
    "round2_before",
    "round2_after",
    "round3_before",
    "round4_before",
    "round5_before",
    "round6_before",
    "latest",
)


def _rate(s: dict[str, Any] | None, kind: str) -> str:
    if not s:
        return "–"
    n = s["n_pos"] if kind == "FN" else s["n_neg"]
    return f"{100 * s[kind] / n:.1f}% ({s[kind]}/{n})" if n else "–"


def verifier_summary() -> Rendered:
    res = table("bench_rewards", "latest")
    if res is None:
        return missing("bench_rewards")
    rows = []
    for name in (OURS, MV):
        t, ins = res["totals"].get(name), res["in_sample"].get(name, {}).get("response", {}).get("all")
        lat = res["latency_ms"].get(name, {}).get("held_out_protocol", {})
        p99 = (lat.get("cold") or lat.get("once") or next(iter(lat.values()), {})).get("p99")
        cpu = (lat.get("cold_cpu") or {}).get("p99")  # our scorers only: the others run once, in-process
        rows.append(
            [
                f"`{name}`",
                _rate(t and t["out_of_sample_for_both"], "FN"),
                _rate(t and t["out_of_sample_for_both"], "FP"),
                _rate(ins, "FN"),
                _rate(ins, "FP"),
                "–" if p99 is None else f"{p99:.0f}",
                "–" if cpu is None else f"{cpu:.1f}",
            ]
        )
    head = ["scorer", "ex-held-out dev FN", "ex-held-out dev FP", "in-sample FN", "in-sample FP"]
    head += ["ex-held-out dev p99 ms (cold, wall clock)", "ex-held-out dev p99 ms (cold, CPU time)"]
    return Rendered(
        Table(head, rows).markdown(),
        sources=[source_line("results/bench_rewards/latest.json", res.get("provenance"))],
    )


def verifier_tables() -> Rendered:
    res = table("bench_rewards", "latest")
    if res is None:
        return missing("bench_rewards")
    body = render(res).split("\n", 1)[1]  # the first line names the source; the footer does that here
    return Rendered(body, sources=[source_line("results/bench_rewards/latest.json", res.get("provenance"))])


def verifier_iterations() -> Rendered:
    rows, sources = [], []
    for name in ITERATIONS:
        res = table("bench_rewards", name)
        if res is None:
            continue
        prov = res.get("provenance") or {}
        sources.append(source_line(f"results/bench_rewards/{name}.json", prov))
        t = res.get("totals", {})
        both = {
            n: (t.get(n) or {}).get("out_of_sample_for_both") or (t.get(n) or {}).get("all")
            for n in (OURS, MV)
        }
        ins = (res.get("in_sample", {}).get(OURS) or {}).get("response", {}).get("all")
        lat = (res.get("latency_ms") or {}).get(OURS) or {}
        cpu = [
            ((lat.get(k) or {}).get("cold_cpu") or {}).get("p99") for k in ("held_out_protocol", "in_sample")
        ]
        rows.append(
            [
                f"`{name}`",
                f"`{(prov.get('git_commit') or '?')[:10]}`",
                _rate(both[OURS], "FN"),
                _rate(both[MV], "FN"),
            ]
            + [_rate(both[OURS], "FP"), _rate(ins, "FN")]
            + [f"{c:.1f}" if c is not None else "–" for c in cpu]
        )
    if not rows:
        return missing("bench_rewards")
    head = [
        "round",
        "commit",
        "ex-held-out dev FN ours",
        "ex-held-out dev FN math-verify",
        "ex-held-out dev FP ours",
        "in-sample FN ours",
        "cold CPU p99 ms, ex-held-out dev",
        "cold CPU p99 ms, in-sample",
    ]
    return Rendered(Table(head, rows).markdown(), sources=sources)


def engine_bench(experiment: str = "bench_engine") -> Rendered:
    """Medians per arm and the ratios, per clock, of one ``make bench-engine`` shape."""
    res = table(experiment, "latest")
    if res is None:
        return missing(experiment)
    rows = []
    arms = [a for a in ("engine", "before", "trl", "floor", "naive") if a in res["median_s"]["cpu"]]
    ratios = [
        k
        for k in ("before/engine", "trl/engine", "engine/floor", "engine/naive")
        if k in res["ratios"]["cpu"]
    ]
    for clock, med in res["median_s"].items():
        r = res["ratios"][clock]
        rows.append([clock] + [f"{med[a]:.3f}" for a in arms] + [f"{r[k]:.2f}" for k in ratios])
    names = {
        "engine": "engine",
        "before": "engine (before)",
        "trl": "TRL",
        "floor": "floor",
        "naive": "naive",
    }
    head = ["clock"] + [f"{names[a]} s/step" for a in arms] + [k.replace("trl", "TRL") for k in ratios]
    trl = res["settings"].get("trl")
    peer = (
        f"\n\nTRL: `trl=={trl}`." if trl else "\n\nTRL: version not recorded (a record from before it was)."
    )
    return Rendered(
        Table(head, rows).markdown() + peer,
        sources=[source_line(f"results/{experiment}/latest.json", res.get("provenance"))],
    )


def engine_bench_base() -> Rendered:
    """The same bench on the laptop base model's step (``shape=base``)."""
    return engine_bench("bench_engine_base")


def engine_profile() -> Rendered:
    """Per phase of a step: profiled seconds and the shares of dense arithmetic, other ops, outside ops."""
    res = table("profile_engine", "latest")
    if res is None:
        return missing("profile_engine")
    rows = []
    for phase, d in res["per_step"].items():
        share = [f"{100 * d[k] / d['total']:.0f}%" for k in ("dense", "other_ops", "outside_ops")]
        rows.append([phase, f"{d['total']:.3f}", *share])
    u = res["unprofiled"]
    text = (
        f"`{res['recipe']}` at `{res['scale']}`, {res['steps']} steps profiled, {res['threads']} torch thread. "
        f"Without the profiler a step took {u['wall_s_median']:.3f} s wall (sampling {u['gen_wall_s_median']:.3f} s) "
        f"and {u['cpu_s_median']:.3f} s CPU (medians of {res.get('compare_steps', res['steps'])} steps); "
        f"under it {res['profiled_cpu_s_per_step']:.3f} s CPU.\n\n"
    )
    if "unprofiled_before" in res:
        b, sp = res["unprofiled_before"], res["speedup"]
        text += (
            f"The same run with `local.fast=false` (the engine before its fast path), {res['compare_steps']} "
            f"steps interleaved step for step with the engine's: {b['wall_s_median']:.3f} s wall (sampling "
            f"{b['gen_wall_s_median']:.3f} s) and {b['cpu_s_median']:.3f} s CPU per step -- a speed-up "
            f"before/engine of **{sp['cpu']:.2f}x on the CPU clock** and {sp['wall']:.2f}x on the wall clock.\n\n"
        )
    head = ["phase", "profiled s/step", "dense arithmetic", "other torch ops", "outside ops"]
    return Rendered(
        text + Table(head, rows).markdown(),
        sources=[source_line("results/profile_engine/latest.json", res.get("provenance"))],
    )


def preflight_timings() -> Rendered:
    """Each pre-flight check's time per tokenizer on the generated dataset, and the peers beside it."""
    res = table("preflight", "timings_100k")
    if res is None:
        return missing("preflight")
    toks = res["tokenizers"]
    checks = sorted({c for t in toks.values() for c in t["checks"]})
    rows = [
        [f"`{c}`"]
        + [f"{t['checks'][c]['wall_s']:.2f} / {t['checks'][c]['cpu_s']:.2f}" for t in toks.values()]
        for c in checks
    ]
    rows.append(
        ["**all checks**"]
        + [
            f"{t['preflight_total_s']['wall_s']:.1f} / {t['preflight_total_s']['cpu_s']:.1f}"
            for t in toks.values()
        ]
    )
    head = ["check (wall s / CPU s)"] + [f"tokenizer `{n}`" for n in toks]
    side = []
    for n, t in toks.items():
        s = t.get("side_by_side") or {}
        if s:
            side.append(
                [
                    f"`{n}`",
                    f"{s['verl_filter_s']['wall_s']:.1f}",
                    f"{s['ratio_verl_filter_to_lengths_check_wall']:.2f}",
                    f"{s['full_tokenization_s']['wall_s']:.1f}",
                    f"{s['ratio_full_tokenization_to_lengths_check_wall']:.2f}",
                    f"{s['over_limit_preflight']} / {s['over_limit_verl_filter']} / {s['over_limit_full_tokenization']}",
                ]
            )
    parts = [
        f"{res['data']['rows']:,} training + {res['data']['val_rows']:,} validation rows, recipe "
        f"`{res['recipe']}`.",
        Table(head, rows).markdown(),
    ]
    if side:
        sh = [
            "tokenizer",
            "veRL overlong filter, wall s",
            "÷ lengths check",
            "tokenize every row, wall s",
            "÷ lengths check",
            "rows over the limit (pre-flight / veRL / every row)",
        ]
        parts.append(Table(sh, side).markdown())
    return Rendered(
        "\n\n".join(parts),
        sources=[source_line("results/preflight/timings_100k.json", res.get("provenance"))],
    )


def numerics_cost() -> Rendered:
    """What the CPU arithmetic pins cost (``make results NAME=bench_numerics``): per workload and
    clock, each arm's median and its ratio to the processor's own kernels; the weights each reached."""
    res = table("bench_numerics", "latest")
    if res is None:
        return missing("bench_numerics")
    arms = res["arms"]
    pinned = set(arms["pinned"]["weights_sha256"])
    other = [a for a in arms if a != "pinned" and set(arms[a]["weights_sha256"]) != pinned]
    steady = [a for a in arms if len(arms[a]["weights_sha256"]) == 1]
    r = res["ratio_to_own"]
    machine = (res.get("provenance") or {}).get("machine") or {}
    text = (
        f"Rounds: {res['rounds']}; per arm and round, in its own process with one torch thread, "
        f"pretraining steps of the laptop base model: {res['steps']}, sampler calls "
        f"(8 prompts x 8 samples, 64 new tokens): {res['decodes']}. The processor's own ATen kernels here: "
        f"`{res['own_capability']}`; machine: {machine.get('cores', '?')} cores, "
        f"{cpu_label(machine.get('cpu') or {}, flags=True)}. Medians in seconds per call; a ratio "
        "above 1 is slower than the processor's own kernels.\n\n"
        + report(res).markdown()
        + "\n\nOn the CPU clock both pins cost "
        f"{r['pretrain step']['cpu']['pinned']:.2f}x per pretraining step and {r['decode']['cpu']['pinned']:.2f}x "
        f"per sampler call; oneMKL's pin alone {r['pretrain step']['cpu']['mkl_pin']:.2f}x and "
        f"{r['decode']['cpu']['mkl_pin']:.2f}x, ATen's alone {r['pretrain step']['cpu']['aten_pin']:.2f}x and "
        f"{r['decode']['cpu']['aten_pin']:.2f}x. "
        f"{_dearer(r)} "
        f"{len(other)} of {len(arms) - 1} other arms reached other weights than the pinned one after the same "
        f"steps; {len(steady)} of {len(arms)} arms reached the same weights in every round."
    )
    return Rendered(text, sources=[source_line("results/bench_numerics/latest.json", res.get("provenance"))])


def _dearer(ratios: dict[str, Any]) -> str:
    """Which pin costs more, per workload, on the CPU clock (from ``ratio_to_own``).

    >>> _dearer({"decode": {"cpu": {"aten_pin": 1.2, "mkl_pin": 1.1}},
    ...          "pretrain step": {"cpu": {"aten_pin": 1.0, "mkl_pin": 1.7}}})
    "The dearer pin: oneMKL's per pretraining step, ATen's per sampler call."
    >>> _dearer({"decode": {"cpu": {"aten_pin": 1.0, "mkl_pin": 1.1}},
    ...          "pretrain step": {"cpu": {"aten_pin": 1.0, "mkl_pin": 1.7}}})
    "The dearer pin: oneMKL's, per pretraining step and per sampler call."
    """
    names = {"pretrain step": "per pretraining step", "decode": "per sampler call"}
    pin = {
        w: "oneMKL" if ratios[w]["cpu"]["mkl_pin"] > ratios[w]["cpu"]["aten_pin"] else "ATen"
        for w in names
        if w in ratios
    }
    if len(set(pin.values())) == 1:
        return f"The dearer pin: {next(iter(pin.values()))}'s, " + " and ".join(names[w] for w in pin) + "."
    return "The dearer pin: " + ", ".join(f"{v}'s {names[w]}" for w, v in pin.items()) + "."


def filter_overhead() -> Rendered:
    """The offline difficulty filter's cost over generation alone (``make results NAME=bench_data_filter``):
    the CPU overhead against its target, and the filter's own work split into per-sample and per-run."""
    res = table("bench_data_filter", "latest")
    if res is None:
        return missing("bench_data_filter")
    st, ov = res["setup"], res["overhead"]
    key = (st.get("model_key") or {}).get("weights_sha256")
    model = f"the local engine's cold start (weights `{key[:12]}`)" if key else f"`{st['model']}`"
    pure, whole = res["generation_alone"]["cpu_s"], res["whole_filter"]["cpu_s"]
    rounds = [w / g - 1 for g, w in zip(pure, whole, strict=True)]
    text = (
        f"Measured on {model}, {st['prompts']} {st['task']} prompts × {st['n']} samples of at most "
        f"{st['max_new_tokens']} new tokens, one thread, {st['rounds']} rounds (`benchmarks/bench_data_filter.py`): "
        f"the whole filter took {ov['cpu']:+.1%} CPU time over generating the same samples alone (medians; "
        f"round by round {min(rounds):+.1%} to {max(rounds):+.1%}; target ≤ {ov['target_cpu']:.0%}: "
        f"{'met' if ov['cpu'] <= ov['target_cpu'] else 'missed'} by the median"
        + (", not by every round)." if max(rounds) > ov["target_cpu"] >= ov["cpu"] else ").")
    )
    own = res.get("own_work")
    if own:
        text += (
            f" Of the filter's own work, scoring and shard writes grow with the samples: "
            f"{own['per_sample_share']:.1%} of its generation time; the rest, {own['per_run_s']:.2f} s "
            f"({own['per_run_share']:.1%} here), is paid once per run (the output sets and veRL's load check of "
            "each, the histogram, the input's hash and checks), so a job with more or longer samples spreads "
            "it thinner."
        )
    return Rendered(
        text, sources=[source_line("results/bench_data_filter/latest.json", res.get("provenance"))]
    )
