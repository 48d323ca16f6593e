"""Seed 002's thinking-budget curve (§3.2-3.4): held-out accuracy under a hard thinking budget.

A *hard budget* (seed 002 §3.2) counts the reasoning tokens and, at the cap, cuts the reasoning
and moves on to the answer. :func:`budget_samples` does that with any sampler of
:mod:`core.sampling` (the local engine's own KV-cache sampler at laptop scale):

1. each held-out prompt gets ``n`` responses of up to ``max(budgets) + max_answer`` tokens;
2. a response's *reasoning* is its tokens before the first close-think or answer-open marker
   (``</think>``, ``<answer>``), all of its tokens when it has neither (:func:`reasoning_tokens`);
3. for a budget N: reasoning of at most N tokens is not cut and the response is scored as
   sampled; longer reasoning keeps its first N tokens (token ids, never re-tokenised), gets the
   template's close-think + answer-open text (``force_text``) appended, and the model writes the
   answer (at most ``max_answer`` tokens, sampled as the rest).

Every budget cuts the same sampled reasoning, so budgets are compared on paired samples; a
budget's outcome is still exactly what sampling under a hard cap of N tokens gives, because an
autoregressive sample's first N tokens do not depend on what follows them. Responses are scored
with the project's verifier (``rewards.compute_score``; correct = its ``acc``).

:func:`summarise` gives, per difficulty (the task's ``extra_info.k``, else ``digits``) and
overall, each budget's accuracy with a percentile-bootstrap 95% interval over prompts, the share
of responses the budget cut and the mean reasoning tokens kept; :func:`shape` reads the curve:
where it stops rising (the first budget not significantly below the peak, by a paired bootstrap
over prompts), how much it rose to there, and whether the largest budget is significantly below
the peak (a fall). Not covered: soft budgets (asking for fewer words), s1's "Wait" extension
(``analysis.budget``), budgets on models whose reasoning has no closing marker.

:func:`draw` (one panel per model, a line per difficulty level) and :func:`curve_table` (accuracy
per level x budget) show a recorded curve: ``make budget`` writes them, and the docs render them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis.metrics import bootstrap_ci, t_ci
from analysis.render import Table
from core.data import Prompt
from core.sampling import Sampler, score_text

#: the R1-Zero template's markers (arXiv:2501.12948, Table 1; the base corpus writes them unspaced)
MARKERS = ("</think>", "<answer>")
FORCE_TEXT = "</think><answer>"


@dataclass
class Budgeted:
    """One sampled response under one budget: the scored text and what the budget did to it."""

    prompt: int
    budget: int
    text: str
    think_tokens: int
    forced: bool
    acc: bool = False
    pred: str | None = None


@dataclass
class Sampled:
    """One full sample: its response ids and the number of reasoning tokens before a marker."""

    prompt: int
    ids: list[int]
    reasoning: int
    by_budget: dict[int, Budgeted] = field(default_factory=dict)


def reasoning_tokens(tokenizer: Any, ids: Sequence[int], markers: Sequence[str] = MARKERS) -> int:
    """Tokens of ``ids`` before the first of ``markers`` begins (``len(ids)`` if none occurs)."""
    text = tokenizer.decode(list(ids), skip_special_tokens=True)
    hits = [text.find(m) for m in markers if m in text]
    if not hits:
        return len(ids)
    pos, lo, hi = min(hits), 0, len(ids)
    while lo < hi:  # the largest j whose decoded prefix ends at or before the marker
        mid = (lo + hi + 1) // 2
        if len(tokenizer.decode(list(ids[:mid]), skip_special_tokens=True)) <= pos:
            lo = mid
        else:
            hi = mid - 1
    return lo


def budget_samples(
    sampler: Sampler,
    prompts: list[Prompt],
    n: int,
    budgets: Sequence[int],
    max_answer: int,
    force_text: str = FORCE_TEXT,
    markers: Sequence[str] = MARKERS,
) -> list[Sampled]:
    """``n`` samples per prompt, each cut at every budget and answered (see module; not scored)."""
    if not budgets or min(budgets) < 0:
        raise ValueError(f"[budget] budgets must be non-negative token counts, got {list(budgets)}")
    tok = sampler.tokenizer
    force = list(tok.encode(force_text, add_special_tokens=False))
    full = sampler.generate([p.ids for p in prompts], n, max(budgets) + max_answer)
    out = []
    for i, c in enumerate(full):
        out.append(Sampled(i // n, c.ids, reasoning_tokens(tok, c.ids, markers)))
    for b in sorted({int(x) for x in budgets}):
        cut = [s for s in out if s.reasoning > b]
        answers = sampler.generate([prompts[s.prompt].ids + s.ids[:b] + force for s in cut], 1, max_answer)
        for s, a in zip(cut, answers, strict=True):
            text = tok.decode(s.ids[:b] + force + a.ids, skip_special_tokens=True)
            s.by_budget[b] = Budgeted(s.prompt, b, text, b, True)
        for s in out:
            if s.reasoning <= b:
                text = tok.decode(s.ids, skip_special_tokens=True)
                s.by_budget[b] = Budgeted(s.prompt, b, text, s.reasoning, False)
    return out


def score(samples: list[Sampled], prompts: list[Prompt], reward_fn: Callable[..., Any]) -> None:
    """Fill ``acc`` and ``pred`` of every budgeted response with ``reward_fn`` (veRL's signature)."""
    for s in samples:
        for r in s.by_budget.values():
            _, r.acc, extra = score_text(reward_fn, prompts[s.prompt], r.text)
            r.pred = extra.get("pred")


def difficulty(p: Prompt) -> int:
    """A prompt's difficulty level: ``extra_info.k`` (terms of a chain sum), else ``digits``, else 0."""
    return int(p.extra_info.get("k", p.extra_info.get("digits", 0)) or 0)


def _matrix(samples: list[Sampled], budgets: list[int], key: str) -> tuple[list[int], np.ndarray]:
    """(prompt ids, per-prompt mean of ``key`` per budget: prompts x budgets)."""
    rows: dict[int, list[list[float]]] = defaultdict(list)
    for s in samples:
        rows[s.prompt].append([float(getattr(s.by_budget[b], key)) for b in budgets])
    ids = sorted(rows)
    return ids, np.array([np.mean(rows[i], axis=0) for i in ids]).reshape(len(ids), len(budgets))


def shape(acc: np.ndarray, budgets: list[int], n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Where a curve (per-prompt accuracy, prompts x budgets) rises, plateaus and whether it falls.

    ``plateau_from``: the smallest budget whose accuracy is not below the peak's by a paired 95%
    bootstrap interval over prompts; ``rise``: its accuracy minus budget ``budgets[0]``'s;
    ``fall``: the largest budget's minus the peak's (``falls`` when that interval is below zero).
    """
    mean = acc.mean(0)
    peak = int(np.argmax(mean))

    def diff(a: int, b: int) -> dict[str, float]:
        lo, hi = bootstrap_ci(acc[:, a] - acc[:, b], n_resamples=n_resamples, seed=seed)
        return {"mean": float(mean[a] - mean[b]), "lo": lo, "hi": hi}

    plateau = next(i for i in range(peak + 1) if diff(peak, i)["lo"] <= 0)
    rise, fall = diff(plateau, 0), diff(len(budgets) - 1, peak)
    return {
        "peak": budgets[peak],
        "plateau_from": budgets[plateau],
        "rise": rise,
        "rises": rise["lo"] > 0,
        "fall": fall,
        "falls": fall["hi"] < 0,
    }


def summarise(
    samples: list[Sampled],
    prompts: list[Prompt],
    budgets: Sequence[int],
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per difficulty level and ``all``: per budget accuracy [95% CI], cut share, mean reasoning kept."""
    bs = sorted({int(b) for b in budgets})
    groups: dict[str, list[Sampled]] = defaultdict(list)
    for s in samples:
        groups[f"k={difficulty(prompts[s.prompt])}"].append(s)
        groups["all"].append(s)
    out: dict[str, Any] = {}
    for name in ["all", *sorted(g for g in groups if g != "all")]:
        rows = groups[name]
        ids, acc = _matrix(rows, bs, "acc")
        _, forced = _matrix(rows, bs, "forced")
        _, think = _matrix(rows, bs, "think_tokens")
        per_budget = {}
        for j, b in enumerate(bs):
            lo, hi = bootstrap_ci(acc[:, j], n_resamples=n_resamples, seed=seed)
            per_budget[str(b)] = {
                "acc": float(acc[:, j].mean()),
                "lo": lo,
                "hi": hi,
                "cut_share": float(forced[:, j].mean()),
                "mean_think": float(think[:, j].mean()),
            }
        out[name] = {
            "prompts": len(ids),
            "samples": len(rows),
            "mean_reasoning_uncut": float(np.mean([s.reasoning for s in rows])),
            "budgets": per_budget,
            "shape": shape(acc, bs, n_resamples, seed),
        }
    return out


def describe(group: dict[str, Any]) -> str:
    """One sentence on a curve's shape from :func:`summarise`'s group (rises / plateaus / falls).

    >>> g = {"budgets": {"0": {"acc": 0.2}, "8": {"acc": 0.6}, "16": {"acc": 0.58}},
    ...      "shape": {"plateau_from": 8, "peak": 8, "rises": True, "falls": False,
    ...                "rise": {"mean": 0.4, "lo": 0.3, "hi": 0.5},
    ...                "fall": {"mean": -0.02, "lo": -0.06, "hi": 0.01}}}
    >>> describe(g)
    'rises 0.20 → 0.60 by N=8 (+0.40 [+0.30, +0.50]); plateaus from N=8; does not fall (N=16 vs peak at N=8: -0.02 [-0.06, +0.01])'
    """
    sh, bud = group["shape"], group["budgets"]
    first, last = min(bud, key=int), max(bud, key=int)
    r, f = sh["rise"], sh["fall"]
    rise = (
        f"rises {bud[first]['acc']:.2f} → {bud[str(sh['plateau_from'])]['acc']:.2f} by N={sh['plateau_from']} "
        f"({r['mean']:+.2f} [{r['lo']:+.2f}, {r['hi']:+.2f}])"
        if sh["rises"]
        else f"no significant rise from N={first}"
    )
    fall = "falls" if sh["falls"] else "does not fall"
    return (
        f"{rise}; plateaus from N={sh['plateau_from']}; {fall} (N={last} vs peak at N={sh['peak']}: "
        f"{f['mean']:+.2f} [{f['lo']:+.2f}, {f['hi']:+.2f}])"
    )


def across_seeds(curves: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Per level, one model's curves of several RL seeds (:func:`summarise`'s groups by seed) as one:
    accuracy per budget (mean and 95% t interval over seeds), each seed's plateau budget, how many
    seeds rise / fall, and whether the plateau budget never shrinks as the level rises, per seed.

    >>> g = lambda a, p: {"budgets": {"0": {"acc": 0.1}, "8": {"acc": a}},
    ...                   "shape": {"plateau_from": p, "rises": a > 0.1, "falls": False}}
    >>> out = across_seeds({0: {"k=2": g(0.9, 8), "k=3": g(0.5, 8)}, 1: {"k=2": g(0.7, 0), "k=3": g(0.5, 8)}})
    >>> out["groups"]["k=2"]["budgets"]["8"]["acc"], out["groups"]["k=2"]["plateau_from"], out["groups"]["k=2"]["rises"]
    (0.8, [8, 0], 2)
    >>> out["ordered_seeds"], out["seeds"]
    (2, [0, 1])
    """
    seeds = sorted(curves)
    groups: dict[str, Any] = {}
    for name in curves[seeds[0]]:
        per = [curves[s][name] for s in seeds]
        cells = {}
        for b in sorted(per[0]["budgets"], key=int):
            vals = [c["budgets"][b]["acc"] for c in per]
            lo, hi = t_ci(vals)
            cells[b] = {"acc": float(np.mean(vals)), "lo": lo, "hi": hi}
        groups[name] = {
            "budgets": cells,
            "plateau_from": [int(c["shape"]["plateau_from"]) for c in per],
            "rises": sum(bool(c["shape"]["rises"]) for c in per),
            "falls": sum(bool(c["shape"]["falls"]) for c in per),
        }
    levels = sorted((g for g in groups if g.startswith("k=")), key=lambda g: int(g[2:]))
    ordered = sum(
        all(
            groups[a]["plateau_from"][i] <= groups[b]["plateau_from"][i]
            for a, b in itertools.pairwise(levels)
        )
        for i in range(len(seeds))
    )
    return {"seeds": seeds, "groups": groups, "ordered_seeds": ordered}


# --- the curve as a figure and a table (``make budget``'s PNG, the docs' block) -----------------

LABELS = {
    "base": "base model (before RL)",
    "rl": "after RL",
    "rl_seeds": "after RL: mean over RL seeds (95% t band)",
}


def by_budget(group: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """A curve's ``(budget, cell)`` pairs in budget order (results files sort keys as strings)."""
    return sorted(((int(b), v) for b, v in group["budgets"].items()), key=lambda bv: bv[0])


def draw(models: dict[str, Any]) -> Any:
    """One panel per model: accuracy against the budget, a line (and 95% band) per difficulty level."""
    import matplotlib.pyplot as plt  # only drawing needs it (the caller sets the backend)

    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 3.6), sharey=True, squeeze=False)
    for ax, (label, m) in zip(axes[0], models.items(), strict=True):
        for name, g in m["groups"].items():
            xs, cells = zip(*by_budget(g), strict=True)
            style = {"color": "black", "lw": 2.2} if name == "all" else {"lw": 1.2}
            line = ax.plot(xs, [v["acc"] for v in cells], "o-", ms=3, label=name, **style)[0]
            lo, hi = [v["lo"] for v in cells], [v["hi"] for v in cells]
            ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.12)
        ax.set(
            xlabel="thinking budget N (reasoning tokens)", title=LABELS.get(label, label), ylim=(-0.02, 1.02)
        )
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("held-out accuracy (T=1)")
    axes[0][-1].legend(fontsize=7, title="difficulty", title_fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def curve_table(m: dict[str, Any]) -> str:
    """Markdown: one model's accuracy [95% CI] per level x budget and the share each budget cut."""
    groups = m["groups"]
    budgets = [b for b, _ in by_budget(groups["all"])]
    rows = [
        [g, *[f"{v['acc']:.2f} [{v['lo']:.2f}, {v['hi']:.2f}]" for _, v in by_budget(groups[g])]]
        for g in groups
    ]
    rows.append(["share cut (all)", *[f"{v['cut_share']:.2f}" for _, v in by_budget(groups["all"])]])
    return Table(["level", *[f"N={b}" for b in budgets]], rows).markdown()
