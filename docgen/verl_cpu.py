"""The blocks of veRL's own trainer on a CPU (docs/engines.md), from the code and from ``results/``.

- ``verl-cpu-patches``: the patches of veRL internals (:data:`verl_cpu.patches.PATCHES`): name, the
  veRL file and line, why, the pinned source hash -- from the code, so the page cannot drift from it;
- ``verl-cpu-changes``: the config changes a CPU run makes (:data:`recipes.launch_cpu.CHANGES`) and
  what is refused there (:data:`recipes.launch_cpu.REFUSED`), from the code;
- ``verl-cpu-recipes``: ``results/verl_cpu_recipes/latest.json``: every recipe's 2 steps on veRL's
  trainer on this CPU (exit, wall, s/step, phases, last-step metrics), world size 2 and a resume;
- ``verl-cpu-bench``: ``results/bench_verl_cpu/latest.json``: veRL's trainer vs the local engine per
  step and phase, and the rollout backend batched vs one request at a time;
- ``verl-cpu-profile``: ``results/profile_verl_cpu/latest.json``: where a veRL CPU run spends its time
  (CPU per process role, the start-up in order, windows, per-step phases), and Ray's worker niceness
  beside a competing process.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table, num
from docgen.engine import Rendered, source_line
from docgen.results import missing, table


def patches_block() -> Rendered:
    """One row per patch of veRL internals, from :mod:`verl_cpu.patches`."""
    from verl_cpu.patches import PATCHES, VERL_VERSION  # the block reads the code: only when rendered

    rows = [[f"`{p.name}`", f"`{p.module}.{p.attr}`", p.where, p.why, f"`{p.sha256}`"] for p in PATCHES]
    head = ["patch", "replaces", "veRL file:line", "why", "pinned source sha256"]
    text = (
        f"Each is applied only on veRL {VERL_VERSION} and only while its code hashes to the pinned value "
        "(another version or changed code: one error naming the patch); "
        "`tests/verl_cpu/test_patches.py` fails when the code under one changes.\n\n"
        + Table(head, rows).markdown()
    )
    return Rendered(text, sources=["`verl_cpu/patches.py`"])


def _value(v: Any) -> str:
    return f"`{v}`" if not isinstance(v, dict) else "`" + ", ".join(f"{k}={x}" for k, x in v.items()) + "`"


def changes_block() -> Rendered:
    """The CPU run's config changes and refusals, from :mod:`recipes.launch_cpu`."""
    from omegaconf import OmegaConf  # only when rendered

    from recipes.launch_cpu import CHANGES, REFUSED  # the block reads the code: only when rendered

    empty = OmegaConf.create({"local": {"threads": 1}})
    rows = []
    for ch in CHANGES:
        rows.append([f"`{ch.key}`", ch.shown or _value(ch.value(empty)), ch.why])
    refused = [[f"`{key}`", why] for key, _, why in REFUSED]
    text = (
        Table(["key", "set to", "why"], rows).markdown()
        + "\n\nRefused before Ray starts (one `error:` line, exit 2):\n\n"
        + Table(["key", "why"], refused).markdown()
    )
    return Rendered(text, sources=["`recipes/launch_cpu.py`"])


def _load(res: dict[str, Any]) -> str:
    """The machine and its load when a record was written (CPU seconds, not GPU ones)."""
    m = (res.get("provenance") or {}).get("machine") or {}
    load = m.get("load_avg_1_5_15")
    cpu = (m.get("cpu") or {}).get("model", "this machine")
    if not load:
        return f"Measured on {cpu}, {m.get('cores', '?')} cores."
    return (
        f"Measured on {cpu}, {m.get('cores', '?')} cores, shared with other jobs (load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} over 1 / 5 / 15 minutes when the record was written)."
    )


