"""Check 1: verifier false negatives -- zero-scored responses re-graded by an independent grader.

A sample of the responses the verifier scored zero (``audit_samples``, seeded) is re-graded by a
grader that is deliberately not ``rewards``: math-verify when installed (``GRADERS["math_verify"]``),
else a last-number comparison (``"numeric"``). Every audited row goes to ``verifier_audit.jsonl``
with an empty ``human_label``; the verdict counts the disagreements. Neither grader is ground
truth: a disagreement is a row for a human to label, not a proven false negative.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from analysis.diagnose.registry import CHECKS, Context, check, not_logged
from analysis.render import Section, Table
from core.registry import Registry
from core.runs import is_correct

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def answer_region(text: str) -> str:
    """The part of a response a grader should read: the last <answer> tag, else after </think>."""
    tags = _ANSWER.findall(text)
    if tags:
        return tags[-1]
    return text.split("</think>")[-1]


def _numeric_grader(response: str, gold: str) -> bool:
    nums = _NUMBER.findall(answer_region(response))
    gnums = _NUMBER.findall(str(gold))
    if not nums or not gnums:
        return False
    try:
        return abs(float(nums[-1].replace(",", "")) - float(gnums[-1].replace(",", ""))) < 1e-6
    except ValueError:
        return False


def _math_verify_grader(response: str, gold: str) -> bool:
    from math_verify import parse, verify  # loads SymPy (~1 s); only this grader needs it

    region = answer_region(response)
    gold_p = parse(f"${gold}$" if "\\" not in str(gold) else str(gold))
    return bool(verify(gold_p, parse(region)) or verify(gold_p, parse(f"${region}$")))


# name -> fn(response, gold) -> bool. An independent second opinion for the verifier audit.
GRADERS: Registry[Callable[[str, str], bool]] = Registry("grader")
GRADERS.add("numeric", _numeric_grader)
GRADERS.add("math_verify", _math_verify_grader)


def pick_grader(name: str) -> tuple[str, Callable[[str, str], bool]]:
    if name != "auto":
        return name, GRADERS.get(name)
    try:
        import math_verify  # noqa: F401

        return "math_verify", GRADERS.get("math_verify")
    except ImportError:
        return "numeric", GRADERS.get("numeric")


@check("verifier_audit", 1, "1. Verifier audit (false negatives)")
def verifier_audit(ctx: Context) -> Section:
    title = CHECKS.get("verifier_audit").title
    rows = [r for r in ctx.samples if is_correct(r) is False and r.get("gts") is not None]
    if not ctx.samples:
        return not_logged(
            title,
            "no rollouts/ or validation/ sample dumps",
            "veRL: set trainer.rollout_data_dir; local engine writes them",
        )
    if not rows:
        return Section(title, "info", "no zero-scored responses with a ground truth to audit")
    take = min(int(ctx.cfg.audit_samples), len(rows))
    picked = [rows[i] for i in sorted(ctx.rng.choice(len(rows), size=take, replace=False))]
    gname, grade = pick_grader(str(ctx.cfg.grader))
    disagree = []
    audit_path = ctx.doc.out / "verifier_audit.jsonl"
    with audit_path.open("w", encoding="utf-8") as fh:
        for r in picked:
            try:
                second = grade(str(r.get("output", "")), str(r.get("gts")))
            except Exception as exc:  # a grader crash is a finding, not a report crash
                second = False
                r = {**r, "grader_error": repr(exc)}
            row = {
                "step": r.get("step"),
                "input": r.get("input"),
                "output": r.get("output"),
                "gts": r.get("gts"),
                "pred": r.get("pred"),
                "score": r.get("score"),
                f"{gname}_correct": second,
                "human_label": None,
            }
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
            if second:
                disagree.append(row)
    share = len(disagree) / take
    status = "ok" if not disagree else "warn"
    sec = Section(
        title,
        status,
        f"{len(disagree)}/{take} zero-scored responses judged correct by {gname} ({share:.0%}); "
        f"{'possible verifier false negatives — ' if disagree else ''}"
        f"label them by hand in {audit_path.name}",
    )
    if disagree:
        sec.tables.append(
            Table(
                ["step", "gold", "pred (verifier)", "response tail"],
                [[d["step"], d["gts"], d["pred"], str(d["output"])[-120:]] for d in disagree[:20]],
            )
        )
    return sec
