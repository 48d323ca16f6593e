"""Verifier benchmark: FN/FP rates and latency of our ``math`` verifier vs math-verify and veRL's scorers.

Run: ``python -m benchmarks.bench_rewards`` (``make bench-rewards``). Two sets, reported apart:

- **in-sample**: the tuning table ``tests/rewards/math_table.jsonl`` (labelled by this project while
  building the verifier: a regression table, optimistic by construction);
- **held-out**: ``benchmarks/heldout/*.jsonl``, (response, gold, label) cases transcribed from other
  projects' verifier tests and a published hard-to-verify benchmark, with their original labels
  (provenance in ``benchmarks/heldout/README.md``). Never used to design the verifier. Rows that
  repeat a tuning-table case are left out of the held-out numbers (counted as ``overlap``).

Every scorer sees the same input: the response (an already-extracted answer, ``response_kind ==
"extracted"``, is wrapped as ``\\boxed{answer}``) and the gold. Each row is scored single-threaded
after one warm-up call; the script reports n, false negatives (right answers scored 0), false
positives (wrong answers credited), their rates, and p50/p99/max latency per call, per scorer, per
set, per source and per answer format (a coarse class of the gold: integer, fraction, interval...).
Results go to ``results/bench_rewards/<name>.json`` (``--out``) with the git commit, dirty flag,
command, package versions, cores and load average; a table is printed.

Scorers: ours (``rewards.compute_score``, default strict mode: only a marked final answer counts),
ours in ``answer_mode="flexible"`` (also reads an unmarked final answer, as math-verify does), ours
with the explicit numeric tolerance option (``--tolerance``), math-verify used as its README shows (``parse`` + ``verify``), veRL 0.9.1's
``math_reward``, ``math_dapo`` and ``math_verify`` wrapper (``--only`` selects). veRL's
``prime_math`` is never called: it runs ``eval()`` on model text.

What it does not do: assert anything (a benchmark, not a test) or measure multi-threaded throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "rewards" / "math_table.jsonl"
HELDOUT = ROOT / "benchmarks" / "heldout"
RESULTS = ROOT / "results" / "bench_rewards"
Scorer = Callable[[str, str, str], bool]


def _compact(s: str) -> str:
    return re.sub(r"[\s$]", "", s)


def load_sets() -> tuple[list[dict], list[dict], int]:
    """(in-sample rows, held-out rows without tuning-table repeats, number of repeats left out)."""
    insample = [json.loads(x) for x in TABLE.read_text().splitlines()]
    for r in insample:
        r.update(source="tuning_table", response_kind="full")
    seen = [(_compact(r["gold"]), _compact(r["response"])) for r in insample]
    heldout: list[dict] = []
    overlap = 0
    for path in sorted(HELDOUT.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            g, p = _compact(r["gold"]), _compact(r["response"])
            if any((g in sg or sg in g) and (p in sp or sp in p) for sg, sp in seen if g and p):
                overlap += 1
                continue
            r.setdefault("data_source", "math")
            heldout.append(r)
    return insample, heldout, overlap


def response_text(r: dict) -> str:
    return "\\boxed{" + r["response"] + "}" if r.get("response_kind") == "extracted" else r["response"]


_FORMATS: list[tuple[str, re.Pattern[str]]] = [
    ("matrix", re.compile(r"\\begin\{[pbvBV]?matrix")),
    ("text", re.compile(r"\\text\{[^}]*[a-z]{3}[^}]*\}.*[a-z]{3}|^[^\\$]*[A-Za-z]{4,}[^\\]*$")),
    ("interval/set", re.compile(r"\\cup|\\infty|∞|\\\{|^\$?[\[(][^,]+,[^,]+[\])]\$?$|\\in(?![a-z])")),
    ("inequality", re.compile(r"<|>|\\[lg]eq?|\\[lg]eqslant|≥|≤|\\ne")),
    ("tuple/list", re.compile(r",")),
    ("equation", re.compile(r"=")),
    ("percent", re.compile(r"%")),
    ("integer", re.compile(r"^\$?[+-]?\d+\$?$")),
    ("decimal", re.compile(r"^\$?[+-]?\d*\.\d+\$?$")),
    ("fraction", re.compile(r"^\$?[+-]?(?:\\[dt]?frac\s*\{?\d+\}?\s*\{?\d+\}?|\d+\s*/\s*\d+)\$?$")),
    ("expression", re.compile(r"[a-zA-Z]")),
]


def answer_format(gold: str) -> str:
    """Coarse class of a gold answer (for the per-format table); the first pattern that matches."""
    g = gold.strip()
    if "####" in g:
        g = g.rsplit("####", 1)[1].strip()
    for name, pat in _FORMATS:
        if pat.search(g):
            if name == "expression" and not re.search(r"[a-zA-Z]{2}|[a-zA-Z]", re.sub(r"\\[a-z]+", "", g)):
                return "constant"
            return name
    return "other"


def _scorers(tolerance: float) -> dict[str, Scorer]:
    import rewards
    from rewards.registry import resolve
    from rewards.sources.math import gold_answer

    rewards.warmup()  # start the SymPy worker, as the training engines do before scoring

    def ours(ds: str, resp: str, gold: str) -> bool:
        return bool(rewards.compute_score(ds, resp, gold)["acc"])

    def ours_flex(ds: str, resp: str, gold: str) -> bool:
        mode = "flexible" if resolve(ds)[0] in rewards.FLEXIBLE_SOURCES else "strict"
        return bool(rewards.compute_score(ds, resp, gold, answer_mode=mode)["acc"])

    def ours_tol(ds: str, resp: str, gold: str) -> bool:
        return bool(rewards.compute_score(ds, resp, gold, rel_tol=tolerance)["acc"])

    def math_verify(ds: str, resp: str, gold: str) -> bool:
        from math_verify import parse, verify

        g = gold_answer(gold)
        gp = parse(g) if ("$" in g or "\\boxed" in g) else parse("\\boxed{" + g + "}")
        p = parse(resp)
        return bool(gp and p and verify(gp, p))

    def verl_math_reward(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_reward

        return math_reward.compute_score(resp, gold_answer(gold)) == 1.0

    def verl_math_dapo(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_dapo

        return bool(math_dapo.compute_score(resp, gold_answer(gold))["acc"])

    def verl_math_verify(ds: str, resp: str, gold: str) -> bool:
        from verl.utils.reward_score import math_verify as mv

        return mv.compute_score(resp, gold_answer(gold)) == 1.0

    out = {"ours": ours, "ours (answer_mode=flexible)": ours_flex}
    if tolerance > 0:
        out[f"ours (rel_tol={tolerance:g})"] = ours_tol
    out.update(
        {
            "math-verify": math_verify,
            "veRL math_reward": verl_math_reward,
            "veRL math_dapo": verl_math_dapo,
            "veRL math_verify wrapper": verl_math_verify,
        }
    )
    return out


def _score_rows(fn: Scorer, rows: list[dict]) -> list[tuple[bool, float]]:
    fn("math", r"\boxed{1}", "1")  # warm-up (imports, worker start-up)
    out = []
    for r in rows:
        t = time.perf_counter()
        try:
            got = bool(fn(r["data_source"], response_text(r), r["gold"]))
        except Exception:  # noqa: BLE001 - a scorer that raises scores 0
            got = False
        out.append((got, time.perf_counter() - t))
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def summarize(rows: Iterable[dict], scored: Iterable[tuple[bool, float]], limit_s: float) -> dict[str, Any]:
    """n, FN, FP, their rates and latency percentiles of one group of rows."""
    rows, scored = list(rows), list(scored)
    pos = [g for r, (g, _) in zip(rows, scored, strict=True) if r["label"]]
    neg = [g for r, (g, _) in zip(rows, scored, strict=True) if not r["label"]]
    lat = [t for _, t in scored]
    fn, fp = sum(not g for g in pos), sum(g for g in neg)
    return {
        "n": len(rows),
        "n_pos": len(pos),
        "n_neg": len(neg),
        "FN": fn,
        "FP": fp,
        "FN_rate": fn / len(pos) if pos else None,
        "FP_rate": fp / len(neg) if neg else None,
        "latency_ms": {
            "p50": 1000 * statistics.median(lat) if lat else None,
            "p99": 1000 * _pct(lat, 0.99),
            "max": 1000 * max(lat) if lat else None,
            "over_limit": sum(t > limit_s for t in lat),
        },
    }


def grouped(
    rows: list[dict], scored: list[tuple[bool, float]], key: Callable[[dict], str], limit_s: float
) -> dict:
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[key(r)].append(i)
    return {
        k: summarize([rows[i] for i in idx], [scored[i] for i in idx], limit_s)
        for k, idx in sorted(groups.items())
    }


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def provenance() -> dict[str, Any]:
    """Commit, dirty flag, command, package versions, machine -- what a results file must carry."""
    from importlib.metadata import PackageNotFoundError, version

    vers = {"python": sys.version.split()[0]}
    for pkg in ("math-verify", "sympy", "latex2sympy2_extended", "verl", "rlvr-recipes"):
        try:
            vers[pkg] = version(pkg)
        except PackageNotFoundError:
            vers[pkg] = None
    return {
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.bench_rewards", *sys.argv[1:]]),
        "versions": vers,
        "machine": {"cores": os.cpu_count(), "loadavg": list(os.getloadavg())},
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def write_results(payload: dict[str, Any], path: Path) -> Path:
    """Write one results file (the single place to swap for a shared results writer)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
    return path


