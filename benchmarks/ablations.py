"""Write ``docs/ablations.md`` from the sweep directories: ``python -m benchmarks.ablations [dir ...]``.

For each ablation of the seed documents (and the loss-variant comparison) it finds the newest
``multirun/<sweep>-*`` directory (or the directories given), reads every finished run
(``summary.json`` present) with ``analysis.runs``, and reports per metric the arm means with a
Student-t 95% interval over seeds, the difference to the baseline arm with a Welch 95% interval
(``analysis.metrics``, the same numbers as ``analysis.report``) and, because every arm of seed ``s``
starts from the same cold-start checkpoint, a paired-t 95% interval of the per-seed differences.
A claim counts as *reproduced* only if the paired interval of its primary metric excludes zero in
the claimed direction; *opposite* if it excludes zero the other way; otherwise *not shown*. For a
result not shown it estimates the seeds needed (80% power, two-sided 5%) to detect a given effect
from the observed spread of the paired differences. Compute: wall minutes of the sweep
(``sweep.json``, written by ``recipes.sweep``) and the summed minutes of its runs.
A sweep with no directory is listed as *not run*, with its design.

Does not run anything, and does not correct for multiple comparisons (one primary metric per claim).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.metrics import t_ci, welch_diff_ci
from analysis.runs import Run, find_runs

VAL_ACC = "val-core/arithmetic/acc/mean@1"


@dataclass(frozen=True)
class Metric:
    label: str
    key: str
    # "last": final logged value; "mean": mean over all logged steps (area under curve); "tail": mean
    # over the last 25% of steps; "len_incorrect"/"len_correct": mean length of the wrong/right rollout
    # samples over the last 25% of steps (from the rollout dumps; ``key`` unused); "strict_acc": the last
    # held-out dump re-scored by the strict arithmetic verifier (``key`` unused)
    how: str = "last"


@dataclass(frozen=True)
class Ablation:
    sweep: str
    axis: str  # the swept override key; arms are labelled ``<axis>=<value>``
    title: str
    claim: str  # the seeds' claim, translated (source: /work/shared/seeds/004_*.txt, "建议做的四组对照")
    baseline: str  # arm label the others are compared with
    metrics: tuple[Metric, ...]  # the first one is the primary metric the verdict is based on
    direction: int  # sign the claim predicts for (arm - baseline) on the primary metric; 0: no claim
    delta: float  # smallest effect of interest on the primary metric (for the seeds-needed estimate)
    # optional control sweep: (sweep name, label of its one arm, arm of this sweep compared with it)
    control: tuple[str, str, str] | None = None


ABLATIONS = (
    Ablation(
        "dynamic_sampling",
        "filter",
        "Dynamic-sampling filter off vs on",
        "Turning off DAPO's dynamic-sampling filter changes the share of useful gradient samples and "
        "slows convergence (“the most direct demonstration of why difficulty filtering is needed”).",
        "filter=none",
        (
            # Primary: convergence speed, the area under the held-out accuracy curve (the evaluations at
            # steps 0/20/40/60; step 0 is shared by both arms of a seed). Declared before the
            # confirmatory run on fresh seeds 5-14, after the pilot on seeds 0-4 (final accuracy
            # primary, not shown); see the notes.
            Metric("held-out accuracy, mean over evals", VAL_ACC, "mean"),
            Metric("held-out accuracy, final", VAL_ACC),
            Metric(
                "zero-variance groups generated (before the filter)", "rlvr/zero_variance_group_frac", "mean"
            ),
            Metric("generation batches per step", "train/num_gen_batches", "mean"),
        ),
        +1,
        0.03,
        ("dynamic_sampling_matched", "no filter, 18 prompts/step (same rollouts)", "filter=dynamic"),
    ),
    Ablation(
        "kl_coef",
        "kl",
        "KL coefficient 0 vs 0.01 vs 0.05",
        "Raising beta from 0 to 0.01 / 0.05 visibly slows the rise of the reward curve and changes the "
        "generation length: KL drags exploration down.",
        "kl=none",
        (
            Metric("held-out accuracy, final", VAL_ACC),
            Metric("training score, mean over steps", "critic/score/mean", "mean"),
            Metric("response length, mean over steps", "response_length/mean", "mean"),
            Metric("KL to reference, final", "actor/kl_loss"),
        ),
        -1,
        0.03,
    ),
    Ablation(
        "loss_norm",
        "agg",
        "Loss normalisation: batch token-mean vs per-sequence vs constant",
        "GRPO's per-sequence mean, compared with DAPO's normalisation by the batch's total tokens, shows "
        "a different mean generation length: the length bias (long wrong answers are punished less per token).",
        "agg=token_mean",
        (
            Metric("response length, final", "response_length/mean"),
            Metric("response length, last 25% of steps", "response_length/mean", "tail"),
            Metric("length of incorrect samples, last 25% of steps", "", "len_incorrect"),
            Metric("length of correct samples, last 25% of steps", "", "len_correct"),
            Metric("held-out accuracy, final", VAL_ACC),
        ),
        +1,
        2.0,
    ),
    Ablation(
        "format_weight",
        "verifier",
        "Format-reward weight 0 vs 0.1",
        "With format_weight = 0 the model starts, after some steps, to emit answers that cannot be parsed, "
        "and the accuracy evaluation breaks down with them.",
        "verifier=format",
        (
            Metric("held-out well-formed share, final", "val-aux/arithmetic/format/mean@1"),
            Metric("held-out well-formed share, mean over evals", "val-aux/arithmetic/format/mean@1", "mean"),
            Metric("held-out accuracy (flexible verifier, as trained), final", VAL_ACC),
            Metric("held-out accuracy re-scored by the strict verifier, final", "", "strict_acc"),
        ),
        -1,
        0.03,
    ),
    Ablation(
        "loss_variants",
        "recipe",
        "Loss variants: grpo, dapo, drgrpo, cispo, gspo (comparison, no claim)",
        "(no claim: the recipes side by side at one scale)",
        "recipe=dapo",
        (
            Metric("held-out accuracy, final", VAL_ACC),
            Metric("response length, final", "response_length/mean"),
        ),
        0,
        0.03,
    ),
)


def strict_accuracy(run: Run) -> float:
    """Share of the last validation dump's responses the default (strict) verifier credits."""
    import rewards

    dumps = sorted((run.path / "validation").glob("*.jsonl"), key=lambda p: int(p.stem))
    if not dumps:
        return float("nan")
    rows = [json.loads(line) for line in dumps[-1].read_text().splitlines() if line.strip()]
    hits = [rewards.compute_score("arithmetic", r["output"], r["gts"])["acc"] for r in rows]
    return float(np.mean(hits)) if hits else float("nan")


