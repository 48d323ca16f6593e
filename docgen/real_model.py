"""The real model's blocks (``make docs``, ``docs/real_model.md``): SmolLM2-135M-Instruct on this laptop.

- ``real-model-paths``: every real-checkpoint path, its command and wall time from an empty cache
  (``results/real_model_paths/paths.json``, :mod:`experiments.real_model_paths`);
- ``real-model-eval``: ``make eval``'s pass@k and maj@k per task, and the verifier's account of the
  model's replies (extracted, refused for format, judged wrong; a few of each), from the same file;
- ``real-model-start``: the model's held-out accuracy before RL per candidate task, at the runs'
  sampling (``results/real_model_start/latest.json``, :mod:`experiments.real_model_start`);
- ``real-model-engines``: the experiment's run for a few steps on each engine, side by side
  (``results/bench_real_model_engines/latest.json``, :mod:`benchmarks.bench_real_model_engines`);
- ``real-model-rl``: the experiment "can RL move a real model on a laptop?": its claim as recorded
  before the runs, start -> end held-out accuracy and response length per seed with the accuracy
  curve and CPU minutes, with the shuffled-reward control (``results/real_model_rl*/``);
- ``smollm2-run-time``: how long ``scale=laptop_smollm2`` at its defaults takes on each engine, from
  the profiled 2-step runs (``results/profile_verl_cpu/latest.json``, :mod:`benchmarks.profile_verl_cpu`);
- ``real-model-bench``: the KV-cache sampler vs HF ``generate`` (tokens/s, side by side) and one RL
  step's split (``results/bench_real_model/latest.json``), with the converted model's record.
Listed in ``docgen.blocks``; a missing results file renders the command that writes it.
"""

from __future__ import annotations

import re
from typing import Any

from omegaconf import OmegaConf

from analysis.render import Table, num
from core.results import REPO
from docgen.engine import Rendered, source_line
from docgen.results import missing, read, table

#: the last RL step's metrics a paths row shows, by their short names
RL_NAMES = {
    "critic/score/mean": "score",
    "actor/pg_loss": "pg loss",
    "actor/grad_norm": "grad norm",
    "critic/vf_loss": "vf loss",
}
ARMS = (("real_model_rl", "outcome reward"), ("real_model_rl-shuffled", "rewards shuffled"))


def _paths() -> dict[str, Any] | None:
    return table("real_model_paths", "paths")


def _source(res: dict[str, Any], path: str) -> list[str]:
    return [source_line(path, res.get("provenance"))]


def paths_block() -> Rendered:
    """One row per path: what ran, how long, and its exit code (0 pass, 1 warnings, 2 refused)."""
    res = _paths()
    if res is None:
        return missing("real_model_paths")
    rows = []
    for r in res["rows"]:
        rl = [f"{name} {num(r.get(k))}" for k, name in RL_NAMES.items() if k in r or k != "critic/vf_loss"]
        note = ", ".join(rl) if r["path"].startswith("rl") else ""
        if r["path"] == "filter" and "pass_rate" in r:
            p = r["pass_rate"]
            note = (
                f"{r['prompts']} prompts × {r['n']}: mean pass rate {p['mean']:.3f}, {p['in_band'] * 100:.0f}% "
                f"in the band {r['band']}, {p['all_wrong'] * 100:.0f}% never right"
            )
        if r["path"].startswith("eval") and "pass@k" in r:
            note = f"pass@1 {num(r['pass@k'].get('1'))}"
        rows.append([r["label"], f"`{r['command']}`", f"{r['seconds']:.0f}", str(r["exit"]), note])
    total = sum(r["seconds"] for r in res["rows"])
    freed = [r["checkpoint_bytes_deleted"] for r in res["rows"] if "checkpoint_bytes_deleted" in r]
    text = Table(
        ["path", "command", "wall s", "exit", "last step (score, pg loss, grad norm; vf loss with a critic)"],
        rows,
    ).markdown()
    return Rendered(
        f"{text}\n\nAll paths: {total / 60:.1f} min of wall time on this machine, from an empty `RLVR_CACHE`."
        + (
            f" Checkpoints deleted once their rows were read: {sum(freed) / 1e9:.1f} GB over {len(freed)} RL rows "
            f"({min(freed) / 1e9:.1f}-{max(freed) / 1e9:.1f} GB each)."
            if freed
            else ""
        ),
        sources=_source(res, "results/real_model_paths/paths.json"),
    )