def _fmt(s: dict[str, Any]) -> str:
    fnr = "-" if s["FN_rate"] is None else f"{100 * s['FN_rate']:.1f}"
    fpr = "-" if s["FP_rate"] is None else f"{100 * s['FP_rate']:.1f}"
    return f"{s['n']:5d} {s['FN']:4d} ({fnr:>5}%) {s['FP']:4d} ({fpr:>5}%)"


def print_table(res: dict[str, Any]) -> None:
    for set_name, per_scorer in res["sets"].items():
        names = list(per_scorer)
        print(f"\n== {set_name}  (cells: n FN (FN%) FP (FP%))")
        print(f"{'group':40s} | " + " | ".join(f"{n[:30]:>30s}" for n in names))
        keys = [("all", None)] + [
            (f"source={k}", ("by_source", k)) for k in per_scorer[names[0]]["by_source"]
        ]
        keys += [(f"format={k}", ("by_format", k)) for k in per_scorer[names[0]]["by_format"]]
        for label, path in keys:
            cells = [per_scorer[n]["all"] if path is None else per_scorer[n][path[0]][path[1]] for n in names]
            print(f"{label[:40]:40s} | " + " | ".join(f"{_fmt(c):>30s}" for c in cells))
        lat = " | ".join(
            f"{n[:20]}: p50 {s['all']['latency_ms']['p50']:.1f} p99 {s['all']['latency_ms']['p99']:.1f} "
            f"max {s['all']['latency_ms']['max']:.0f} ms"
            for n, s in per_scorer.items()
        )
        print(f"latency: {lat}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only", default="", help="comma-separated substrings: run only scorers whose name contains one"
    )
    ap.add_argument(
        "--tolerance",
        type=float,
        default=1e-2,
        help="rel_tol of the extra 'ours (rel_tol=...)' scorer; 0 = skip",
    )
    ap.add_argument(
        "--out", default="latest", help="results file name under results/bench_rewards/ (without .json)"
    )
    args = ap.parse_args(argv)
    insample, heldout, overlap = load_sets()
    limit_s = 1.0  # compute_score's default timeout_s
    sets = {"in_sample": insample, "held_out": heldout}
    res: dict[str, Any] = {
        "provenance": provenance(),
        "limit_s": limit_s,
        "held_out_overlap_left_out": overlap,
        "sets": {k: {} for k in sets},
    }
    t_cpu, t_wall = time.process_time(), time.perf_counter()
    only = [s for s in args.only.split(",") if s]
    for name, fn in _scorers(args.tolerance).items():
        if only and not any(s in name for s in only):
            continue
        for set_name, rows in sets.items():
            scored = _score_rows(fn, rows)
            res["sets"][set_name][name] = {
                "all": summarize(rows, scored, limit_s),
                "by_source": grouped(rows, scored, lambda r: r["source"], limit_s),
                "by_format": grouped(rows, scored, lambda r: answer_format(r["gold"]), limit_s),
                "misses": [r["id"] for r, (g, _) in zip(rows, scored, strict=True) if g != r["label"]],
            }
            print(f"{name:32s} {set_name:10s} {_fmt(res['sets'][set_name][name]['all'])}", flush=True)
    res["cpu_s"], res["wall_s"] = time.process_time() - t_cpu, time.perf_counter() - t_wall
    path = write_results(res, RESULTS / f"{args.out}.json")
    print_table(res)
    print(
        f"\nheld-out rows repeating a tuning-table case, left out: {overlap}\nwrote {path.relative_to(ROOT)}"
    )
    return res


if __name__ == "__main__":
    main()
