"""Reasoning steps of a response: where each step ends, and (where a task allows it) whether it is right.

A process reward model is trained and read at step boundaries, so every caller -- the label
builder (:mod:`data_pipelines.rm_data`), the reward-model trainer, best-of-N selection and the
local engine's learned reward -- finds them the same way, through a registered
:class:`StepFormat`:

- ``split(text) -> [Step]``: the steps of a response as character spans. The last character of a
  step is its *boundary*; a PRM's label for the step sits on the token holding that character.
- ``check(steps, ground_truth, extra_info) -> [bool | None]`` (optional): a rule-based label per
  step, **prefix correctness** -- step i is good iff it and every step before it are right, the
  "can the right answer still be reached from here" semantics a Monte-Carlo estimate measures.
  ``None`` marks steps the rule cannot read (a response in a format it does not know); a
  malformed step inside a readable trace is a wrong step.

:data:`STEP_FORMATS` maps names to formats and :data:`BY_SOURCE` maps a ``data_source`` to its
default format; :func:`step_format` resolves an explicit name first (config key
``rlvr.reward_model.step_format``), then the data source, and raises naming that key otherwise.
Registered here: ``arithmetic_columns`` (the laptop task's column-addition trace, with a rule
checker) and ``lines`` (one step per non-empty line; no checker) -- any task or corpus adds one
more with :func:`register`.
Not covered: steps that are not contiguous spans (backtracking that rewrites a step), trees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.registry import Registry


@dataclass(frozen=True)
class Step:
    """One step: ``text[start:end]``; its boundary character is ``end - 1``."""

    start: int
    end: int
    text: str


Checker = Callable[[list[Step], str, dict[str, Any]], list[bool | None]]


@dataclass(frozen=True)
class StepFormat:
    """How a task's responses are cut into steps, and (optionally) how steps are checked."""

    name: str
    split: Callable[[str], list[Step]]
    check: Checker | None = None
    doc: str = ""


STEP_FORMATS: Registry[StepFormat] = Registry("step format")
BY_SOURCE: Registry[str] = Registry("data source step format")


def register(fmt: StepFormat, sources: tuple[str, ...] = ()) -> StepFormat:
    """Register ``fmt`` and make it the default of each data source in ``sources``."""
    STEP_FORMATS.add(fmt.name, fmt)
    for s in sources:
        BY_SOURCE.add(s, fmt.name)
    return fmt


def step_format(name: str | None, data_source: str | None = None) -> StepFormat:
    """The format ``name``, else the default of ``data_source``; a clear error naming the key otherwise.

    >>> step_format(None, "arithmetic").name
    'arithmetic_columns'
    >>> step_format(None, "gsm8k")
    Traceback (most recent call last):
    ...
    ValueError: [rlvr.reward_model.step_format] data_source 'gsm8k' has no registered step format; fix: set rlvr.reward_model.step_format to one of arithmetic_columns, lines...
    """
    if name:
        try:
            return STEP_FORMATS.get(str(name))
        except KeyError as e:
            raise ValueError(f"[rlvr.reward_model.step_format] {e.args[0]}") from None
    if data_source is not None and data_source in BY_SOURCE:
        return STEP_FORMATS.get(BY_SOURCE.get(data_source))
    raise ValueError(
        f"[rlvr.reward_model.step_format] data_source {data_source!r} has no registered step format; "
        f"fix: set rlvr.reward_model.step_format to one of {', '.join(STEP_FORMATS.names())} "
        "(or register one in data_pipelines.steps)"
    )


def _spans(text: str, pattern: re.Pattern[str], offset: int = 0) -> list[Step]:
    """Non-blank pieces of ``text`` between matches of ``pattern`` (stripped), as steps."""
    out, pos = [], 0
    for m in [*pattern.finditer(text), None]:
        stop = m.start() if m else len(text)
        piece = text[pos:stop]
        lead = len(piece) - len(piece.lstrip())
        body = piece.strip()
        if body:
            s = offset + pos + lead
            out.append(Step(s, s + len(body), body))
        pos = m.end() if m else pos
    return out


_LINE = re.compile(r"\n+")


def split_lines(text: str) -> list[Step]:
    """One step per non-empty line.

    >>> [s.text for s in split_lines("a = 1\\n\\nb = a + 1\\n")]
    ['a = 1', 'b = a + 1']
    """
    return _spans(text, _LINE)


# ------------------------------------------------------------------ arithmetic
_SEP = re.compile(r"[,;\n]+")
_THINK = re.compile(r"<think>(.*?)</think>", re.S)
_COLUMN = re.compile(r"^\s*(\d)\s*\+\s*(\d)\s*\+\s*(\d)\s*=\s*(\d{1,2})\s*$")


