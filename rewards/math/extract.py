r"""Strict final-answer extraction: one answer location counts, hedges are refused.

What it does: finds the final answer of a response in exactly one of these places, in this
order -- the ``<answer>...</answer>`` tag (exactly one pair), ``\boxed{}``/``\fbox{}``
(every box outside the reasoning must agree), a final ``Answer:`` line (DAPO / Minerva
"Final Answer: The final answer is X"), or GSM8K's ``#### X`` when asked. Text inside a
``<think>`` block never counts; an unterminated ``<think>`` yields no answer.

Several spellings of one answer agree (``agree`` decides, e.g. ``\\boxed{2\\sqrt3}`` then
``\\boxed{\\sqrt{12}}``). Refused (``Extraction.pred is None`` with a ``reason``): several different final answers,
a box nested in a box, an empty tag or box, hedges ("maybe", "perhaps", "?", "可能"...),
unbalanced tags, answers longer than ``MAX_ANSWER_CHARS``.

What it does not do: decide equivalence (``rewards.math.equiv``) or parse numbers. All scans are
linear in the input (1 MB responses and 10k nested braces are fine).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rewards.math.normalize import MAX_ANSWER_CHARS, clean, parse_number, squash

_BOX_CMD = re.compile(r"\\(?:boxed|fbox)\s*")
_BARE_TOKEN = re.compile(r"[^\s$]+")
_ANSWER_OPEN, _ANSWER_CLOSE = "<answer>", "</answer>"
Agree = Callable[[str, str], bool]  # do two spellings of a final answer mean the same thing?
MAX_BOXES = 32  # more boxes than this is answer spraying, not a solution
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
# All patterns are linear: no lazy group before an end anchor (``_tail`` trims in Python instead).
_ANSWER_LINE = re.compile(
    r"^[ \t>#*_]*(?:final[ \t]+answer|answer|答案|最终答案)[ \t*_]*(?:[:：]|(?=[ \t]*(?:\$|\\\(|\\\[)))(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|\$([^$\n]+?)\$", re.DOTALL)
_CHAT_END = re.compile(r"<\|(?:im_start|im_end|endoftext|eot_id)\|>|\n(?:Human|User):")
_NUM_TOKEN = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+)?(?:\s*(?:%|percent))?(?![\w])")
_MINERVA = re.compile(r"(?:the[ \t]+)?(?:final[ \t]+)?answer[ \t]+is\b(.*)$", re.IGNORECASE)
_HOPE = "i hope it is correct"
_ZH_ANSWER = re.compile(r"(?:答案|结果)(?:是|为|应为)(.*)$")
_GSM8K = re.compile(r"^[ \t]*####(.*)$", re.MULTILINE)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|either|not sure|unsure|i think|i guess|could be|"
    r"unknown|cannot be determined|can't be determined)\b|\?|可能|也许|或许|大概|或者",
    re.IGNORECASE,
)

# "<answer>The value of x is 5.</answer>" -> "5"
_SENTENCE = re.compile(r"^[A-Za-z][A-Za-z ,'()]*?\s(?:is|are|equals|was|=)\s*:?\s*(.+?)$", re.DOTALL)
# text after the final answer that offers another answer ("... unless I miscounted, in which case 6")
_TAIL_HEDGE = re.compile(
    r"\b(?:unless|in which case|alternatively|or maybe|or perhaps|or possibly|or else|otherwise|maybe|perhaps|"
    r"possibly|probably|might (?:also )?be|could (?:also )?be|may (?:also )?be|not sure|unsure|"
    r"if I (?:am |'m )?(?:wrong|mistaken|made|miscounted|misread|misunderstood))\b|也可能|或者|不确定|如果.{0,12}(?:错|不对)",
    re.IGNORECASE,
)
_TAIL_OR = re.compile(
    r"\bor\s+(\$[^$]{1,80}\$|\\boxed\{[^{}]{1,80}\}|[-+]?\d[\d.,/]*\s*\\?%?)", re.IGNORECASE
)
_EXPLAINED = re.compile(
    r"(?:,\s*|\s+)(?:because|since|as|which|where|so that)\b.*$", re.IGNORECASE | re.DOTALL
)
TAIL_CHARS = 300  # how much text after the final answer is read for a hedge or an alternative
# hedges in the sentence that carries a boxed answer ("perhaps \boxed{72}")
_HEDGE_CONTEXT = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might be|not sure|unsure|i guess|could be)\b", re.I
)


@dataclass(frozen=True)
class Extraction:
    """Result of extraction: ``pred`` is the raw answer text (or None) and ``where`` its location."""

    pred: str | None
    where: str  # "tag" | "box" | "line" | "gsm8k" | "none"
    reason: str = ""


def split_think(text: str) -> tuple[str, str] | None:
    """Split into (reasoning, final part). ``None`` if a ``<think>`` is never closed.

    >>> split_think("<think>a</think>b")
    ('a', 'b')
    >>> split_think("no tags")
    ('', 'no tags')
    >>> split_think("<think>still thinking") is None
    True
    """
    close = text.rfind(_THINK_CLOSE)
    if close < 0:
        return None if _THINK_OPEN in text else ("", text)
    head = text[:close]
    start = head.find(_THINK_OPEN)
    reasoning = head[start + len(_THINK_OPEN) :] if start >= 0 else head
    return reasoning, text[close + len(_THINK_CLOSE) :]


def find_boxes(text: str) -> tuple[list[str], bool]:
    r"""Contents of every top-level ``\boxed{}``/``\fbox{}``, and whether any box nests a box.

    Linear: the scan never re-enters a box it has matched.

    >>> find_boxes(r"so \boxed{1} and \boxed{\frac{1}{2}}")
    (['1', '\\frac{1}{2}'], False)
    >>> find_boxes(r"\boxed{\boxed{3}}")
    (['\\boxed{3}'], True)
    """
    out: list[str] = []
    nested = False
    pos = 0
    n = len(text)
    while True:
        m = _BOX_CMD.search(text, pos)
        if m is None:
            break
        i = m.end()
        if i >= n or text[i] != "{":
            # \boxed 5 (no braces): take the next token
            tok = _BARE_TOKEN.match(text, i)
            if tok:
                out.append(tok.group(0))
                pos = tok.end()
            else:
                pos = i
            if len(out) > MAX_BOXES:
                break
            continue
        depth, j = 0, i
        while j < n:
            c = text[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= n:  # unterminated box: nothing after it can close either
            break
        inner = text[i + 1 : j]
        if _BOX_CMD.search(inner):
            nested = True
        out.append(inner)
        pos = j + 1
        if len(out) > MAX_BOXES:  # answer spraying: no need to look further
            break
    return out, nested


def answer_tags(text: str) -> tuple[list[str], bool]:
    """Contents of ``<answer>`` tags and whether the tags are well formed (balanced, not nested).

    >>> answer_tags("<answer> 5 </answer>")
    ([' 5 '], True)
    >>> answer_tags("<answer>5</answer><answer>6</answer>")
    (['5', '6'], True)
    >>> answer_tags("<answer>5")
    ([], False)
    """
    n_open, n_close = text.count(_ANSWER_OPEN), text.count(_ANSWER_CLOSE)
    out: list[str] = []
    pos = 0
    while True:
        a = text.find(_ANSWER_OPEN, pos)
        if a < 0:
            break
        b = text.find(_ANSWER_CLOSE, a)
        if b < 0:
            break
        out.append(text[a + len(_ANSWER_OPEN) : b])
        pos = b + len(_ANSWER_CLOSE)
    ok = n_open == n_close == len(out) and not any(_ANSWER_OPEN in c for c in out)
    return out, ok


def agreement_key(s: str) -> str:
    """Cheap key under which two spellings of one final answer agree (number value or clean string)."""
    c = clean(s)
    c = re.sub(r"^[a-zA-Z]\s*=\s*", "", c)
    num = parse_number(c)
    if num is not None:
        return f"#{num[0]}{'%' if num[1] else ''}"
    return squash(c)


def _unique(cands: list[str], where: str, agree: Agree | None) -> Extraction:
    cands = [c.strip() for c in cands]
    if any(not c for c in cands):
        return Extraction(None, where, "empty answer")
    if any(len(c) > MAX_ANSWER_CHARS for c in cands):
        return Extraction(None, where, "answer too long")
    if len(cands) > MAX_BOXES:
        return Extraction(None, where, "too many answers")
    keys = [agreement_key(c) for c in cands]
    others = {k: c for k, c in zip(keys, cands, strict=True) if k != keys[-1]}
    if others and (agree is None or len(others) > 3 or not all(agree(c, cands[-1]) for c in others.values())):
        return Extraction(None, where, "several different final answers")
    return Extraction(cands[-1], where)


def _tail(val: str) -> str:
    """Trim what follows an answer marker: spaces, markdown, colons, "I hope it is correct."."""
    val = val.strip(" \t*_:：")
    low = val.lower().rstrip(". ")
    if low.endswith(_HOPE):
        val = val[: len(low) - len(_HOPE)].rstrip(" \t.")
    return val.rstrip(" \t*_。")


def _answer_lines(final: str) -> list[str]:
    out: list[str] = []
    for m in _ANSWER_LINE.finditer(final):
        if len(out) > MAX_BOXES:  # answer spraying; _unique refuses it
            break
        val = _tail(m.group(1))
        mm = _MINERVA.match(val)
        val = _tail(mm.group(1)) if mm else val
        out.append(_EXPLAINED.sub("", val) if not _BOX_CMD.search(val) else val)
    # "Answer: Let's think step by step ..." is prose, not a competing final answer
    out = [x for x in out[:-1] if len(x) <= 60 and len(x.split()) <= 6] + out[-1:]
    if not out:  # "So the answer is 72." on one of the last three lines
        lines = [ln for ln in final[-2000:].strip().splitlines() if ln.strip()][-3:]
        for ln in reversed(lines):
            mm = _MINERVA.search(ln) or _ZH_ANSWER.search(ln)
            if mm:
                out.append(_EXPLAINED.sub("", _tail(mm.group(1))))
                break
    return out


def last_answer(final: str) -> str | None:
    """Flexible mode: with no answer marker, the last math span, else the one number of the last sentence.

    >>> last_answer("So we find that $x < 3$."), last_answer("Thus there are 12 ways in all.")
    ('x < 3', '12')
    >>> last_answer("It is not 10 but 12.") is None  # two different numbers: no single final answer
    True
    """
    final = _CHAT_END.split(final[-4000:], 1)[0].strip()
    spans = [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(final)]
    if spans:
        return spans[-1].strip() or None
    sentences = [x for x in re.split(r"(?<=[.!?])\s+|\n+", final) if x.strip()]
    if not sentences:
        return None
    nums = {re.sub(r"\s+", "", t) for t in _NUM_TOKEN.findall(sentences[-1])}
    return nums.pop() if len(nums) == 1 else None


def _last_box_end(text: str) -> int:
    """Index just after the closing brace of the last ``\\boxed{...}`` (or -1)."""
    starts = [m.end() for m in _BOX_CMD.finditer(text)]
    for i in reversed(starts[-MAX_BOXES:]):
        if i < len(text) and text[i] == "{":
            depth = 0
            for j in range(i, len(text)):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    return j + 1
    return -1


def _second_answer_after(tail: str, answer: str, agree: Agree | None) -> bool:
    """Does the text after the final answer hedge it or offer a different answer?"""
    tail = tail[:TAIL_CHARS]
    if _TAIL_HEDGE.search(tail):
        return True
    for m in _TAIL_OR.finditer(tail):
        alt = m.group(1).strip("$ ")
        alt = find_boxes(alt)[0][0] if alt.startswith("\\boxed") and find_boxes(alt)[0] else alt
        if agreement_key(alt) != agreement_key(answer) and not (agree and agree(alt, answer)):
            return True  # "\boxed{5}, or 6": a second answer ("0.5, or 50%" restates the same one)
    return False


def extract_final(
    text: str,
    allow_box: bool = True,
    allow_line: bool = True,
    allow_gsm8k: bool = False,
    agree: Agree | None = None,
    allow_last: bool = False,
) -> Extraction:
    r"""Extract the single final answer of ``text`` (see the module docstring for the rules).

    >>> extract_final(r"<think>2+2</think><answer>\boxed{4}</answer>").pred
    '4'
    >>> extract_final(r"It is \boxed{4}. Or \boxed{5}.").reason
    'several different final answers'
    >>> extract_final("<think>the answer is \\boxed{4}</think>").pred is None
    True
    >>> extract_final("Work...\nAnswer: 42").pred
    '42'
    >>> extract_final("<answer>4, or maybe 5</answer>").reason
    'hedged answer'
    >>> extract_final(r"So \boxed{5}. Unless I miscounted, in which case it is 6.").reason
    'hedged answer'
    """
    parts = split_think(text)
    if parts is None:
        return Extraction(None, "none", "unterminated <think>")
    final = parts[1]
    tags, ok = answer_tags(final)
    boxes, nested = find_boxes(final) if allow_box else ([], False)
    if nested:
        return Extraction(None, "box", "box nested in a box")
    if len(boxes) > MAX_BOXES:
        return Extraction(None, "box", "too many boxed answers")
    if not ok:
        return Extraction(None, "tag", "malformed <answer> tags")
    if tags:
        if len(tags) > 1:
            return Extraction(None, "tag", "several <answer> tags")
        inner_boxes, _ = find_boxes(tags[0]) if allow_box else ([], False)
        inner = inner_boxes if inner_boxes else [tags[0]]
        res = _unique(inner + boxes, "tag", agree)  # boxes outside the tag must agree with it
        if res.pred is not None and inner_boxes:
            res = Extraction(inner_boxes[-1].strip(), "tag")
        elif res.pred is not None:
            m = _SENTENCE.match(tags[0].strip()) if len(tags[0]) <= 300 else None
            res = Extraction(m.group(1) if m else tags[0].strip(), "tag")
    elif boxes:
        lines = [x for x in _answer_lines(final) if not _BOX_CMD.search(x)] if allow_line else []
        res = _unique(boxes + lines, "box", agree)
        last = final.rfind("\n", 0, max(final.rfind("\\boxed"), final.rfind("\\fbox")))
        if res.pred is not None and _HEDGE_CONTEXT.search(final[last + 1 :]):
            return Extraction(None, "box", "hedged answer")
        if res.pred is not None:
            res = Extraction(boxes[-1].strip(), "box")
    else:
        lines = _answer_lines(final) if allow_line else []
        gsm = [_tail(m.group(1)) for m in _GSM8K.finditer(final)] if allow_gsm8k else []
        if not lines and not gsm:
            last = last_answer(final) if allow_last else None
            return Extraction(last, "last") if last else Extraction(None, "none", "no answer found")
        res = _unique(gsm + lines, "gsm8k" if gsm else "line", agree)
    if res.pred is None:
        return res
    if len(res.pred) > MAX_ANSWER_CHARS:
        return Extraction(None, res.where, "answer too long")
    if _HEDGE.search(res.pred):
        return Extraction(None, res.where, "hedged answer")
    if res.where == "tag":
        end = final.rfind(_ANSWER_CLOSE) + len(_ANSWER_CLOSE)
    elif res.where == "box":
        end = _last_box_end(final)
    else:
        end = final.rfind(res.pred)
        end = end + len(res.pred) if end >= 0 else len(final)
    if end >= 0 and _second_answer_after(final[end:], res.pred, agree):
        return Extraction(None, res.where, "hedged answer")
    return res
