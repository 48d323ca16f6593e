"""String-level normalisation of extracted answers.

What it does: turns an extracted answer (LaTeX or plain text) into a canonical string (`clean`);
exact number parsing (`parse_number`) lives in ``rewards.math.numbers`` and is re-exported here.
Everything is pure Python, linear in the input, and bounded (answers longer than ``MAX_ANSWER_CHARS`` are refused upstream).

What it does not do: symbolic algebra (radicals, pi, expressions) -- see ``rewards.math.symbolic``,
which runs in the bounded worker process -- nor structure (sets, tuples, matrices): see
``rewards.math.equiv``. It never evaluates model text.
"""

from __future__ import annotations

import re

from rewards.math.forms import DMS, dms
from rewards.math.numbers import parse_number  # noqa: F401  (re-exported: rewards.math.normalize.parse_number)

MAX_ANSWER_CHARS = 1000  # the longest MATH-500 answer has 159 characters

_TEXT_CMDS = tuple(
    "text textbf textit textrm textnormal mathrm mathbf mathit mathsf mathtt mathcal mathscr mathfrak textsf texttt textup bm mbox boldsymbol operatorname emph hbox".split()
)
_TEXT_CMD_RE = re.compile(r"\\(?:" + "|".join(_TEXT_CMDS) + r")\s*\{")
_DROP = (
    (re.compile(r"\\(?:displaystyle|textstyle|scriptstyle|limits|nolimits)"), ""),
    (re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg)(?![a-zA-Z])"), ""),
    (re.compile(r"\s*(?:percent|per cent)\b", re.IGNORECASE), r"\\%"),
    (re.compile(r"\\[dt]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\textcirc(?![a-zA-Z])"), r"\\circ"),
    (DMS, dms),  # 60^\circ 42' is 60 + 42/60 degrees, before the degree signs go
    (re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])|\\circ(?![a-zA-Z])"), ""),
    (re.compile(r"\\(?:\$|\\euro|textdollar)|[$¥￥€£]|\\(?:pounds|yen)(?![a-zA-Z])"), ""),
    (re.compile(r"\\langle(?![a-zA-Z])|⟨"), "("),
    (re.compile(r"\\rangle(?![a-zA-Z])|⟩"), ")"),
    (re.compile(r"\*\*"), "^"),
    (re.compile(r"\\le(?:qslant)?(?![a-zA-Z])|<="), r"\\leq"),
    (re.compile(r"\\ge(?:qslant)?(?![a-zA-Z])|>="), r"\\geq"),
    (re.compile(r"\\lt(?![a-zA-Z])"), "<"),
    (re.compile(r"\\gt(?![a-zA-Z])"), ">"),
    (re.compile(r"\\neq?(?![a-zA-Z])"), r"\\ne"),
    (re.compile(r"\\lg(?![a-zA-Z])"), r"\\log"),  # lg is the base-10 log, as \log is read here
    (re.compile(r"\\varnothing|\\emptyset|∅"), r"\\emptyset"),
)
# digits separated by thin spaces or {,} are one number: 1\,600 / 1{,}600 / 1\ 600 / 10,\!000
_THIN_THOUSANDS = re.compile(r"(?<=\d)(?:\\,|\{,\}|\\ |\\thinspace ?)(?=\d{3}(?!\d))")
_COMMA_BANG = re.compile(r"(?<=\d),\s*\\!\s*(?=\d{3}(?!\d))")
# spacing macros anywhere (after the thousands forms above): \, \; \: \! \quad \hspace{..} "\ " ~
_SPACING = re.compile(
    r"\\(?:[,;:!>]|q?quad(?![a-zA-Z])|(?:en|thin|med|thick|neg)space(?![a-zA-Z])|hspace\*?\{[^{}]*\})|~|(?<!\\)\\(?=\s)"
)
_DANGLING = re.compile(r"\s*\\+$")
_DOLLAR = re.compile(r"(?<!\\)(?:\$|\\[()])")  # $ and \( \) delimit math wherever they stand
_DEG = r"(?:\^\s*\{?\s*\\circ\s*\}?|°)"
_TRIG_DEGREES = re.compile(
    r"(\\(?:sin|cos|tan|cot|sec|csc))\s*([+-]?\d+(?:\.\d+)?)\s*" + _DEG
)  # \sin 30^\circ
_TRIG_OPEN = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)\s*(?:\^\s*\{?\d\}?\s*)?\(")  # \sin( / \cos^2(
_DEGREE_NUMBER = re.compile(r"(\d+(?:\.\d+)?)\s*" + _DEG)
# every backslash doubled (a JSON- or Python-escaped string): \\frac, \\begin ... \\\\ ... \\end
_DOUBLED = re.compile(r"(?<!\\)(?:\\\\)+(?!\\)")
_DOUBLED_CMD = re.compile(r"(?<!\\)\\\\[a-zA-Z]{2,}")
_ODD_RUN = re.compile(r"(?<!\\)\\(?:\\\\)*(?!\\)")
_LEFT_RIGHT_DOT = re.compile(r"\\(?:left|right)\s*\.")
# \frac12 -> \frac{1}{2}; \frac1{2}; \frac{1}2 ; \sqrt2 -> \sqrt{2}
_FRAC_SHORT = re.compile(r"\\frac\s*(\d|\{[^{}]*\})\s*(\d|\{[^{}]*\})")
_SQRT_SHORT = re.compile(r"\\sqrt\s*(\d+|[a-zA-Z])(?![\d])")
_UNIT_WORDS = (
    "(?:(?:square|sq\\.?|cubic)\\s+)?(?:"
    "yuan|rmb|dollars?|usd|cents?|euros?|pounds?|units?|square units|sq units|cubic units|"
    "degrees?|radians?|cm|mm|km|m|meters?|metres?|centimeters?|kilometers?|inches|inch|in|feet|ft|foot|"
    "yards?|miles?|mph|km/h|kg|g|grams?|kilograms?|lbs?|ounces?|oz|liters?|litres?|ml|l|"
    "seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|weeks?|months?|years?|"
    "people|persons?|students?|apples?|books?|marbles?|cookies?|pages?|points?|times|ways|"
    "元|块|人|个|天|小时|分钟|米|千米|公里|岁)"
)
_GLUED_SHORT_UNIT = re.compile(
    r"\d(?:cm|mm|km|m|in|ft|yd|g|kg|mg|ml|l|s|h|hr|oz|lbs?|mi)(?:\^\{?[23]\}?|²|³)?$", re.IGNORECASE
)
_TEXT_AFTER_DIGIT = re.compile(r"(?<=\d)(?=\\(?:text|mathrm|textrm|textnormal|mbox)\s*\{)")  # 18\text{cm}
_TRAILING_UNIT = re.compile(
    r"(?:(?<=[\d}).])|(?<=\\pi))\s*(?:\\?\s*(?:"
    + _UNIT_WORDS
    + r")(?:\^\{?[23]\}?|²|³)?)(?:\s*(?:"
    + _UNIT_WORDS
    + r"))?\s*$",
    re.IGNORECASE,
)
_UNICODE = {
    "\u2212": "-",
    "\uff0c": ",",
    "π": "\\pi ",
    "∞": "\\infty ",
    "×": "\\times ",
    "·": "\\cdot ",
    "÷": "/",
    "≤": "\\leq ",
    "≥": "\\geq ",
    "≠": "\\ne ",
    "½": "\\frac{1}{2}",
    "¼": "\\frac{1}{4}",
    "¾": "\\frac{3}{4}",
    "²": "^{2}",
    "³": "^{3}",
    "\u2009": "",
    "\u202f": "",
    "\u00a0": " ",
    "∪": "\\cup ",
    "∩": "\\cap ",
    "∈": "\\in ",
    "∉": "\\notin ",
    "∖": "\\setminus ",
    "ℝ": "\\mathbb{R}",
    "ℤ": "\\mathbb{Z}",
    "ℕ": "\\mathbb{N}",
    "ℚ": "\\mathbb{Q}",
    "∀": "\\forall ",
}
# full-width digits and letters (Chinese / Japanese input) are their ASCII forms
_FULLWIDTH = {  # ０-９ Ａ-Ｚ ａ-ｚ ＋ － ＜ ＝ ＞
    c: c - 0xFEE0
    for c in [
        *range(0xFF10, 0xFF1A),
        *range(0xFF21, 0xFF3B),
        *range(0xFF41, 0xFF5B),
        0xFF0B,
        0xFF0D,
        0xFF1C,
        0xFF1D,
        0xFF1E,
    ]
}
_OPERATOR = re.compile(r"\\operatorname\*?\s*\{\s*([a-zA-Z]+)\s*\}")
_KNOWN_OPERATORS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh ln log exp lg".split()
)
_UNICODE_RE = re.compile("|".join(map(re.escape, _UNICODE)))
_UNICODE_SQRT = re.compile(r"√\s*\(?([0-9a-zA-Z.]+)\)?")
_MARKDOWN = re.compile(r"\*\*(.+?)\*\*")
_SPACES = re.compile(r"\s+")
_LETTERS = re.compile(r"[A-Za-z]")
_MATH_WORDS = re.compile(r"\\(?:frac|sqrt|pi|times|cdot)(?![a-zA-Z])")
_PREFIX = re.compile(
    r"^(?:(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|：)?\s*:?|(?:所以|因此)?(?:最终)?答案(?:是|为)?[:：]?|"
    r"approximately|approx\.?|about|\\approx|≈)\s*",
    re.IGNORECASE,
)