def _examples(rep: dict[str, Any]) -> list[list[str]]:
    out = []
    for kind in ("right", "wrong", "refused"):
        for e in rep["examples"].get(kind, [])[:2]:
            reply = e["reply"].replace("\n", " ⏎ ").replace("|", "\\|")
            out.append([kind, f"{e['gold']}", str(e["pred"]).replace("|", "\\|"), reply[:160]])
    return out


def eval_block() -> Rendered:
    """pass@k / maj@k per evaluated task and the verifier report on the replies, with examples."""
    res = _paths()
    if res is None:
        return missing("real_model_paths")
    parts = []
    for r in (r for r in res["rows"] if r["path"].startswith("eval") and "pass@k" in r):
        ks = list(r["pass@k"])
        head = ["task"] + [f"pass@{k}" for k in ks] + [f"maj@{k}" for k in ks]
        cells = (
            [r["label"].split()[-1]] + [num(r["pass@k"][k]) for k in ks] + [num(r["maj@k"][k]) for k in ks]
        )
        v = r["verifier"]
        parts.append(Table(head, [cells]).markdown())
        parts.append(
            f"Verifier on the {v['samples']} replies: {v['extracted']} answers extracted "
            f"({v['judged_right']} judged right, {v['judged_wrong']} judged wrong), "
            f"{v['refused_for_format']} refused for format (no answer found); mean reply "
            f"{v['mean_response_tokens']:.0f} tokens."
        )
        parts.append(Table(["verdict", "gold", "extracted", "reply (start)"], _examples(v)).markdown())
    return Rendered("\n\n".join(parts), sources=_source(res, "results/real_model_paths/paths.json"))


def _ends(rec: dict[str, Any], key: str) -> tuple[float, float]:
    c = rec["curves"][key]["value"]
    return float(c[0]), float(c[-1])


def _rl_row(label: str, rec: dict[str, Any]) -> list[str]:
    (a0, a1), (l0, l1) = _ends(rec, "rlvr/val_acc"), _ends(rec, "rlvr/val_response_length")
    curve = rec["curves"]["rlvr/val_acc"]
    points = " ".join(f"{v:.2f}" for v in curve["value"])
    summ = rec.get("summary", {})
    return [
        label,
        str(rec["seed"]),
        f"{a0:.3f} → {a1:.3f}",
        f"{(a1 - a0) * 100:+.1f}",
        f"{l0:.1f} → {l1:.1f}",
        f"{points} (steps {', '.join(str(x) for x in curve['step'])})",
        num(summ.get("cpu_minutes"), "{:.1f}"),
        num(summ.get("minutes"), "{:.1f}"),
    ]


def rl_block() -> Rendered:
    """The claim as recorded before the runs, and per seed start -> end accuracy and length, per arm."""
    data = [(name, label, read(name)) for name, label in ARMS]
    if data[0][2] is None:
        return missing("real_model_rl")
    design = data[0][2].get("design", {})
    rows, sources = [], []
    for name, label, d in data:
        if d is None or not d["runs"]:
            rows.append([label, "–", "not run yet (no finished run recorded)", "", "", "", "", ""])
            continue
        rows += [_rl_row(label, rec) for rec in d["runs"].values()]
        sources.append(source_line(f"results/{name}/", d.get("provenance")))
    sources = sources or [source_line(f"results/{ARMS[0][0]}/", data[0][2].get("provenance"))]
    head = ["arm", "seed", "held-out accuracy", "gain, points", "mean response tokens"]
    head += ["accuracy at each evaluation", "CPU min", "wall min"]
    target = (design.get("targets") or {}).get("acc_gain")
    text = (
        f"Claim, recorded before the runs: {design.get('claim', '?')}\n\n"
        f"Primary metric: `{(design.get('metrics') or ['?'])[0]}` (end − start; target "
        f"{num(None if target is None else target * 100, '{:+.0f}')} points), seeds {design.get('seeds')}, "
        f"recipe {', '.join(design.get('recipes', []))} on the {design.get('engine', 'local')} engine at "
        f"`scale={design.get('scale')}` with {' '.join(f'`{o}`' for o in design.get('overrides', []))}.\n\n"
        + Table(head, rows).markdown()
    )
    verdict = rl_verdict({label: d for _, label, d in data}, target)
    return Rendered(text + (f"\n\n{verdict}" if verdict else ""), sources=sources)