def recipes_block() -> Rendered:
    """Per run of ``experiments.verl_cpu_recipes``: exit, wall, steps, s/step, phases, the last step."""
    res = table("verl_cpu_recipes", "latest")
    if res is None:
        return missing("verl_cpu_recipes")
    rows = []
    for name, r in res["runs"].items():
        ph = r["median_phase_s"]
        last = r["last"]
        phases = ", ".join(f"{k} {v:.2f}" for k, v in ph.items() if k != "step")
        names = {"actor/pg_loss": "pg_loss", "actor/grad_norm": "grad_norm", "critic/score/mean": "score"}
        names.update({"critic/vf_loss": "vf_loss", "actor/kl_loss": "kl_loss"})
        metrics = ", ".join(
            f"{n} {last[k]:.3g}" for k, n in names.items() if isinstance(last.get(k), (int, float))
        )
        note = (
            f"{r['segments']} segments"
            if r.get("segments", 1) > 1
            else "resumed"
            if name == "resume" and r.get("resumed")
            else ""
        )
        rows.append(
            [
                f"`{name}`",
                "ok" if r["code"] == 0 and r["required_finite"] else f"exit {r['code']}",
                ", ".join(map(str, r["steps"])),
                f"{r['wall_s']:.0f}",
                f"{ph['step']:.2f}" if "step" in ph else "—",
                phases,
                metrics,
                note,
            ]
        )
    head = ["run", "result", "steps", "command s", "s/step", "phases (s, medians)", "last step", ""]
    text = (
        f"`make results NAME=verl_cpu_recipes`: each row one `python -m recipes.run engine=verl recipe=<run>` "
        f"from an empty cache, {res['settings']['steps']} steps at the recipe's laptop profile (`world2`: grpo at "
        "`trainer.n_gpus_per_node=2`; `resume`: the grpo run again with one more step). The command's seconds include "
        f"building the laptop models the first run needs and veRL's start-up. {_load(res)}\n\n"
        + Table(head, rows).markdown()
    )
    return Rendered(
        text, sources=[source_line("results/verl_cpu_recipes/latest.json", res.get("provenance"))]
    )


def verl_cpu_bench() -> Rendered:
    """veRL's trainer on CPU vs the local engine per step, and the rollout backend's tokens/s."""
    res = table("bench_verl_cpu", "latest")
    if res is None:
        return missing("bench_verl_cpu")
    med, st = res["engines"]["median_s"], res["settings"]
    names = {
        "gen": "generation",
        "old_log_prob": "old log-probs",
        "ref": "reference log-probs",
        "adv": "advantages",
        "update_actor": "actor update",
        "update_weights": "weight sync",
        "step": "**step**",
        "outside_steps": "outside the steps (start-up, 2 evaluations, shutdown)",
        "wall": "**whole command**",
    }
    rows = []
    for key, label in names.items():
        loc, ver = med["local"].get(key), med["verl"].get(key)
        ratio = f"{ver / loc:.2f}" if loc and ver else "—"
        rows.append(
            [
                label,
                f"{loc:.3f}" if loc is not None else "— (not a separate phase)",
                f"{ver:.3f}" if ver is not None else "—",
                ratio,
            ]
        )
    eng = Table(["wall seconds", "local engine", "veRL's trainer (CPU)", "veRL/local"], rows).markdown()
    roll = res["rollout"]
    tps, ratio = roll["tokens_per_s"], roll["ratios"]
    rrows = [
        [arm, f"{tps['wall'][arm]:.0f}", f"{tps['cpu'][arm]:.0f}"]
        for arm in ("batched", "one_at_a_time", "sampler")
    ]
    rtab = Table(["CPU rollout server", "tokens/s (wall)", "tokens/s (this process's CPU)"], rrows).markdown()
    text = (
        f"`{st['recipe']}` at its laptop profile, {st['steps']} steps per run, {st['rounds']} runs per engine "
        f"alternating; medians of steps 2-{st['steps']} (step 1 pays warm-up), {st['threads']} torch thread(s).\n\n"
        f"{eng}\n\nThe rollout backend on the same model: {roll['requests']} requests (held-out prompts x "
        f"rollout.n) of up to {roll['max_new_tokens']} tokens at T=1, all at once (batched, as the agent loop "
        "sends a step's requests), each awaited before the next (one at a time), and the sampler the server "
        f"wraps called directly:\n\n{rtab}\n\nBatched / one at a time: **{ratio['wall']['batched/one_at_a_time']:.1f}x** "
        f"(wall), {ratio['cpu']['batched/one_at_a_time']:.1f}x (CPU); batched / the sampler alone: "
        f"{ratio['wall']['batched/sampler']:.2f} (wall)."
    )
    return Rendered(text, sources=[source_line("results/bench_verl_cpu/latest.json", res.get("provenance"))])