def _value(run: Run, m: Metric) -> float:
    if m.how == "strict_acc":
        return strict_accuracy(run)
    if m.how.startswith("len_"):
        from analysis.checks_curves import length_by_correctness

        part = length_by_correctness(run.samples("rollouts")).get(m.how[4:])
        if part is None or len(part[1]) == 0:
            return float("nan")
        v = np.asarray(part[1], dtype=float)
        return float(np.nanmean(v[-max(1, len(v) // 4) :]))
    s = run.series(m.key)
    if s is None or not np.isfinite(s.values).any():
        return float("nan")
    v = s.values[np.isfinite(s.values)]
    if m.how == "tail":
        return float(v[-max(1, v.size // 4) :].mean())
    return float(v[-1] if m.how == "last" else v.mean())


def _f(x: float, nd: int = 3, sign: bool = False) -> str:
    if x is None or not np.isfinite(x):
        return "n/a"
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def _ci(lo: float, hi: float) -> str:
    return "n/a" if not (np.isfinite(lo) and np.isfinite(hi)) else f"[{lo:.3f}, {hi:.3f}]"


def newest_dir(sweep: str, root: Path = Path("multirun")) -> Path | None:
    cands = sorted(p for p in root.glob(f"{sweep}-*") if p.is_dir())
    return cands[-1] if cands else None


def finished(runs: list[Run]) -> list[Run]:
    return [r for r in runs if (r.path / "summary.json").is_file()]


@functools.cache
def finished_runs(path: Path | None) -> tuple[Run, ...]:
    """The finished runs under a sweep directory, read once per page (tables and figure share them)."""
    return tuple(finished(find_runs(path))) if path else ()


def group_arms(ab: Ablation, runs: Iterable[Run]) -> dict[str, list[Run]]:
    """Runs by arm label ``<axis>=<value>`` (the recipe name when the axis is ``recipe``)."""
    arms: dict[str, list[Run]] = {}
    for r in runs:
        val = r.recipe if ab.axis == "recipe" else r.overrides.get(ab.axis, "(default)")
        arms.setdefault(f"{ab.axis}={val}", []).append(r)
    return arms


def paired(base: list[Run], arm: list[Run], m: Metric) -> np.ndarray:
    """Per-seed differences arm - baseline over the seeds both arms finished."""
    b = {r.seed: _value(r, m) for r in base}
    return np.array([_value(r, m) - b[r.seed] for r in arm if r.seed in b])


def seeds_needed(diffs: np.ndarray, delta: float) -> int | None:
    """Seeds for 80% power to detect ``delta`` with a two-sided 5% paired test (normal approximation).

    >>> seeds_needed(np.array([0.01, -0.03, 0.02, 0.0, -0.01]), 0.03)
    4
    """
    if diffs.size < 2 or not np.isfinite(diffs).all():
        return None
    sd = float(diffs.std(ddof=1))
    return max(2, int(np.ceil(((1.96 + 0.84) * sd / delta) ** 2)))


def verdict(d: np.ndarray, direction: int) -> str:
    """Verdict on per-seed differences for a claim predicting their sign ``direction``.

    >>> verdict(np.array([0.10, 0.12, 0.08, 0.11, 0.09]), +1), verdict(np.array([0.1, -0.1, 0.05, 0, -0.02]), +1)
    ('reproduced', 'not shown (null)')
    >>> verdict(np.array([0.10, 0.12, 0.08, 0.11, 0.09]), -1)
    'opposite'
    """
    lo, hi = t_ci(d)
    if direction == 0:
        return "comparison"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "too few seeds"
    if (lo > 0 and direction > 0) or (hi < 0 and direction < 0):
        return "reproduced"
    if lo > 0 or hi < 0:
        return "opposite"
    return "not shown (null)"


def planned_runs(sweep: str) -> int:
    """Number of runs the sweep file defines (product of its ``hydra.sweeper.params`` lists)."""
    import yaml

    from recipes.compose import CONF_DIR

    body = yaml.safe_load((CONF_DIR / "sweep" / f"{sweep}.yaml").read_text())
    return int(np.prod([len(str(v).split(",")) for v in body["hydra"]["sweeper"]["params"].values()]))


def compute_line(path: Path, runs: list[Run], total: int) -> str:
    rec = json.loads((path / "sweep.json").read_text()) if (path / "sweep.json").is_file() else {}
    mins = [json.loads((r.path / "summary.json").read_text()).get("minutes", 0.0) for r in runs]
    wall = f"{rec['wall_minutes']:.0f} wall minutes" if "wall_minutes" in rec else "wall time not recorded"
    return (
        f"{len(runs)} of {total} runs finished, {wall}, {sum(mins):.0f} run-minutes "
        f"(2 runs in parallel, 1 thread each, shared 2-core machine); directory `{path}`, "
        f"report `{path}/report/`"
    )


def section(ab: Ablation, path: Path | None, control_dir: Path | None = None) -> tuple[list[str], list[str]]:
    """(markdown lines of the section, one row of the overview table)."""
    src = " (seed document 004, “建议做的四组对照”, translated)" if ab.direction else ""
    out = [
        f"## {ab.title}",
        "",
        f"**Seeds' claim{src}.** {ab.claim}",
        "",
        f"Sweep: `conf/sweep/{ab.sweep}.yaml` (`make sweep SWEEP={ab.sweep}`).",
        "",
    ]
    runs = list(finished_runs(path))
    if not runs:
        out += ["**Not run.** No finished runs of this sweep exist; nothing is claimed.", ""]
        return out, [ab.title, "not run", "–", "–", "–"]
    arms = group_arms(ab, runs)
    base = arms.get(ab.baseline, [])
    seeds = sorted({r.seed for r in runs})
    out += [f"**Compute.** {compute_line(path, runs, planned_runs(ab.sweep))}.", ""]
    out += [
        "| metric | arm | seeds | mean | 95% CI (t) | Δ vs " + ab.baseline + " | Δ 95% CI (Welch) | "
        "Δ paired 95% CI |",
        "|---|---|---|---|---|---|---|---|",
    ]
    row = [ab.title, "", str(len(seeds)), "", ""]
    for i, m in enumerate(ab.metrics):
        bv = np.array([_value(r, m) for r in base])
        for label, rs in arms.items():
            v = np.array([_value(r, m) for r in rs])
            lo, hi = t_ci(v)
            cells = [
                m.label + (" (primary)" if i == 0 else ""),
                f"`{label}`",
                str(np.isfinite(v).sum()),
                _f(np.nanmean(v) if np.isfinite(v).any() else np.nan),
                _ci(lo, hi),
            ]
            if label == ab.baseline or not base:
                cells += ["–", "–", "–"]
            else:
                d, dlo, dhi = welch_diff_ci(bv, v)
                pd = paired(base, rs, m)
                plo, phi = t_ci(pd)
                cells += [_f(d, 3, sign=True), _ci(dlo, dhi), _ci(plo, phi)]
                if i == 0 and ab.direction:
                    v_ = verdict(pd, ab.direction)
                    n = seeds_needed(pd, ab.delta)
                    row[1] += f"{label}: {v_}; "
                    row[3] += f"{label}: {d:+.3f} {_ci(plo, phi)}; "
                    if v_ != "reproduced":
                        row[4] += f"{label}: ~{n} seeds for ±{ab.delta:g}; " if n else ""
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    if not base:
        out += [f"Baseline arm `{ab.baseline}` has no finished runs: no differences computed.", ""]
    if ab.control:
        lines, primary = control_table(ab, arms.get(ab.control[2], []), control_dir)
        out += lines
        if primary:
            row[1] = row[1].rstrip("; ") + f" (per step); vs the compute-matched control: {primary[0]}; "
            row[3] += f"{ab.control[2]} − control: {primary[1]}; "
    return out, [c.rstrip("; ") or "–" for c in row]


def control_table(
    ab: Ablation, arm: list[Run], path: Path | None
) -> tuple[list[str], tuple[str, str] | None]:
    """Rows comparing ``ab.control``'s arm of this sweep with the control sweep's runs (paired by seed).

    Also returns (verdict, "Δ [paired CI]") of that comparison on the primary metric, or None.
    """
    sweep, label, which = ab.control
    ctl = list(finished_runs(path))
    head = [f"**Control** (`conf/sweep/{sweep}.yaml`, `make sweep SWEEP={sweep}`): {label}."]
    if not ctl or not arm:
        return [head[0] + " Not run: no comparison.", ""], None
    out = [
        head[0] + f" Compute: {compute_line(path, ctl, planned_runs(sweep))}.",
        "",
        f"| metric | control mean [95% CI] | `{which}` − control | Δ 95% CI (Welch) | Δ paired 95% CI |",
        "|---|---|---|---|---|",
    ]
    primary = None
    for i, m in enumerate(ab.metrics):
        cv = np.array([_value(r, m) for r in ctl])
        av = np.array([_value(r, m) for r in arm])
        d, dlo, dhi = welch_diff_ci(cv, av)
        pd = paired(ctl, arm, m)
        plo, phi = t_ci(pd)
        if i == 0:
            v_ = verdict(pd, ab.direction)
            primary = ("no difference" if v_.startswith("not shown") else v_, f"{d:+.3f} {_ci(plo, phi)}")
        mean = _f(np.nanmean(cv) if np.isfinite(cv).any() else np.nan)
        out.append(
            f"| {m.label} | {mean} {_ci(*t_ci(cv))} | {_f(d, 3, sign=True)} | {_ci(dlo, dhi)} | {_ci(plo, phi)} |"
        )
    return out + [""], primary


def figure(ab: Ablation, path: Path | None, control_dir: Path | None, out: Path) -> Path | None:
    """Mean curve of the first logged metric per arm, with a 95% t band over seeds; None if no runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from analysis.report import aligned

    m = next((m for m in ab.metrics if m.key and not m.how.startswith(("len_", "strict"))), None)
    runs = finished_runs(path)
    if m is None or not runs:
        return None
    arms = group_arms(ab, runs)
    if ab.control and finished_runs(control_dir):
        arms[ab.control[1]] = list(finished_runs(control_dir))
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, rs in arms.items():
        grid, vals = aligned(rs, (m.key,))
        if not grid.size:
            continue
        with np.errstate(all="ignore"):
            mean = np.nanmean(vals, axis=0)
        lo, hi = np.array([t_ci(vals[:, j]) for j in range(grid.size)]).T
        (line,) = ax.plot(
            grid, mean, marker="o" if grid.size < 10 else None, ms=3, label=f"{label} (n={len(rs)})"
        )
        if len(rs) > 1:
            ax.fill_between(grid, lo, hi, color=line.get_color(), alpha=0.18, lw=0)
    ax.set_xlabel("RL step")
    ax.set_ylabel(m.label.split(",")[0])
    ax.set_title(f"{ab.title}\n(mean over seeds, 95% t band)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def render(dirs: dict[str, Path | None], notes: dict[str, str], fig_dir: Path | None = None) -> str:
    head = [
        "# Ablations at laptop scale",
        "",
        "Generated by `python -m benchmarks.ablations` from the sweep directories; numbers come only from "
        "runs made in this repository (local engine, ~1M-parameter Qwen2, arithmetic task, CPU). Do not edit "
        "by hand: edit the notes in `benchmarks/ablations_notes.md` and regenerate.",
        "",
        "Statistics: every run's value is its final logged value (or its mean over logged steps where "
        "said). Intervals are 95%: Student-t over seeds per arm; for differences, Welch (independent "
        "arms, as in `analysis.report`) and paired t over seeds (every arm of seed *s* starts from the "
        "same cold-start checkpoint, so the per-seed difference removes the checkpoint's own variance). "
        "Verdict: *reproduced* only if the paired interval of the primary metric excludes zero in the "
        "claimed direction; *opposite* if it excludes zero the other way; *not shown* otherwise. "
        "No correction for multiple comparisons; secondary metrics are descriptive.",
        "",
    ]
    overview = [
        "| ablation | verdict (primary metric) | seeds | Δ primary, paired 95% CI | seeds needed (80% power) |",
        "|---|---|---|---|---|",
    ]
    body: list[str] = []
    for ab in ABLATIONS:
        ctl_dir = dirs.get(ab.control[0]) if ab.control else None
        lines, row = section(ab, dirs.get(ab.sweep), ctl_dir)
        if fig_dir is not None:
            png = figure(ab, dirs.get(ab.sweep), ctl_dir, fig_dir / f"{ab.sweep}.png")
            if png is not None:
                at = next(i for i, line in enumerate(lines) if line.startswith("**Compute.**"))
                lines[at:at] = [f"![{ab.title}]({fig_dir.name}/{png.name})", ""]
        overview.append("| " + " | ".join(row) + " |")
        body += lines
        if ab.sweep in notes:
            body += [notes[ab.sweep].strip(), ""]
    tail = [notes["_end"].strip(), ""] if "_end" in notes else []
    intro = [notes["_intro"].strip(), ""] if "_intro" in notes else []
    return "\n".join(head + intro + ["## Overview", ""] + overview + [""] + body + tail) + "\n"


def read_notes(path: Path) -> dict[str, str]:
    """``## <sweep>`` sections of the hand-written notes file (interpretation, scale needed)."""
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    cur = None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            cur = line[3:].strip()
            out[cur] = ""
        elif cur:
            out[cur] += line + "\n"
    return out


def main(argv: list[str]) -> int:
    given = [Path(a) for a in argv if not a.startswith("out=")]
    out = Path(next((a.split("=", 1)[1] for a in argv if a.startswith("out=")), "docs/ablations.md"))
    dirs: dict[str, Path | None] = {ab.sweep: newest_dir(ab.sweep) for ab in ABLATIONS}
    dirs.update({ab.control[0]: newest_dir(ab.control[0]) for ab in ABLATIONS if ab.control})
    for d in given:
        name = d.name.rsplit("-", 2)[0]
        if name not in dirs:
            print(f"error: {d}: not a known sweep ({', '.join(dirs)})", file=sys.stderr)
            return 2
        dirs[name] = d
    notes = read_notes(Path(__file__).with_name("ablations_notes.md"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(dirs, notes, fig_dir=out.parent / "ablations"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
