"""Markdown tables of a ``benchmarks.bench_rewards`` results file (rendered, never typed by hand).

What it does: ``render(results)`` returns the tables the benchmark prints and writes next to its
JSON: the protocol result on ``benchmarks/heldout/`` (the ex-held-out development set: its per-format
totals steered verifier rounds 2, 4 and 6, so every label calls it a development set; the results
files keep their ``held_out`` keys) per source and per answer format, ours
(strict / flexible) beside math-verify; totals over all sources and out of sample for both; every
case at every level; the other scorers; latency (cold / warm); the in-sample table.

What it does not do: compute anything that is not in the results file.
"""

from __future__ import annotations

from typing import Any

OURS, FLEX, MV = "ours", "ours (answer_mode=flexible)", "math-verify"
# how the results files' set keys are shown: ``benchmarks/heldout/`` steered the design (a development set)
SET_LABELS = {"held_out_protocol": "ex-held-out dev (protocol level)"}


def _c(s: dict[str, Any] | None, kind: str = "FN") -> str:
    if not s:
        return "-"
    n = s["n_pos"] if kind == "FN" else s["n_neg"]
    return f"{s[kind]}/{n}" if n else "-"


def _table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _group(ho: dict[str, Any], name: str, level: str, part: str, key: str) -> dict[str, Any] | None:
    return ho.get(name, {}).get(level, {}).get(part, {}).get(key)


def _protocol_rows(res: dict[str, Any], part: str, keys: list[str]) -> list[list[str]]:
    ho, rows = res["held_out"], []
    for k in keys:
        cells = [_group(ho, n, "protocol", part, k) for n in (OURS, FLEX, MV)]
        if not any(cells):
            continue
        first = next(c for c in cells if c)
        lead = [k]
        if part == "by_source":
            s = res["sources"][k]
            lead += [s["level"], ", ".join(s["in_sample_for"] + s.get("informed", [])) or "-"]
        lead.append(f"{first['n']} ({first['n_pos']}+/{first['n_neg']}-)")
        fn = f"{_c(cells[0])} / {_c(cells[1])}"
        fp = f"{_c(cells[0], 'FP')} / {_c(cells[1], 'FP')}"
        rows.append(lead + [fn, _c(cells[2]), fp, _c(cells[2], "FP")])
    return rows


def _totals_rows(res: dict[str, Any]) -> list[list[str]]:
    t = res["totals"]
    rows = []
    for label, key in (("all sources", "all"), ("out of sample for both", "out_of_sample_for_both")):
        cells = [t.get(n, {}).get(key) for n in (OURS, FLEX, MV)]
        first = next((c for c in cells if c), None)
        if first is None:
            continue
        fn = f"{_c(cells[0])} / {_c(cells[1])}"
        fp = f"{_c(cells[0], 'FP')} / {_c(cells[1], 'FP')}"
        rows.append([f"**{label}**", f"{first['n']}", fn, _c(cells[2]), fp, _c(cells[2], "FP")])
    return rows


def _levels_rows(res: dict[str, Any], part: str) -> list[list[str]]:
    ho = res["held_out"]
    keys = sorted({k for n in ho for lv in ho[n].values() for k in lv.get(part, {})})
    rows = []
    for k in keys:
        cols = [
            (OURS, "answer"),
            (MV, "answer"),
            (OURS, "response"),
            (FLEX, "response"),
            (MV, "response"),
        ]
        cells = [_group(ho, n, lv, part, k) for n, lv in cols]
        rows.append([k] + [f"{_c(c)}, {_c(c, 'FP')}" for c in cells])
    return rows


def _latency_rows(res: dict[str, Any]) -> list[list[str]]:
    rows = []
    for name, sets in res.get("latency_ms", {}).items():
        for set_name, passes in sets.items():
            for p, s in passes.items():
                if s.get("p50") is None:
                    continue
                rows.append(
                    [
                        name,
                        SET_LABELS.get(set_name, set_name),
                        p,
                        f"{s['p50']:.2f}",
                        f"{s['p99']:.1f}",
                        f"{s['max']:.0f}",
                        str(s["over_limit"]),
                        str(s["cut_by_limit"]) if "cut_by_limit" in s else "-",
                    ]
                )
    return rows


def _remaining_rows(res: dict[str, Any]) -> list[list[str]]:
    by = res.get("remaining_misses_out_of_sample", {}).get("by_format", {})
    keys = sorted((k for k in by if k != "all"), key=lambda k: -by[k]["ours"]) + (
        ["all"] if "all" in by else []
    )
    return [
        [k, str(by[k]["ours"]), str(by[k]["math_verify_too"]), str(by[k]["credited_with_tolerance"])]
        for k in keys
    ]