def _arm_load(arm: dict[str, Any]) -> str:
    """The 1-minute load average before and after an arm, when recorded (a shared machine's runs
    are slower than an idle one's by about that factor over its cores)."""
    la = arm.get("load_avg")
    return f" (load average {la['before'][0]:.1f} before, {la['after'][0]:.1f} after)" if la else ""


def _profile_arm(name: str, arm: dict[str, Any]) -> str:
    """One profiled run: CPU per process role, the start-up in order, the windows, one step's phases."""
    roles = arm["roles"]
    top, rest = roles[:10], roles[10:]
    rrows = [
        [f"`{r['role']}`", r["processes"], f"{r['cpu_s']:.1f}", f"{r['alive_s']:.0f}", f"{r['rss_mb']:.0f}"]
        for r in top
    ]
    if rest:
        rrows.append(
            [
                f"{len(rest)} more roles",
                sum(r["processes"] for r in rest),
                f"{sum(r['cpu_s'] for r in rest):.1f}",
                "",
                "",
            ]
        )
    starts = arm["process_starts_s"]
    srows = [
        [f"process `{k}` starts", f"{v:.1f}", ""] for k, v in starts.items() if k not in ("launch.sh", "?")
    ]
    srows += [
        [f"`{s['phase']}` ({s['role']})", f"{s['from_launch_s']:.1f}", f"{s['wall_s']:.1f}"]
        for s in arm["startup"]
    ]
    srows.sort(key=lambda r: float(r[1]))
    wrows = []
    for w in ("startup", "validation", "training", "shutdown"):
        if w not in arm["windows"]:
            continue
        v = arm["windows"][w]
        cpu = sorted(v["cpu_s"].items(), key=lambda kv: -kv[1])
        wrows.append(
            [
                w,
                f"{v['wall_s']:.1f}",
                f"{sum(c for _, c in cpu):.1f}",
                ", ".join(f"{k} {c:.1f}" for k, c in cpu[:4]),
            ]
        )
    ps = arm["per_step"]
    inside = ps["inside"]
    prow = [[k, f"{v:.2f}"] for k, v in ps["median_s"].items()]
    irow = ", ".join(f"`{k}` {v['wall_s']:.2f} s wall / {v['cpu_s']:.2f} s CPU" for k, v in inside.items())
    return (
        f"**{name}** — `{arm['command']}`: {arm['wall_s']:.0f} s wall, {arm['cpu_s']:.0f} s CPU over all its processes"
        + _arm_load(arm)
        + "; "
        + (
            f"the first training step starts {arm['first_step_from_launch_s']:.0f} s after the launch.\n\n"
            if arm["first_step_from_launch_s"] is not None
            else "\n\n"
        )
        + Table(["process role", "processes", "CPU s", "alive s", "peak RSS MB (one)"], rrows).markdown()
        + "\n\nStart-up, in order (seconds from the launch):\n\n"
        + Table(["event", "at s", "wall s"], srows).markdown()
        + "\n\n"
        + Table(["window", "wall s", "CPU s (all processes)", "largest CPU by role"], wrows).markdown()
        + f"\n\nPer step ({ps['steps']} steps; medians of steps 2..), veRL's phases (`timing_s/*`, wall s): "
        + ", ".join(f"{k} {v}" for k, v in prow)
        + f". Inside them, per step, the workers' own compute: {irow}. The rollout server spent "
        f"{arm['rollout_server_cpu_outside_decode_s']:.1f} s CPU outside its decodes (start-up and idle polls)."
    )


_GRPO_ARMS = {
    "grpo": "alone, micro-batches of up to 2048 padded tokens (`local.micro_batch_tokens=2048`)",
    "grpo_micro0": "alone, the config's own micro-batches (`local.micro_batch_tokens=0`, the default)",
    "grpo_loaded": "as `grpo`, beside one CPU-bound process at niceness 0",
    "grpo_loaded_nice15": "beside it, with Ray's default worker niceness given back (`RAY_worker_niceness=15`)",
    "grpo_local": "the local engine, alone",
    "grpo_local_loaded": "the local engine, beside one CPU-bound process at niceness 0",
}


