"""Shaping terms added to the accuracy reward: format, DAPO overlong penalty, language consistency.

What it does:
- ``format_reward``: 1.0 iff the response is exactly one non-empty ``<think>...</think>`` followed
  by exactly one non-empty ``<answer>...</answer>`` (R1-Zero's template), nothing else around
  them but whitespace. Its weight comes from config and is capped well below accuracy.
- ``overlong_penalty``: DAPO's soft overlong punishment, the exact expression veRL 0.9.1's ``dapo``
  reward manager computes (``verl/workers/reward_manager/dapo.py``).
- ``language_consistency``: DeepSeek-R1's language-consistency reward, the share of words of the
  reasoning that are in the target language ('zh': CJK characters count as words; 'en': Latin
  words).

What it does not do: length penalties other than DAPO's, repetition penalties, or language
detection beyond script (any Latin-script word counts as 'en').
"""

from __future__ import annotations

import re

from rewards.math.extract import split_think

_FORMAT = re.compile(r"\s*<think>(.*?)</think>\s*<answer>(.*?)</answer>\s*", re.DOTALL)
_TAGS = ("<think>", "</think>", "<answer>", "</answer>")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_LANG_SCRIPTS = {"zh": "cjk", "en": "latin"}


def format_reward(text: str) -> float:
    """1.0 iff ``<think>non-empty</think><answer>non-empty</answer>`` and each tag once.

    >>> format_reward("<think>4+4=8</think><answer>8</answer>")
    1.0
    >>> format_reward("<think></think><answer>8</answer>")  # empty reasoning earns nothing
    0.0
    >>> format_reward("<answer>8</answer><think>x</think>")
    0.0
    """
    if any(text.count(t) != 1 for t in _TAGS):
        return 0.0
    m = _FORMAT.fullmatch(text)
    return 1.0 if m and m.group(1).strip() and m.group(2).strip() else 0.0


def overlong_penalty(
    response_length: int, max_resp_len: int, buffer_len: int, penalty_factor: float
) -> float:
    """DAPO soft overlong penalty: ``min(-(L - (max - buffer)) / buffer * factor, 0)`` (veRL's formula).

    >>> [overlong_penalty(n, 64, 32, 1.0) for n in (30, 40, 52, 64)]
    [0.0, -0.25, -0.625, -1.0]
    """
    if buffer_len <= 0 or max_resp_len < buffer_len:
        raise ValueError(
            f"[reward.reward_kwargs.overlong_buffer_cfg] len ({buffer_len}) must be > 0 and <= "
            f"max_resp_len ({max_resp_len})"
        )
    expected_len = max_resp_len - buffer_len
    exceed_len = response_length - expected_len
    return float(min(-exceed_len / buffer_len * penalty_factor, 0))


def language_consistency(text: str, target_lang: str) -> float:
    """Share of target-language words in the reasoning (the ``<think>`` part if present).

    >>> language_consistency("<think>先算 then multiply</think><answer>1</answer>", "zh")
    0.5
    >>> language_consistency("all english here", "en")
    1.0
    """
    if target_lang not in _LANG_SCRIPTS:
        raise ValueError(
            f"[reward] target_lang {target_lang!r} is not supported; use one of {sorted(_LANG_SCRIPTS)}"
        )
    parts = split_think(text)
    reasoning = parts[0] if parts and parts[0] else (text if parts is None else parts[1])
    n_cjk = len(_CJK.findall(reasoning))
    n_latin = len(_LATIN.findall(reasoning))
    total = n_cjk + n_latin
    if total == 0:
        return 0.0
    return (n_cjk if _LANG_SCRIPTS[target_lang] == "cjk" else n_latin) / total