def strip_text_commands(s: str) -> str:
    r"""Replace ``\text{...}``-like commands by their content (brace-aware, linear).

    >>> strip_text_commands(r"5\text{ cm} and \mathrm{kg}")
    '5 cm and kg'
    """
    out: list[str] = []
    pos = 0
    while True:
        m = _TEXT_CMD_RE.search(s, pos)
        if m is None:
            out.append(s[pos:])
            break
        out.append(s[pos : m.start()])
        depth, i = 1, m.end()
        while i < len(s) and depth:
            c = s[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            i += 1
        inner = s[m.end() : i - 1] if depth == 0 else s[m.end() :]
        out.append(inner)
        pos = i
    return "".join(out)


def _unwrap_math(s: str) -> str:
    s = s.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) >= len(left) + len(right):
            s = s[len(left) : len(s) - len(right)].strip()
    return s


def clean(s: str) -> str:
    r"""Canonical string form of an answer: math delimiters, spacing commands, ``\text``,
    degree signs, currency and trailing unit words removed; ``\dfrac`` -> ``\frac``.

    >>> clean(r"$\dfrac{3}{4}\text{ cm}$.")
    '\\frac{3}{4}'
    >>> clean(r"\boxed{x}") == r"\boxed{x}"  # boxes are removed by extraction, not here
    True
    >>> clean("1\\,600 元")
    '1600'
    """
    s = _THIN_THOUSANDS.sub("", _COMMA_BANG.sub(",", undouble(s)))
    s = _DOLLAR.sub(" ", _LEFT_RIGHT_DOT.sub("", _SPACING.sub(" ", s)))
    s = _MARKDOWN.sub(r"\1", s.strip())  # **72** / __72__
    s = _unwrap_math(_UNICODE_RE.sub(lambda m: _UNICODE[m.group(0)], s.translate(_FULLWIDTH)))
    s = _UNICODE_SQRT.sub(r"\\sqrt{\1}", s)
    s = s.rstrip(" .。;,")
    s = _unwrap_math(s)
    s = _PREFIX.sub("", s)
    s = _PREFIX.sub("", s.rstrip(" .。;,"))
    s = strip_text_commands(_OPERATOR.sub(_operator, _TEXT_AFTER_DIGIT.sub(" ", s)))
    s = _TRIG_DEGREES.sub(r"\1(\\frac{\2\\pi}{180})", s)  # \sin 30^\circ is sin(pi/6), before degrees go
    s = _trig_degree_arguments(s)  # \sin(90^\circ - x) is sin(pi/2 - x)
    for pat, rep in _DROP:
        s = pat.sub(rep, s)
    s = _FRAC_SHORT.sub(lambda m: r"\frac{" + m.group(1).strip("{}") + "}{" + m.group(2).strip("{}") + "}", s)
    s = _SQRT_SHORT.sub(r"\\sqrt{\1}", s)
    s = _SPACES.sub(" ", s).strip().rstrip(" .。")
    s = _DANGLING.sub("", s)  # "185\" / "c = 0\\": a backslash that starts no command
    if s.startswith("{") and s.endswith("}") and _balanced(s[1:-1]):
        s = s[1:-1].strip()
    s = strip_units(s)
    if s.startswith("{") and s.endswith("}") and _balanced(s[1:-1]):
        s = s[1:-1].strip()
    return s