def _slowdowns(arms: dict[str, Any]) -> str:
    """How much each engine's run slows beside the competing process (wall and s/step, loaded / alone)."""
    out = []
    for label, alone, loaded in (
        ("veRL's trainer", "grpo", "grpo_loaded"),
        ("the local engine", "grpo_local", "grpo_local_loaded"),
    ):
        if alone in arms and loaded in arms:
            a, b = arms[alone], arms[loaded]
            step = b["per_step"]["median_s"].get("step", float("nan")) / a["per_step"]["median_s"].get(
                "step", float("nan")
            )
            out.append(f"{label} {b['wall_s'] / a['wall_s']:.2f}x in wall time, {step:.2f}x per step")
    return ("Beside the competing process: " + "; ".join(out) + ".") if out else ""


def _grpo_arms(arms: dict[str, Any]) -> str:
    """The grpo arms side by side: the micro-batch cut and Ray's worker niceness under a competing load."""
    names = [n for n in _GRPO_ARMS if n in arms]
    if not names:
        return ""
    rows = []
    for n in names:
        a, med = arms[n], arms[n]["per_step"]["median_s"]
        nice = ", ".join(
            f"{k} {'/'.join(map(str, v))}"
            for k, v in a["nice"].items()
            if k in ("WorkerDict", "TaskRunnerV1")
        )
        rows.append(
            [
                f"`{n}`",
                _GRPO_ARMS[n],
                nice,
                f"{a['wall_s']:.0f}",
                num(a["first_step_from_launch_s"], "{:.0f}"),
            ]
            + [num(med.get(k), "{:.2f}") for k in ("step", "old_log_prob", "ref", "update_actor")]
            + [f"{a['load_avg']['before'][0]:.1f}" if "load_avg" in a else ""]
        )
    head = [
        "arm",
        "beside",
        "niceness seen",
        "wall s",
        "first step at s",
        "s/step",
        "old log-prob s",
        "ref s",
    ]
    return (
        "The same grpo run (laptop base model, 3 steps) alone, with the config's own micro-batches, beside one "
        "CPU-bound process at niceness 0, beside it with Ray's default niceness given back, and the local engine alone and "
        "beside it; per-step "
        "phases are medians over the steps (the local engine times generation and the update, its reference "
        "pass inside the update):\n\n"
        + Table([*head, "update s", "load avg before"], rows).markdown()
        + "\n\n"
        + _slowdowns(arms)
    )


def verl_cpu_profile() -> Rendered:
    """Where a veRL CPU run spends its time (``results/profile_verl_cpu/latest.json``)."""
    res = table("profile_verl_cpu", "latest")
    if res is None:
        return missing("profile_verl_cpu")
    arms = res["arms"]
    parts = [_profile_arm(n, arms[n]) for n in ("r1_zero", "smollm2") if n in arms]
    grpo = _grpo_arms(arms)
    if grpo:
        parts.append(grpo)
    lim = res.get("limit")
    if lim:
        mm = lim["matmul_gflops"]
        rows = []
        for name, arm in lim["arms"].items():
            for ph, v in arm["phases"].items():
                rows.append(
                    [f"`{name}` ({arm['threads']} thread(s))", ph, f"{v['flops'] / 1e9:.3g}", f"{v['seconds']:.2f}",
                     f"{v['gflops']:.1f}", v["shape"], f"{v['x_limit_1thread']:.1f}", f"{v['x_limit_2thread']:.1f}"]
                )  # fmt: skip
        shapes = ", ".join(
            f"{k} `{'x'.join(map(str, lim['shapes'][k]))}`: {mm['1'][k]:.1f} GFLOP/s at 1 thread, {mm['2'][k]:.1f} at 2"
            for k in lim["shapes"]
        )
        parts.append(
            "Against the machine: torch's fp32 matmul here, measured in the same invocation ("
            + shapes
            + "). "
            "FLOPs per step from each run's own sizes: generation and each log-prob pass 2N per token, the "
            "update 6N per token and epoch (N: the model's matmul weights; attention's own products left out); "
            "`x limit`: how many times slower than the matmul a phase ran.\n\n"
            + Table(
                [
                    "run",
                    "phase",
                    "GFLOP",
                    "s",
                    "GFLOP/s",
                    "matmul shape",
                    "x limit (1 thread)",
                    "x limit (2 threads)",
                ],
                rows,
            ).markdown()
        )
    load = f"Load average (1, 5, 15 min) before: {res['load_avg_before']}, after: {res['load_avg_after']}."
    return Rendered(
        "\n\n".join(parts) + "\n\n" + load,
        sources=[source_line("results/profile_verl_cpu/latest.json", res.get("provenance"))],
    )