def _development_rows(res: dict[str, Any]) -> list[list[str]]:
    dev, rows = res.get("development", {}), []
    for k, s in res.get("development_sources", {}).items():
        cells = [dev.get(n, {}).get("by_source", {}).get(k) for n in (OURS, FLEX, MV)]
        if not any(cells):
            continue
        n = next(c for c in cells if c)
        fn, fp = f"{_c(cells[0])} / {_c(cells[1])}", f"{_c(cells[0], 'FP')} / {_c(cells[1], 'FP')}"
        rows.append(
            [
                k,
                s["level"],
                f"{n['n']} ({n['n_pos']}+/{n['n_neg']}-)",
                fn,
                _c(cells[2]),
                fp,
                _c(cells[2], "FP"),
            ]
        )
    return rows


def render(res: dict[str, Any]) -> str:
    """All tables of one results file as markdown."""
    head = [
        "",
        "n",
        "FN ours strict / flexible",
        "FN math-verify",
        "FP ours strict / flexible",
        "FP math-verify",
    ]
    src_head = ["source", "level", "in-sample for (or informed)"] + head[1:]
    fmt_keys = sorted({k for n in res["held_out"] for k in res["held_out"][n]["protocol"]["by_format"]})
    lvl_head = ["", "ours answer", "math-verify answer", "ours response strict", "ours response flexible"]
    lvl_head.append("math-verify response")
    other = [
        [
            n,
            _c(t["all"]),
            _c(t["all"], "FP"),
            _c(t["out_of_sample_for_it"]),
            _c(t["out_of_sample_for_it"], "FP"),
        ]
        for n, t in res["totals"].items()
    ]
    ins = [[n, _c(v["response"]["all"]), _c(v["response"]["all"], "FP")] for n, v in res["in_sample"].items()]
    prov = res.get("provenance", {})
    parts = [
        f"Rendered from the results of `{prov.get('command', '?')}` at commit `{prov.get('git_commit', '?')[:12]}`"
        f"{' (dirty)' if prov.get('git_dirty') else ''}. Cells: misses/cases (FN over correct cases, FP over wrong ones).",
        "\n### Ex-held-out development set (its per-format totals steered rounds 2, 4 and 6: not held out),"
        " protocol level (each source at its own level), per source\n",
        _table(src_head, _protocol_rows(res, "by_source", list(res["sources"]))),
        "\n### Ex-held-out development set, totals, protocol level\n",
        _table(head, _totals_rows(res)),
        "\n### Ex-held-out development set, protocol level, per answer format\n",
        _table(["format"] + head[1:], _protocol_rows(res, "by_format", fmt_keys)),
        "\n### Ex-held-out development set, every case at every level (cells: FN, FP), per source\n",
        _table(lvl_head, _levels_rows(res, "by_source")),
        "\n### Ex-held-out development set, every case at every level (cells: FN, FP), per answer format\n",
        _table(lvl_head, _levels_rows(res, "by_format")),
        "\n### Ex-held-out development set, all scorers, protocol level (FN, FP): all sources / out of sample"
        " for that scorer\n",
        _table(["scorer", "FN all", "FP all", "FN out-of-sample-for-it", "FP out-of-sample-for-it"], other),
        "\n### Ex-held-out development set, our misses of correct answers, out of sample for both: also missed"
        " by math-verify / credited by"
        " the opt-in tolerance\n",
        _table(
            ["format", "ours FN", "math-verify misses too", "credited with rel_tol"], _remaining_rows(res)
        ),
        "\n### Development split, row-read (other projects' cases read row by row while designing the verifier),"
        " each source at its level\n",
        _table(["source", "level"] + head[1:], _development_rows(res)),
        "\n### In-sample tuning table (response level)\n",
        _table(["scorer", "FN", "FP"], ins),
        "\n### Latency per call (ms): cold = fresh worker after warmup, first pass (the target); warm = same answers again; new_answers = same worker, parse caches cleared; cold_cpu = CPU time of the cold pass. The limit (1 s) is CPU time of the verifier with a 4 s wall-clock ceiling (files before round 4: wall time); cut by the limit = cold calls refused because they reached it\n",
        _table(
            ["scorer", "set", "pass", "p50", "p99", "max", "over limit (this clock)", "cut by the limit"],
            _latency_rows(res),
        ),
    ]
    return "\n".join(parts) + "\n"
