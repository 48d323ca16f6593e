"""Rules on the reward: the reward function's options, the overlong buffer, legacy keys (both engines).

The overlong buffer (``reward.reward_kwargs.overlong_buffer_cfg``) must fit in the response length
and needs the ``dapo`` reward manager; veRL 0.9.1 ignores the top-level ``custom_reward_function``
and ``reward_model.reward_manager`` keys, so they are refused with the keys it reads.
For ``reward.custom_reward_function.reward_kwargs``: veRL binds them to the configured function
with ``functools.partial``, so a typo (``format_wieght``) would only fail at the first scored
batch, after the model is loaded and the first rollout generated -- or never, if the function
swallows ``**kwargs``. These rules load the configured function once, as veRL does (``load_extern_object``), and check every key against the
keyword parameters it declares (besides the four veRL passes itself). For the project's own
``rewards.compute_score`` (``pkg://rewards``), whose ``**kwargs`` only absorbs veRL's routing
arguments, they also check the value domains it enforces at call time: ``incorrect_score`` in
[-1, 0], the shaping weights within ``rewards.MAX_SHAPING_WEIGHT``, ``lang_weight`` with a
``target_lang``, ``answer_mode``, ``rel_tol``, ``timeout_s``. A third-party function with
``**kwargs`` is not checked (what it accepts is unknowable); one that does not load is reported by
:mod:`recipes.validate`.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from omegaconf import DictConfig

from recipes.validate.registry import is_number, rule, sel

K = "reward.custom_reward_function.reward_kwargs"
#: Arguments veRL's reward managers pass themselves (never reward_kwargs).
CALL_ARGS = frozenset({"data_source", "solution_str", "ground_truth", "extra_info"})


@functools.cache
def load(path: str, name: str) -> Callable | None:
    """The reward function veRL would load from ``path``/``name``; None when it does not load."""
    from verl.utils.import_utils import load_extern_object  # veRL: ~10 s, not at --help

    try:
        return load_extern_object(module_path=path, object_name=name)
    except Exception:  # noqa: BLE001 - recipes.validate reports the load error itself
        return None


def is_project_scorer(fn: Callable) -> bool:
    import rewards  # validation loads the reward function anyway

    return fn is rewards.compute_score


def accepted(fn: Callable) -> tuple[str, ...] | None:
    """Names ``fn`` accepts as reward_kwargs; None when it takes any keyword (``**kwargs``)."""
    params = inspect.signature(fn).parameters.values()
    named = tuple(
        p.name
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in CALL_ARGS
    )
    if any(p.kind is p.VAR_KEYWORD for p in params) and not is_project_scorer(fn):
        return None
    return named


def configured(cfg: DictConfig) -> tuple[Callable | None, str]:
    """(the configured reward function or None, a readable name for messages)."""
    fn_cfg = sel(cfg, "reward.custom_reward_function")
    if fn_cfg is None or not fn_cfg.get("path"):
        return None, ""
    return load(str(fn_cfg.path), str(fn_cfg.name)), f"{fn_cfg.name} ({fn_cfg.path})"


@rule("reward_kwargs_known")
def reward_kwargs_known(cfg: DictConfig) -> list[str]:
    kw = sel(cfg, K) or {}
    fn, label = configured(cfg)
    names = None if fn is None else accepted(fn)
    if names is None:
        return []
    return [
        f"[{K}.{key}] is not an option of {label}; fix: one of {', '.join(sorted(names))}"
        for key in kw
        if key not in names
    ]


def _in(lo: float, hi: float) -> Callable[[Any], bool]:
    return lambda v: is_number(v) and math.isfinite(v) and lo <= v <= hi


def _domains() -> list[tuple[str, Callable[[Any], bool], str]]:
    import rewards  # the caps and modes compute_score enforces

    cap = rewards.MAX_SHAPING_WEIGHT
    shaping = (
        f"must be in [0, {cap}]: a shaping term stays well below the accuracy reward (1.0); fix: e.g. 0.1"
    )
    return [
        (
            "incorrect_score",
            _in(-1.0, 0.0),
            "must be in [-1, 0], the score of an uncredited answer; fix: verifier=plain (0, accuracy 0/1) "
            "or verifier=signed (-1, DAPO's +1/-1, arXiv:2503.14476 §2.4)",
        ),
        ("format_weight", _in(0.0, cap), shaping),
        ("lang_weight", _in(0.0, cap), shaping),
        ("rel_tol", lambda v: is_number(v) and 0 <= v < 1, "must be in [0, 1) (0 = exact answers only)"),
        ("timeout_s", lambda v: is_number(v) and v > 0, "must be a number of seconds > 0; fix: e.g. 1.0"),
        (
            "answer_mode",
            lambda v: v in rewards.ANSWER_MODES,
            f"must be one of {', '.join(rewards.ANSWER_MODES)}",
        ),
    ]


@rule("reward_kwargs_domains")
def reward_kwargs_domains(cfg: DictConfig) -> list[str]:
    fn, _ = configured(cfg)
    if fn is None or not is_project_scorer(fn):
        return []
    kw = sel(cfg, K) or {}
    errs = [
        f"[{K}.{key}] {kw[key]!r} {what}" for key, ok, what in _domains() if key in kw and not ok(kw[key])
    ]
    lang = kw.get("lang_weight", 0.0)
    if is_number(lang) and lang > 0 and kw.get("target_lang") is None:
        errs.append(
            f"[{K}.target_lang] missing: lang_weight={lang:g} scores the share of the target language; "
            "fix: set target_lang (en or zh) or lang_weight=0"
        )
    return errs


@rule("overlong_buffer")
def overlong_buffer(cfg: DictConfig) -> list[str]:
    rk = cfg.reward.get("reward_kwargs") or {}
    ob = rk.get("overlong_buffer_cfg") or {}
    errs, max_len = [], cfg.data.max_response_length
    for key in ("len", "penalty_factor"):
        if key in ob and not (is_number(ob[key]) and ob[key] >= 0):
            errs.append(f"[reward.reward_kwargs.overlong_buffer_cfg.{key}] {ob[key]!r} must be a number >= 0")
    if not ob.get("enable", False):
        return errs
    if not 0 < ob.get("len", 0) <= max_len:
        errs.append(
            f"[reward.reward_kwargs.overlong_buffer_cfg.len] buffer {ob.get('len')} must be in (0, "
            f"data.max_response_length={max_len}]; fix: a buffer shorter than the max length "
            "(DAPO: 4096 of 20480; rlvr.overlong_buffer_len)"
        )
    if rk.get("max_resp_len", max_len) != max_len:
        errs.append(
            f"[reward.reward_kwargs.max_resp_len] {rk['max_resp_len']} differs from "
            f"data.max_response_length {max_len}; fix: leave it at ${{data.max_response_length}}"
        )
    if cfg.reward.reward_manager.name != "dapo":
        errs.append(
            f"[reward.reward_manager.name] overlong buffer enabled but the reward manager is "
            f"{cfg.reward.reward_manager.name!r}, which ignores it; fix: length=dapo_overlong sets 'dapo'"
        )
    return errs


@rule("legacy_reward_keys")
def legacy_reward_keys(cfg: DictConfig) -> list[str]:
    errs = []
    if cfg.get("custom_reward_function", {}).get("path"):
        errs.append(
            "[custom_reward_function.path] veRL 0.9.1 ignores the top-level key; "
            "fix: reward.custom_reward_function.path"
        )
    rm = cfg.get("reward_model") or {}
    if rm.get("reward_manager") not in (None, "naive") or rm.get("reward_kwargs"):
        errs.append(
            "[reward_model.reward_manager] veRL 0.9.1 ignores reward_model.reward_manager/"
            "reward_kwargs; fix: reward.reward_manager.name and reward.reward_kwargs"
        )
    return errs


#: the project's shuffled-reward estimator and the module veRL's processes import to know it
SHUFFLED, SHUFFLED_MODULE = "grpo_shuffled", "recipes.shuffled_rewards"
EXTERNAL_LIB = "actor_rollout_ref.model.external_lib"


@rule("shuffled_rewards")
def shuffled_rewards(cfg: DictConfig) -> list[str]:
    """The two shuffled-reward controls: ``local.shuffle_rewards`` (the local engine's loop: veRL ignores
    ``local.*``) and ``adv=grpo_shuffled`` (both engines; veRL's processes import its module); not both."""
    local_shuffle, on_verl = bool(sel(cfg, "local.shuffle_rewards")), sel(cfg, "engine.name") == "verl"
    est, lib = sel(cfg, "algorithm.adv_estimator"), sel(cfg, EXTERNAL_LIB)
    libs = [] if lib is None else [lib] if isinstance(lib, str) else list(lib)
    errs = []
    if local_shuffle and on_verl:
        errs.append(
            "[local.shuffle_rewards] true shuffles rewards in the local engine's loop only; veRL's trainer "
            "ignores local.* keys; fix: adv=grpo_shuffled (the same permutation, in veRL's advantage)"
        )
    if local_shuffle and est == SHUFFLED:
        errs.append(
            f"[local.shuffle_rewards] true with algorithm.adv_estimator={SHUFFLED} shuffles twice; fix: one of them"
        )
    if on_verl and est == SHUFFLED and SHUFFLED_MODULE not in libs:
        errs.append(
            f"[{EXTERNAL_LIB}] {lib!r} does not import {SHUFFLED_MODULE}, so veRL's processes do not know "
            f"algorithm.adv_estimator={SHUFFLED}; fix: adv={SHUFFLED} (sets both)"
        )
    return errs
