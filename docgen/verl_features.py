"""The ``verl-cpu-features`` block of docs/engines.md: veRL's features beyond the plain sync loop on this
CPU, each run from one empty cache (``results/verl_cpu_features/latest.json``,
``experiments.verl_cpu_features``), and what a CPU run still refuses or sets aside.

Renders, per arm: the command, the result, the steps run, seconds per step (median of steps 2..), the
check (its name, largest difference and threshold) and the negative control's value and verdict; the
async modes' throughput against ``sync`` from ``results/bench_verl_async`` when recorded; then the
features refused before Ray starts (:data:`recipes.launch_cpu.REFUSED`) and the Ulysses change
(:data:`recipes.launch_cpu.CHANGES`), each with its reason, from the code. CPU seconds on a shared
machine (the load average is shown), never a GPU's.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table
from docgen.engine import Rendered, source_line
from docgen.results import missing, table


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "—"


def _result(r: dict[str, Any]) -> str:
    if r.get("code") != 0:
        return f"exit {r.get('code')}" + (f": {r['error']}" if r.get("error") else "")
    return "pass" if r.get("passed") else "**fail**" + ("" if r.get("all_finite") else " (non-finite)")


def _control(r: dict[str, Any]) -> str:
    c = r.get("control")
    if not c:
        extra = r.get("merger")
        if extra:  # the resume arm: the model merger on its checkpoint
            wrote = "wrote `lora_adapter/`" if extra.get("adapter_written") else "**no adapter**"
            return f"`verl.model_merger` exit {extra.get('code')}, {wrote}"
        return "—"
    verdict = "detected" if c.get("detected") else "**not detected**"
    return f"{_num(c.get('largest'))}: {verdict}"


#: Why an arm failed, where the cause was read in veRL's code (rendered under the table when it fails).
CAUSES = {
    "lora_merged": "veRL 0.9.1 sends the merged LoRA weights in bf16 "
    "(`_merged_lora_per_tensor_param`, `verl/workers/engine/fsdp/transformer_impl.py:1082`: "
    "`.full_tensor().to(torch.bfloat16)`), where the full-weight and unmerged syncs send fp32; the rollout "
    "then samples from bf16-rounded weights. On the trained laptop base model this moves the probabilities "
    "already at step 1, when the adapter is still zero (the run with the sync skipped agrees there); the slow "
    "test's random model, whose distributions are near-uniform, does not show it.",
    "lora_resume": "its sync check is the merged sync's, as `lora_merged` above; the resume itself (step 3 only, "
    "from the step-2 checkpoint) and `verl.model_merger` (the adapter written) worked.",
}


def _largest(r: dict[str, Any]) -> str:
    per = r.get("per_step") or {}
    steps = ", ".join(f"{k}: {_num(v)}" for k, v in per.items())
    return _num(r.get("largest")) + (f" (per step {steps})" if len(per) > 1 else "")


def _row(name: str, r: dict[str, Any]) -> list[str]:
    load = r.get("load") or []
    return [
        f"`{name}`",
        f"`{r.get('command', '')}`",
        _result(r),
        ", ".join(map(str, r.get("steps") or [])) or "—",
        _num(r.get("s_per_step")),
        str(r.get("check", "—")),
        _largest(r),
        _num(r.get("threshold")),
        _control(r),
        " → ".join(f"{x:.1f}" for x in load) or "—",
    ]


def _async_ratios() -> str:
    """The async modes' throughput against sync (``benchmarks.bench_verl_async``), when recorded."""
    res = table("bench_verl_async", "latest")
    ratios = (res or {}).get("ratios") or {}
    if not ratios:
        return (
            "The async modes' throughput against `sync`: not recorded (`make results NAME=bench_verl_async`)."
        )
    parts = ", ".join(f"`{k.split('/')[0]}` {v:.2f}x" for k, v in sorted(ratios.items()))
    return (
        f"Throughput (trained samples/s) against `sync` on the same recipe (`make results NAME=bench_verl_async`, "
        f"the `verl-async-bench` table below): {parts}."
    )


def refused_rows() -> list[list[str]]:
    """What a CPU run refuses (``REFUSED``) or sets aside (the Ulysses change), each with its reason."""
    from recipes.launch_cpu import CHANGES, REFUSED  # the block reads the code: only when rendered

    rows = [
        [f"`{key}`", "refused before Ray starts (one `error:` line, exit 2)", why] for key, _, why in REFUSED
    ]
    seen = set()
    for ch in CHANGES:
        if (
            ch.key.endswith("ulysses_sequence_parallel_size")
            and ch.why not in seen
            and "as above" not in ch.why
        ):
            seen.add(ch.why)
            rows.append([f"`{ch.key}`", "set to 1 on a CPU", ch.why])
    return rows


def verl_cpu_features() -> Rendered:
    """One row per arm of ``experiments.verl_cpu_features``, then the refused features (module docstring)."""
    res = table("verl_cpu_features", "latest")
    if res is None:
        return missing("verl_cpu_features")
    st = res.get("settings") or {}
    runs = res.get("runs") or {}
    order = [a for a in st.get("arms") or [] if a in runs] + sorted(set(runs) - set(st.get("arms") or []))
    rows = [_row(name, runs[name]) for name in order]
    head = ["arm", "command", "result", "steps", "s/step", "check", "largest", "threshold", "control", "load"]
    text = (
        "`make results NAME=verl_cpu_features`: each arm one `python -m recipes.run engine=verl ...` from one "
        f"empty cache (the first run builds the laptop base model), {st.get('steps', '?')} steps "
        f"({st.get('async_steps', '?')} for the async modes; the resume one more), on a shared 2-core machine: "
        "seconds are CPU seconds under load (`load`: the 1-minute load average before → after the run). "
        "`s/step`: median `timing_s/step` of steps 2.. . Controls: LoRA with the weight sync skipped "
        "(`training/rollout_probs_diff_max` must exceed 1e-3 and 100x the synced run's), the async modes with one weight update dropped "
        "(the staleness check must fail).\n\n"
        + Table(head, rows).markdown()
        + "\n\n"
        + "".join(
            f"`{n}` failed: {CAUSES[n]}\n\n"
            for n, r in (res.get("runs") or {}).items()
            if n in CAUSES and not r.get("passed")
        )
        + _async_ratios()
        + "\n\nStill refused or set aside on a CPU (from `recipes/launch_cpu.py`):\n\n"
        + Table(["key", "on a CPU", "why"], refused_rows()).markdown()
    )
    return Rendered(
        text, sources=[source_line("results/verl_cpu_features/latest.json", res.get("provenance"))]
    )
