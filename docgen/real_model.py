"""The real model's blocks (``make docs``, ``docs/real_model.md``): SmolLM2-135M-Instruct on this laptop.

- ``real-model-paths``: every real-checkpoint path, its command and wall time from an empty cache
  (``results/real_model_paths/paths.json``, :mod:`experiments.real_model_paths`);
- ``real-model-eval``: ``make eval``'s pass@k and maj@k per task, and the verifier's account of the
  model's replies (extracted, refused for format, judged wrong; a few of each), from the same file;
- ``real-model-rl``: the experiment "can RL move a real model on a laptop?": its claim as recorded
  before the runs, start -> end held-out accuracy and response length per seed, with the
  shuffled-reward control (``results/real_model_rl*/``);
- ``real-model-bench``: the KV-cache sampler vs HF ``generate`` (tokens/s, side by side) and one RL
  step's split (``results/bench_real_model/latest.json``), with the converted model's record.
Listed in ``docgen.blocks``; a missing results file renders the command that writes it.
"""

from __future__ import annotations

from typing import Any

from analysis.render import Table
from docgen.engine import Rendered, source_line
from docgen.results import missing, read, table

#: the last RL step's metrics a paths row shows, by their short names
RL_NAMES = {"critic/score/mean": "score", "actor/pg_loss": "pg loss", "actor/grad_norm": "grad norm"}
ARMS = (("real_model_rl", "outcome reward"), ("real_model_rl-shuffled", "rewards shuffled"))


def _num(v: Any, fmt: str = "{:.3f}") -> str:
    return fmt.format(v) if isinstance(v, (int, float)) else "–"


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
        rl = [f"{name} {_num(r.get(k))}" for k, name in RL_NAMES.items()]
        note = ", ".join(rl) if r["path"] == "rl" else ""
        if r["path"] == "filter" and "pass_rate" in r:
            p = r["pass_rate"]
            note = (
                f"{r['prompts']} prompts × {r['n']}: mean pass rate {p['mean']:.3f}, {p['in_band'] * 100:.0f}% "
                f"in the band {r['band']}, {p['all_wrong'] * 100:.0f}% never right"
            )
        if r["path"].startswith("eval") and "pass@k" in r:
            note = f"pass@1 {_num(r['pass@k'].get('1'))}"
        rows.append([r["label"], f"`{r['command']}`", f"{r['seconds']:.0f}", str(r["exit"]), note])
    total = sum(r["seconds"] for r in res["rows"])
    text = Table(
        ["path", "command", "wall s", "exit", "last step (score, pg loss, grad norm)"], rows
    ).markdown()
    return Rendered(
        f"{text}\n\nAll paths: {total / 60:.1f} min of wall time on this machine, from an empty `RLVR_CACHE`.",
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
            [r["label"].split()[-1]] + [_num(r["pass@k"][k]) for k in ks] + [_num(r["maj@k"][k]) for k in ks]
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


def rl_block() -> Rendered:
    """The claim as recorded before the runs, and per seed start -> end accuracy and length, per arm."""
    data = [(name, label, read(name)) for name, label in ARMS]
    if data[0][2] is None:
        return missing("real_model_rl")
    design = data[0][2].get("design", {})
    rows, sources = [], []
    for name, label, d in data:
        if d is None or not d["runs"]:
            rows.append([label, "–", "not run yet (no finished run recorded)", "", "", ""])
            continue
        for rec in d["runs"].values():
            (a0, a1), (l0, l1) = _ends(rec, "rlvr/val_acc"), _ends(rec, "rlvr/val_response_length")
            mins = rec.get("summary", {}).get("minutes")
            rows.append(
                [
                    label,
                    str(rec["seed"]),
                    f"{a0:.3f} → {a1:.3f}",
                    f"{(a1 - a0) * 100:+.1f}",
                    f"{l0:.1f} → {l1:.1f}",
                    _num(mins, "{:.1f}"),
                ]
            )
        sources.append(source_line(f"results/{name}/", d.get("provenance")))
    sources = sources or [source_line(f"results/{ARMS[0][0]}/", data[0][2].get("provenance"))]
    head = ["arm", "seed", "held-out accuracy", "gain, points", "mean response tokens", "wall min"]
    text = (
        f"Claim, recorded before the runs: {design.get('claim', '?')}\n\n"
        f"Primary metric: `{(design.get('metrics') or ['?'])[0]}` (end − start), seeds {design.get('seeds')}, "
        f"recipe {', '.join(design.get('recipes', []))} at `scale={design.get('scale')}` with "
        f"{' '.join(f'`{o}`' for o in design.get('overrides', []))}.\n\n" + Table(head, rows).markdown()
    )
    return Rendered(text, sources=sources)


def bench_block() -> Rendered:
    """Sampler vs HF generate tokens/s per clock, their ratio, one step's split, and the model record."""
    res = table("bench_real_model", "latest")
    if res is None:
        return missing("bench_real_model")
    s, arms, ratios = res["settings"], res["arms"], res["ratios"]
    rows = [
        [
            name,
            _num(arms[a]["tokens"], "{:.0f}"),
            _num(arms[a]["wall_s"], "{:.1f}"),
            _num(arms[a]["tokens_per_s_wall"], "{:.1f}"),
            _num(arms[a]["tokens_per_s_cpu"], "{:.1f}"),
        ]
        for a, name in (("sampler", "KV-cache sampler (`core.sampler.generate`)"), ("hf", "HF `generate`"))
    ]
    split = res["step_split"]
    srows = [[p, _num(v["wall_s"], "{:.1f}"), f"{v['share'] * 100:.0f}%"] for p, v in split.items()]
    m = res.get("model") or {}
    fixes = "; ".join(f"`{f['key']}` {f['before']!r} → {f['after']!r}" for f in m.get("fixes") or [])
    text = (
        f"{s['prompts']} prompts × {s['n']} samples, at most {s['max_new_tokens']} new tokens, T={s['temperature']}, "
        f"{s['threads']} torch threads, {s['rounds']} rounds (medians).\n\n"
        + Table(["sampler", "tokens", "wall s", "tokens/s (wall)", "tokens/s (CPU)"], rows).markdown()
        + f"\n\nKV-cache sampler ÷ HF `generate`, tokens/s: {ratios['sampler_over_hf_tokens_per_s_wall']:.2f}× (wall), "
        f"{ratios['sampler_over_hf_tokens_per_s_cpu']:.2f}× (CPU).\n\nOne RL step of that shape:\n\n"
        + Table(["part", "wall s", "share"], srows).markdown()
        + f"\n\nModel: {m.get('title')}, {m.get('architecture')}, {_num(m.get('num_params'), '{:,}')} parameters; "
        f"{m.get('weights')}. Tokenizer fixes recorded at conversion: {fixes}."
    )
    return Rendered(text, sources=_source(res, "results/bench_real_model/latest.json"))