def undouble(s: str) -> str:
    r"""An answer whose every backslash is doubled (escaped twice on its way here) with its backslashes halved.

    >>> undouble(r"\\begin{matrix} x \\\\ \\frac12 \\end{matrix}")
    '\\begin{matrix} x \\\\ \\frac12 \\end{matrix}'
    >>> undouble(r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}") == r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"  # a row break stays
    True
    """
    if "\\\\" not in s or not _DOUBLED_CMD.search(s) or _ODD_RUN.search(s):
        return s
    return _DOUBLED.sub(lambda m: "\\" * (len(m.group(0)) // 2), s)


def _trig_degree_arguments(s: str) -> str:
    """Degree-marked numbers inside a trig function's parentheses are radians: ``\\sin(90^\\circ - x)``."""
    out, pos = [], 0
    for m in _TRIG_OPEN.finditer(s):
        if m.start() < pos:
            continue
        depth, i = 1, m.end()
        while i < len(s) and depth:
            depth += {"(": 1, ")": -1}.get(s[i], 0)
            i += 1
        if depth:
            break
        arg = _DEGREE_NUMBER.sub(r"(\\frac{\1\\pi}{180})", s[m.end() : i - 1])
        out.append(s[pos : m.end()] + arg + ")")
        pos = i
    return "".join(out) + s[pos:]


def strip_units(s: str) -> str:
    """Unit words after a plain quantity: ``"5 m"`` -> ``"5"``, but ``"x+2m"`` keeps its m, and so does
    ``"10m"``: a short unit written against the number reads as a variable (``10m`` is 10 times m)."""
    if _GLUED_SHORT_UNIT.search(s):
        return s
    prev = None
    while prev != s:
        prev = s
        stripped = _TRAILING_UNIT.sub("", s).strip()
        if stripped != s and not _LETTERS.search(_MATH_WORDS.sub("", stripped)):
            s = stripped
    return s


def _operator(m: re.Match[str]) -> str:
    """``\\operatorname{arcsin}`` is ``\\arcsin``; an unknown operator name is its text."""
    name = m.group(1)
    return f"\\{name} " if name in _KNOWN_OPERATORS else name


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside (), [], {} -- linear; items stripped.

    >>> split_top("(1, 2), 3")
    ['(1, 2)', '3']
    """
    out, depth, start = [], 0, 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            out.append(s[start:i])
            start = i + 1
    out.append(s[start:])
    return [x.strip() for x in out]


def squash(s: str) -> str:
    """``s`` without whitespace, except one space between two digits (``"12 34"`` is not ``"1234"``).

    >>> squash(" x + 12 34 "), squash("1, 2")
    ('x+12 34', '1,2')
    """
    return re.sub(r"\s+", " ", re.sub(r"(?<!\d)\s+|\s+(?!\d)", "", s))


def compact(s: str) -> str:
    """``clean`` without any whitespace (for string comparison)."""
    return clean(s).replace(" ", "")