def rl_verdict(arms: dict[str, dict[str, Any] | None], target: float | None) -> str:
    """Per arm the mean [min, max] gain in points and the seeds at or above ``target``, and whether the
    claim holds: every seed of the first arm reaches the target and the control's (second arm's) mean
    gain does not. Empty until both arms have runs.

    >>> rec = lambda a, b: {"curves": {"rlvr/val_acc": {"value": [a, b]}}}
    >>> print(rl_verdict({"rl": {"runs": {"s0": rec(0.1, 0.3)}}, "ctl": {"runs": {"s0": rec(0.1, 0.1)}}}, 0.05))
    rl: gain +20.0 points [+20.0, +20.0], 1/1 seeds at +5 or more; ctl: gain +0.0 points [+0.0, +0.0], 0/1 seeds at +5 or more. The claim holds.
    """
    if target is None or any(d is None or not d["runs"] for d in arms.values()):
        return ""
    parts, stats = [], []
    for label, d in arms.items():
        gains = [(b - a) * 100 for a, b in (_ends(r, "rlvr/val_acc") for r in d["runs"].values())]
        hit = sum(g >= target * 100 for g in gains)
        stats.append((sum(gains) / len(gains), hit, len(gains)))
        parts.append(
            f"{label}: gain {stats[-1][0]:+.1f} points [{min(gains):+.1f}, {max(gains):+.1f}], "
            f"{hit}/{len(gains)} seeds at {target * 100:+.0f} or more"
        )
    (_, hit, n), (ctl_mean, _, _) = stats[0], stats[-1]
    holds = hit == n and ctl_mean < target * 100
    return "; ".join(parts) + (". The claim holds." if holds else ". The claim does not hold.")


def start_block() -> Rendered:
    """The model's held-out accuracy before RL, per candidate task, and whether it is in the band."""
    res = table("real_model_start", "latest")
    if res is None:
        return missing("real_model_start")
    s = res["settings"]
    head = ["task", "terms", "held-out prompts × samples", "mean@1 [95% CI]", "pass@k", "in the band"]
    head += ["answers extracted", "refused for format", "mean reply tokens"]
    rows = []
    for r in res["rows"]:
        p, v, lo_hi = r["task"]["params"], r["verifier"], r["pass@1_ci"]
        ks = ", ".join(f"@{k} {num(x)}" for k, x in r["pass@k"].items() if k != "1")
        rows.append(
            [
                f"`dataset={r['dataset']}`",
                f"{p['k']} in {p['lo']}..{p['hi']}",
                f"{r['prompts']} × {r['n']}",
                f"{num(r['pass@k']['1'])} [{num(lo_hi[0])}, {num(lo_hi[1])}]",
                ks,
                "yes" if r["in_band"] else "no",
                f"{v['extracted']} of {v['samples']}",
                str(v["refused_for_format"]),
                num(v["mean_response_tokens"], "{:.0f}"),
            ]
        )
    text = (
        f"T={s['temperature']}, at most {s['max_tokens']} new tokens, the local engine's sampler; the band: "
        f"{s['band'][0] * 100:.0f}–{s['band'][1] * 100:.0f}% mean@1 (the 95% interval is over prompts).\n\n"
        + Table(head, rows).markdown()
    )
    return Rendered(text, sources=_source(res, "results/real_model_start/latest.json"))


def engines_block() -> Rendered:
    """The experiment's run for a few steps on each engine: wall, CPU and per-step seconds, the ratios."""
    res = table("bench_real_model_engines", "latest")
    if res is None:
        return missing("bench_real_model_engines")
    s, med, ratios = res["settings"], res["median"], res["ratios"]
    rows = [
        [
            e,
            str(len(runs)),
            num(med[e]["wall_s"], "{:.0f}"),
            num(med[e]["cpu_s"], "{:.0f}"),
            num(med[e]["step_s_median"], "{:.0f}"),
            "; ".join(" ".join(f"{x:.0f}" for x in r["step_s"]) for r in runs),
        ]
        for e, runs in res["runs"].items()
    ]
    head = ["engine", "runs", "wall s", "CPU s", "s per step (median)", "each step's s"]
    text = (
        f"`{s['recipe']}` at `scale={s['scale']}` with the experiment's overrides, {s['steps']} steps and "
        f"its start and end evaluations per run, {s['rounds']} round(s), one run at a time.\n\n"
        + Table(head, rows).markdown()
        + f"\n\nveRL ÷ local: {ratios['verl/local step_s_median']:.2f}× per step, "
        f"{ratios['verl/local wall_s']:.2f}× wall, {ratios['verl/local cpu_s']:.2f}× CPU for the whole run; "
        f"faster per step: **{res['faster']}**."
    )
    return Rendered(text, sources=_source(res, "results/bench_real_model_engines/latest.json"))