def split_arithmetic(text: str) -> list[Step]:
    """The column steps inside ``<think>`` (cut at ``,``, ``;`` or newlines), then the answer as the last step.

    Without a closed ``<think>`` block the text before the answer is cut the same way.

    >>> [s.text for s in split_arithmetic("<think>4+4+0=08,7+0+0=07</think><answer>78</answer>")]
    ['4+4+0=08', '7+0+0=07', '<answer>78</answer>']
    >>> split_arithmetic("<think>4+4+0=08</think><answer>8</answer>")[0]
    Step(start=7, end=15, text='4+4+0=08')
    """
    m = _THINK.search(text)
    if m:
        steps = _spans(m.group(1), _SEP, offset=m.start(1))
        tail_start = m.end()
    else:
        a = text.find("<answer>")
        head_end = len(text) if a < 0 else a
        open_at = text.find("<think>", 0, head_end)
        head_start = open_at + len("<think>") if open_at >= 0 else 0
        steps = _spans(text[head_start:head_end], _SEP, offset=head_start)
        tail_start = head_end
    tail = text[tail_start:]
    lead = len(tail) - len(tail.lstrip())
    body = tail.strip()
    if body:
        steps.append(Step(tail_start + lead, tail_start + lead + len(body), body))
    return steps


def _operands(ground_truth: str, extra_info: dict[str, Any]) -> tuple[int, int] | None:
    a, b = extra_info.get("a"), extra_info.get("b")
    if a is None or b is None:
        m = re.fullmatch(r"\s*(\d+)\s*\+\s*(\d+)\s*", str(extra_info.get("question", "")))
        if not m:
            return None
        a, b = m.group(1), m.group(2)
    return int(a), int(b)


def check_arithmetic(steps: list[Step], ground_truth: str, extra_info: dict[str, Any]) -> list[bool | None]:
    """Prefix correctness of column steps ``x+y+c=SS`` against the true column sums; the last step
    (the answer) is good iff every column was and it holds the gold sum in one ``<answer>`` tag.

    >>> from data_pipelines.tasks.arithmetic import render_trace
    >>> t = render_trace(874, 404)
    >>> check_arithmetic(split_arithmetic(t), "1278", {"a": 874, "b": 404})
    [True, True, True, True]
    >>> bad = t.replace("7+0+0=07", "7+0+0=08")
    >>> check_arithmetic(split_arithmetic(bad), "1278", {"a": 874, "b": 404})
    [True, False, False, False]
    >>> check_arithmetic(split_arithmetic("<think>four plus four</think><answer>8</answer>"), "8", {"a": 4, "b": 4})
    [None, None]
    >>> check_arithmetic(split_arithmetic("<think>4+4+0=08,7+0+0=0B,8+4+0=12</think><answer>1278</answer>"), "1278", {"a": 874, "b": 404})
    [True, False, False, False]
    >>> [s.text for s in split_arithmetic("<think>4+8+0=12,</answer>")]
    ['4+8+0=12', '</answer>']
    """
    ops = _operands(ground_truth, extra_info)
    parsed = [_COLUMN.match(st.text) for st in steps[:-1]]
    if ops is None or not steps or not any(parsed):
        return [None] * len(steps)  # not this format: nothing to read
    da, db = str(ops[0])[::-1], str(ops[1])[::-1]
    out: list[bool | None] = []
    good, carry = True, 0
    for i, m in enumerate(parsed):
        want_x = int(da[i]) if i < len(da) else 0
        want_y = int(db[i]) if i < len(db) else 0
        if m is None:  # a malformed column in a trace of this format is a wrong step
            good = False
            carry = (want_x + want_y + carry) // 10
            out.append(False)
            continue
        x, y, c, s = (int(g) for g in m.groups())
        right = (x, y, c, s) == (want_x, want_y, carry, want_x + want_y + carry)
        carry = (want_x + want_y + carry) // 10
        good = good and right
        out.append(good)
    last = steps[-1].text
    ans = re.fullmatch(r"<answer>\s*0*(\d+)\s*</answer>", last)
    columns_done = len(steps) - 1 >= max(len(da), len(db))
    right = ans is not None and int(ans.group(1)) == int(ground_truth) and columns_done
    out.append(good and right)
    return out


register(
    StepFormat(
        "arithmetic_columns",
        split_arithmetic,
        check_arithmetic,
        "column steps of the column-addition trace, then the answer",
    ),
    sources=("arithmetic",),
)
register(StepFormat("lines", split_lines, None, "one step per non-empty line (no rule checker)"))
