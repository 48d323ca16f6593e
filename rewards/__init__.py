"""Verifiable rewards: one entry, ``compute_score``, in veRL's custom-reward signature.

veRL loads it with ``reward.custom_reward_function.path=pkg://rewards`` and
``reward.custom_reward_function.name=compute_score``; options go in
``reward.custom_reward_function.reward_kwargs`` (``format_weight``, ``lang_weight``, ``target_lang``,
``timeout_s``, ``answer_mode``, ``incorrect_score``, ``rel_tol``, ``judge``). The local engine imports it
directly.

``incorrect_score`` (float, default 0.0, finite and < 1): the accuracy part of the score of a response
that is not credited. DAPO's +1/-1 reward (what veRL's ``math_dapo`` returns) is
``reward.custom_reward_function.reward_kwargs.incorrect_score=-1.0``; ``acc`` stays a boolean and the
format / language shaping (and the overlong penalty of veRL's ``dapo`` manager) still add on top.

``rel_tol`` (float, default 0.0 = exact): an explicit opt-in for data sets whose golds are rounded
-- ``math``/``gsm8k`` answers that are plain numbers or numeric constants are credited within that
relative tolerance (``85.71`` for ``600/7`` at ``rel_tol=1e-4``). Off by default: an approximation is
not the exact answer, and RL learns whatever the verifier credits.

``judge`` (default None): the model-based fallback (``rewards.judge``), asked only when the rules
say no; its verdicts and flips are logged.

``answer_mode``: ``strict`` (default) credits only the answer in the task's required place;
``flexible`` (sources in ``FLEXIBLE_SOURCES``) also credits a bare final answer -- like veRL's
``gsm8k`` scorer's ``method="flexible"``; for ``math``/``gsm8k`` that is the last math span or the one
number of the last sentence when the response has no answer marker. A flexible verifier no longer pays for the format, so the
format reward is what keeps it (the format-weight ablation runs in this mode).

Data sources: ``math`` (aliases ``lighteval/MATH``, ``DigitalLearningGmbH/MATH-lighteval``,
``HuggingFaceH4/MATH-500``, ``BytedTsinghua-SIA/DAPO-Math-17k``, ``math_dapo``, ``math500``, any
``aime*``), ``gsm8k`` (``openai/gsm8k``), ``overtime_pay``, ``arithmetic``, ``countdown``, ``code``
(``apps``, ``taco``, ``codecontests``, ``livecodebench``) and ``reasoning_gym/<dataset name>``
(e.g. ``reasoning_gym/spell_backward``, scored by reasoning-gym's own ``score_answer``).

Call ``rewards.warmup()`` once before scoring: it starts the SymPy worker process (0.3-1 s),
whose start-up is the one cost outside the per-call time limit.

What it does: dispatches on ``data_source`` through ``rewards.registry`` (unknown sources raise
``KeyError`` listing the known ones), never raises on model text (a verifier failure scores 0 with
its ``reason``), and returns a dict with a fixed key set -- veRL stacks every key across a batch,
so all sources return the same keys: ``score``, ``acc``, ``pred``, ``format``, ``lang``, ``reason``.

What it does not do: the DAPO overlong penalty (it needs token counts: the local engine calls
``rewards.shaping.overlong_penalty``; veRL's ``dapo`` manager adds the same number itself).
"""

from __future__ import annotations

from math import isfinite, isnan, nan  # not `import math`: `math` here is the subpackage rewards.math
from typing import Any

from rewards import shaping
from rewards.registry import resolve
from rewards.sources import code as _code  # noqa: F401  (registers the sources)
from rewards.sources import math as _math  # noqa: F401
from rewards.sources import puzzles as _puzzles  # noqa: F401
from rewards.sources import tagged as _tagged  # noqa: F401
from rewards.worker import pool

__all__ = ["compute_score", "warmup", "KEYS", "__version__"]
__version__ = "0.1.0"

KEYS = ("score", "acc", "pred", "format", "lang", "reason")
# keyword arguments veRL 0.9.1's reward managers may add on their own (reward-model routing); ignored
_VERL_KWARGS = frozenset({"reward_router_address", "reward_model_tokenizer"})
MAX_SHAPING_WEIGHT = 0.5
ANSWER_MODES = ("strict", "flexible")
FLEXIBLE_SOURCES = frozenset({"arithmetic", "math", "gsm8k"})
_ACCEPTED = "format_weight, lang_weight, target_lang, timeout_s, answer_mode, incorrect_score, rel_tol, judge"
TOLERANT_SOURCES = frozenset({"math", "gsm8k"})
MAX_RESPONSE_CHARS = 4_000_000  # far beyond any generation budget; longer text scores 0 at once


def _check_weight(name: str, w: float) -> float:
    w = float(w)
    if not (0.0 <= w <= MAX_SHAPING_WEIGHT) or isnan(w):
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] {name} ({w}) must be in [0, {MAX_SHAPING_WEIGHT}]: "
            "a shaping term must stay well below the accuracy reward (1.0)"
        )
    return w


def _check_incorrect(x: float) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = nan
    if not (isfinite(v) and v < 1.0):
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] incorrect_score ({x}) must be a finite number < 1 "
            "(the score of a credited answer); DAPO's -1/+1 is incorrect_score=-1.0"
        )
    return v


def _check_rel_tol(x: float) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = nan
    if not (isfinite(v) and 0.0 <= v < 1.0):
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] rel_tol ({x}) must be in [0, 1); 0 = exact answers only"
        )
    return v