def bench_block() -> Rendered:
    """Sampler vs HF generate tokens/s per clock, their ratio, one step's split, and the model record."""
    res = table("bench_real_model", "latest")
    if res is None:
        return missing("bench_real_model")
    s, arms, ratios = res["settings"], res["arms"], res["ratios"]
    rows = [
        [
            name,
            num(arms[a]["tokens"], "{:.0f}"),
            num(arms[a]["wall_s"], "{:.1f}"),
            num(arms[a]["tokens_per_s_wall"], "{:.1f}"),
            num(arms[a]["tokens_per_s_cpu"], "{:.1f}"),
        ]
        for a, name in (("sampler", "KV-cache sampler (`core.sampler.generate`)"), ("hf", "HF `generate`"))
    ]
    split = res["step_split"]
    srows = [[p, num(v["wall_s"], "{:.1f}"), f"{v['share'] * 100:.0f}%"] for p, v in split.items()]
    m = res.get("model") or {}
    fixes = "; ".join(f"`{f['key']}` {f['before']!r} → {f['after']!r}" for f in m.get("fixes") or [])
    text = (
        f"{s['prompts']} prompts × {s['n']} samples, at most {s['max_new_tokens']} new tokens, T={s['temperature']}, "
        f"{s['threads']} torch threads, {s['rounds']} rounds (medians).\n\n"
        + Table(["sampler", "tokens", "wall s", "tokens/s (wall)", "tokens/s (CPU)"], rows).markdown()
        + f"\n\nKV-cache sampler ÷ HF `generate`, tokens/s: {ratios['sampler_over_hf_tokens_per_s_wall']:.2f}× (wall), "
        f"{ratios['sampler_over_hf_tokens_per_s_cpu']:.2f}× (CPU).\n\nOne RL step of that shape:\n\n"
        + Table(["part", "wall s", "share"], srows).markdown()
        + f"\n\nModel: {m.get('title')}, {m.get('architecture')}, {num(m.get('num_params'), '{:,}')} parameters; "
        f"{m.get('weights')}. Tokenizer fixes recorded at conversion: {fixes}."
    )
    return Rendered(text, sources=_source(res, "results/bench_real_model/latest.json"))


def _defaults() -> dict[str, int]:
    """The documented run's own sizes: ``scale=laptop_smollm2``'s steps, evaluation interval and held-out
    samples (read from the profile file, so a change there changes the estimate)."""
    cfg = OmegaConf.load(REPO / "conf" / "scale" / "laptop_smollm2.yaml")
    steps, freq = int(cfg.trainer.total_training_steps), int(cfg.trainer.test_freq)
    return {"steps": steps, "evals": 1 + steps // freq, "eval_samples": int(cfg.local.eval_samples)}


def run_time_block() -> Rendered:
    """How long the documented SmolLM2 run takes on each engine: the profiled 2-step run
    (``results/profile_verl_cpu``, arms ``smollm2`` and ``smollm2_local``) extended to the profile's
    defaults at its measured rates (seconds per step, per held-out sample)."""
    res = table("profile_verl_cpu", "latest")
    arms = {k: v for k, v in ((res or {}).get("arms") or {}).items() if k in ("smollm2", "smollm2_local")}
    if not arms:
        return missing("profile_verl_cpu")
    d = _defaults()
    rows = []
    for name, arm in arms.items():
        med, steps = arm["per_step"]["median_s"], arm["per_step"]["steps"]
        m = re.search(r"local\.eval_samples=(\d+)", arm["command"])
        seen = int(m.group(1)) if m else d["eval_samples"]
        per_sample = med.get("testing", float("nan")) / seen
        more = (d["steps"] - steps) * med["step"] + (d["evals"] * d["eval_samples"] - 2 * seen) * per_sample
        la = arm.get("load_avg", {}).get("before", [float("nan")])[0]
        rows.append(
            ["veRL's trainer" if name == "smollm2" else "local", f"{arm['wall_s']:.0f}", f"{med['step']:.0f}",
             f"{per_sample:.1f}", f"{(arm['wall_s'] + more) / 60:.0f}", f"{la:.1f}"]
        )  # fmt: skip
    text = (
        f'`make run RECIPE=grpo ARGS="scale=laptop_smollm2"` at its defaults ({d["steps"]} steps, {d["evals"]} '
        f"held-out evaluations of {d['eval_samples']} problems): the profiled run of 2 steps (2 evaluations of "
        "its first problems) on each engine, and the defaults' time at its measured rates. Measured on the "
        "project's shared 2-core machine, at the load average shown (an idle machine is faster by up to "
        "about that factor over its 2 cores):\n\n"
        + Table(
            ["engine", "2-step run s", "s/step", "s per held-out problem", "defaults' run (min)", "load avg"],
            rows,
        ).markdown()
    )
    return Rendered(
        text, sources=[source_line("results/profile_verl_cpu/latest.json", res.get("provenance"))]
    )
