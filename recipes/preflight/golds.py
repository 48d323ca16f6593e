"""Gold self-check: on sampled rows, the configured reward function credits the gold answer written as
a response, and does not credit a perturbed gold written the same way.

A gold answer becomes a response in each of the answer forms of :data:`FORMS` in turn (an
``<answer>`` tag after the reasoning, ``\\boxed{}``, GSM8K's ``####``, ``Answer:``, the bare
answer); the first form the reward credits is the row's form (remembered for the reward check).
A gold stored as a JSON object (e.g. countdown's ``{"target", "numbers"}``) is a problem
specification, not an answer: the row's ``extra_info.solution`` is used when present, else the
row is counted as skipped. :func:`perturb` changes the answer's value (the last number + 1, or a
character appended), so a credited perturbation means the verifier would pay for a wrong answer.
Calls go through :meth:`Context.call_reward`, so their times feed the reward check's p99.
Not covered: golds with several accepted answers are checked on the first; code rows (their gold
is a test suite) are skipped unless ``extra_info.solution`` holds a reference program.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.sampling import grade
from recipes.preflight.context import Context, sel
from recipes.preflight.data import row_dict

#: answer form -> how a response carrying ``answer`` is written.
FORMS = {
    "answer_tag": "<think>The computation gives the result.</think><answer>{a}</answer>",
    "boxed": "The computation gives the result, so the answer is $\\boxed{{{a}}}$.",
    "hashes": "The computation gives the result.\n#### {a}",
    "answer_line": "The computation gives the result.\nAnswer: {a}",
    "bare": "{a}",
}
_LAST_INT = re.compile(r"(\d+)(?!.*\d)", re.DOTALL)


def perturb(answer: str) -> str:
    """A wrong answer close to ``answer``: its last number + 1, else one character appended.

    >>> perturb("1278"), perturb("\\\\frac{1}{2}"), perturb("(6 + 4) * 3"), perturb("olleh")
    ('1279', '\\\\frac{1}{3}', '(6 + 4) * 4', 'ollehq')
    """
    m = _LAST_INT.search(answer)
    if m is None:
        return answer + "q"
    return answer[: m.start()] + str(int(m.group(1)) + 1) + answer[m.end() :]


def gold_answer(gold: Any, extra: dict[str, Any]) -> str | None:
    """The answer text of a gold (the first of several; ``extra_info.solution`` for a JSON-object
    gold), or None.

    >>> gold_answer(["12", "twelve"], {}), gold_answer('{"target": 3}', {"solution": "1 + 2"})
    ('12', '1 + 2')
    """
    if isinstance(gold, (list, tuple)):
        if not gold:
            return None
        gold = gold[0]
    text = str(gold)
    if text.lstrip().startswith("{"):
        try:
            if isinstance(json.loads(text), dict):
                sol = extra.get("solution")
                return str(sol) if sol else None
        except ValueError:
            pass
    return text


def credited(ctx: Context, src: str, text: str, gold: Any, extra: dict[str, Any]) -> tuple[bool, Any]:
    """(credited?, raw result) of one reward call; an exception counts as not credited."""
    try:
        res = ctx.call_reward(src, text, gold, extra)
        return grade(res)[1], res
    except Exception as e:  # noqa: BLE001 - reported by the caller with the row
        return False, f"{type(e).__name__}: {e}"


def _reason(res: Any) -> str:
    return str(res.get("reason", "")) if isinstance(res, dict) else str(res)


def check_row(ctx: Context, path: str, i: int, row: dict[str, Any]) -> tuple[str, str]:
    """('ok'|'skip'|'uncredited'|'credits_wrong', detail) for one row; remembers its answer form."""
    skey = str(sel(ctx.cfg, "data.reward_fn_key", "data_source"))
    src, gold = row.get(skey), (row.get("reward_model") or {}).get("ground_truth")
    extra = dict(row.get("extra_info") or {})
    answer = gold_answer(gold, extra)
    if answer is None:
        return "skip", f"row {i}: gold {str(gold)[:60]!r} is not an answer and extra_info has no solution"
    last: Any = None
    for form, tpl in FORMS.items():
        ok, last = credited(ctx, src, tpl.format(a=answer), gold, extra)
        if ok:
            ctx.gold_forms[f"{path}:{i}"] = form
            wrong = perturb(answer)
            bad, res = credited(ctx, src, tpl.format(a=wrong), gold, extra)
            if bad:
                return (
                    "credits_wrong",
                    f"row {i} ({src}): gold {answer[:60]!r} and the wrong {wrong[:60]!r} both credited",
                )
            return "ok", form
    return (
        "uncredited",
        f"row {i} ({src}): gold {answer[:60]!r} not credited in any form ({_reason(last)[:120]})",
    )


def _needs_worker(ctx: Context) -> bool:
    """Whether a data source is verified symbolically (math, gsm8k: rewards' SymPy worker process)."""
    from rewards.registry import resolve  # the verifier registry

    names = set()
    for src in ctx.report.facts.get("data_sources", {}):
        try:
            names.add(resolve(src)[0])
        except KeyError:
            continue
    return bool(names & {"math", "gsm8k"})


def check_golds(ctx: Context) -> dict[str, float]:
    """Self-verify the golds of ``settings.sample`` rows per file (stratified by data source)."""
    fn, desc = ctx.reward_fn()
    if fn is None:
        return {}
    if ctx.is_project_reward() and _needs_worker(ctx):
        import rewards  # the verifiers' SymPy worker starts once, outside every call's time limit

        with ctx.report.timed("reward_worker_startup"):
            rewards.warmup()
    total = 0
    for key, path in ctx.files():
        t = ctx.table(path)
        if t is None or "reward_model" not in t.column_names:
            continue
        rows = ctx.sample_rows(path, int(ctx.settings.sample))
        total += len(rows)
        out: dict[str, list[str]] = {}
        for i in rows:
            status, detail = check_row(ctx, path, i, row_dict(t, i))
            out.setdefault(status, []).append(detail)
        _report(ctx, key, path, len(rows), out, desc)
    return {"sampled": total}


def _report(ctx: Context, key: str, path: str, n: int, out: dict[str, list[str]], desc: str) -> None:
    where = f"{key}={path} ({n} sampled rows)"
    if out.get("uncredited"):
        ctx.report.add(
            "golds",
            "fail",
            where,
            f"{len(out['uncredited'])} golds are not credited by {desc} when written as an answer",
            "fix the golds or the data_source (a verifier that rejects its own gold never rewards anything)",
            out["uncredited"],
        )
    if out.get("credits_wrong"):
        ctx.report.add(
            "golds",
            "fail",
            where,
            f"{len(out['credits_wrong'])} rows: the reward credits a perturbed (wrong) gold",
            "the verifier pays for wrong answers on these rows: fix it or the golds (degenerate golds?)",
            out["credits_wrong"],
        )
    if out.get("skip"):
        ctx.report.add("golds", "info", where, f"{len(out['skip'])} rows skipped", "", out["skip"][:2])
    if out.get("ok"):
        forms = sorted(set(out["ok"]))
        ctx.report.add(
            "golds",
            "info",
            where,
            f"{len(out['ok'])} golds credited (forms: {', '.join(forms)}), perturbed golds rejected",
        )