def _checked_options(
    name: str,
    data_source: str,
    kwargs: dict[str, Any],
    incorrect_score: float,
    rel_tol: float,
    format_weight: float,
    lang_weight: float,
    target_lang: str | None,
    timeout_s: float,
    answer_mode: str,
) -> tuple[float, float, float, float, float]:
    """``compute_score``'s options checked (errors name the reward_kwargs key and the fix)."""
    unknown = sorted(set(kwargs) - _VERL_KWARGS)
    if unknown:
        raise TypeError(
            f"compute_score() got unexpected keyword argument(s) {unknown}; accepted: {_ACCEPTED}"
        )
    incorrect_score = _check_incorrect(incorrect_score)
    rel_tol = _check_rel_tol(rel_tol)
    format_weight = _check_weight("format_weight", format_weight)
    lang_weight = _check_weight("lang_weight", lang_weight)
    if lang_weight > 0 and target_lang is None:
        raise ValueError(
            "[reward.custom_reward_function.reward_kwargs] lang_weight > 0 needs target_lang ('zh' or 'en')"
        )
    timeout_s = float(timeout_s)
    if not timeout_s > 0:
        raise ValueError(f"[reward.custom_reward_function.reward_kwargs] timeout_s ({timeout_s}) must be > 0")
    if answer_mode not in ANSWER_MODES:
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] answer_mode ({answer_mode!r}) must be one of {ANSWER_MODES}"
        )
    if answer_mode == "flexible" and name not in FLEXIBLE_SOURCES:
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] answer_mode='flexible' is not implemented for "
            f"data source {data_source!r} (only {sorted(FLEXIBLE_SOURCES)}); use answer_mode='strict'"
        )
    if rel_tol > 0 and name not in TOLERANT_SOURCES:
        raise ValueError(
            f"[reward.custom_reward_function.reward_kwargs] rel_tol ({rel_tol}) is only implemented for "
            f"{sorted(TOLERANT_SOURCES)}, not {data_source!r}; leave it at 0.0"
        )
    return incorrect_score, rel_tol, format_weight, lang_weight, timeout_s


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    format_weight: float = 0.0,
    lang_weight: float = 0.0,
    target_lang: str | None = None,
    timeout_s: float = 1.0,
    answer_mode: str = "strict",
    incorrect_score: float = 0.0,
    rel_tol: float = 0.0,
    judge: Any = None,
    **kwargs: Any,
) -> dict[str, Any]:
    r"""Score one response: ``score = (1 if acc else incorrect_score) + format_weight * format + lang_weight * lang``.

    >>> r = compute_score("arithmetic", "<think>4+4+0=08</think><answer>1278</answer>", "1278")
    >>> (r["score"], r["acc"], r["pred"], r["format"])
    (1.0, True, '1278', 1.0)
    >>> compute_score("math", r"The area is \boxed{2\sqrt{3}}.", r"\sqrt{12}")["acc"]
    True
    >>> compute_score("math", "x", "1", format_wieght=0.1)
    Traceback (most recent call last):
    ...
    TypeError: compute_score() got unexpected keyword argument(s) ['format_wieght']; accepted: format_weight, lang_weight, target_lang, timeout_s, answer_mode, incorrect_score, rel_tol, judge
    >>> compute_score("arithmetic", "<think>4+4+0=08</think>1278", "1278", answer_mode="flexible")["acc"]
    True
    >>> r = compute_score("math", r"\boxed{3}", "4", incorrect_score=-1.0)  # DAPO's +1/-1
    >>> (r["score"], r["acc"])
    (-1.0, False)
    >>> compute_score("math", r"\boxed{3}", "4", incorrect_score=1.5)
    Traceback (most recent call last):
    ...
    ValueError: [reward.custom_reward_function.reward_kwargs] incorrect_score (1.5) must be a finite number < 1 (the score of a credited answer); DAPO's -1/+1 is incorrect_score=-1.0
    >>> compute_score("math", r"\boxed{85.71}", r"\frac{600}{7}", rel_tol=1e-4)["acc"]
    True
    """
    name, verifier = resolve(data_source)
    incorrect_score, rel_tol, format_weight, lang_weight, timeout_s = _checked_options(
        name,
        data_source,
        kwargs,
        incorrect_score,
        rel_tol,
        format_weight,
        lang_weight,
        target_lang,
        timeout_s,
        answer_mode,
    )
    text = (
        solution_str if isinstance(solution_str, str) else ("" if solution_str is None else str(solution_str))
    )
    info = dict(extra_info) if isinstance(extra_info, dict) else {}
    info.update(data_source=str(data_source), answer_mode=answer_mode, rel_tol=rel_tol)
    try:
        if len(text) > MAX_RESPONSE_CHARS:
            raise ValueError(f"response longer than {MAX_RESPONSE_CHARS} characters")
        res = verifier(text, ground_truth, info, timeout_s)
    except Exception as e:  # noqa: BLE001 - malformed gold / model text scores 0, never crashes training
        res = {"acc": False, "pred": None, "reason": f"verifier error: {type(e).__name__}: {e}"[:300]}
    acc = bool(res["acc"])
    if judge is not None and not acc:
        from rewards.judge import second_opinion  # optional: a judge model only when one is configured

        res = second_opinion(judge, name, text, ground_truth, info, res)
        acc = bool(res["acc"])
    fmt = float(res.get("format", shaping.format_reward(text)))
    lang = shaping.language_consistency(text, target_lang) if target_lang is not None else 0.0
    return {
        "score": (1.0 if acc else incorrect_score) + format_weight * fmt + lang_weight * lang,
        "acc": acc,
        "pred": res.get("pred"),
        "format": fmt,
        "lang": float(lang),
        "reason": str(res.get("reason", "")),
    }


def warmup() -> None:
    """Start the SymPy worker process(es) now rather than on the first symbolic answer."""
    pool().warmup()
