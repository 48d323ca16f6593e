"""Hub datasets (GSM8K, MATH, MATH-500, DAPO-Math-17k, AIME 2024/2025) to veRL rows.

Each adapter in ``ADAPTERS`` names the hub id/config/splits, the ``data_source`` the verifier
uses (``gsm8k`` or ``math``) and a converter ``raw row -> (question, gold, extra)``. Rows come
from ``datasets.load_dataset`` when the hub is reachable, or from a local file
(``data_path=``: .parquet, .jsonl or .json) in the hub's own layout. A raw row the converter
cannot read raises :class:`~data_pipelines.schema.RowError` naming the file and row; with
``on_error="skip"`` it is counted and reported instead. Field names are matched
case-insensitively so mirrors with ``Problem``/``Answer`` columns work. Not covered: the hub's
own train/test contamination, multimodal sets, answer normalisation (the verifier's job).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from core.cli import UsageError
from core.registry import Registry
from data_pipelines.clean import Deduper
from data_pipelines.schema import RowError
from data_pipelines.tasks._common import make_row, resolve_template

Converted = tuple[str, str, dict[str, Any]]
MATH_FORMATS = ("answer_tag", "boxed", "answer_line")
DAPO_PREFIX = re.compile(r"^Solve the following math problem step by step\..*?\n\n", re.S)
DAPO_SUFFIX = re.compile(r"\n\nRemember to put your answer on its own line after \"Answer:\"\.?\s*$")


class ConvertError(ValueError):
    """Raised by a converter; :func:`convert_rows` adds the file and row."""

    def __init__(self, key: str, problem: str) -> None:
        self.key, self.problem = key, problem
        super().__init__(f"{key}: {problem}")


def _field(raw: dict[str, Any], *names: str) -> Any:
    lower = {str(k).lower(): v for k, v in raw.items()}
    for n in names:
        v = lower.get(n.lower())
        if v is not None and (not isinstance(v, str) or v.strip()):
            return v
    raise ConvertError("/".join(names), f"missing or empty (row has: {', '.join(map(str, raw))})")


def last_boxed(text: str) -> str | None:
    r"""Content of the last ``\boxed{...}`` (or ``\fbox{...}``), braces matched.

    >>> last_boxed(r"so $\boxed{\frac{1}{2}}$ and \boxed{3}")
    '3'
    >>> last_boxed(r"\boxed{\frac{1}{2}}") , last_boxed("none")
    ('\\frac{1}{2}', None)
    """
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    i = text.index("{", start) + 1
    depth, j = 1, i
    while j < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        j += 1
    return text[i : j - 1].strip() if depth == 0 else None


def _gsm8k(raw: dict[str, Any]) -> Converted:
    answer = str(_field(raw, "answer"))
    if "####" not in answer:
        raise ConvertError("answer", "no '#### <number>' final line (GSM8K format)")
    gold = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not gold:
        raise ConvertError("answer", "empty after '####'")
    return str(_field(raw, "question")), gold, {}


def _math(raw: dict[str, Any]) -> Converted:
    question = str(_field(raw, "problem", "question"))
    try:
        gold = str(_field(raw, "answer"))
    except ConvertError:
        gold = last_boxed(str(_field(raw, "solution"))) or ""
        if not gold:
            raise ConvertError("solution", "no \\boxed{} answer in the solution") from None
    extra = {
        k: str(raw[k]) for k in ("level", "type", "subject", "unique_id", "id") if raw.get(k) is not None
    }
    return question, gold.strip(), extra


def _dapo(raw: dict[str, Any]) -> Converted:
    if "prompt" in raw and isinstance(raw["prompt"], list | tuple):
        msgs = [m for m in raw["prompt"] if isinstance(m, dict) and m.get("role") == "user"]
        if not msgs:
            raise ConvertError("prompt", "no user message")
        question = DAPO_SUFFIX.sub("", DAPO_PREFIX.sub("", str(msgs[-1].get("content", "")))).strip()
        rm = raw.get("reward_model") or {}
        gold = str(rm.get("ground_truth", "")).strip() if isinstance(rm, dict) else ""
        if not question:
            raise ConvertError("prompt", "empty question")
        if not gold:
            raise ConvertError("reward_model.ground_truth", "missing or empty")
        return question, gold, {}
    return _math(raw)


def _aime(raw: dict[str, Any]) -> Converted:
    question, gold, extra = _math(raw)
    return question, gold.lstrip("0") or "0", extra


@dataclass(frozen=True)
class HubSpec:
    """How to read one hub dataset.

    Attributes:
        hub_id, config: arguments of ``datasets.load_dataset``.
        splits: our split name -> the hub's split name.
        data_source: the verifier name for these rows.
        convert: raw row -> (question, gold, extra_info additions); raises ConvertError.
        local_split: the split a single local file (``data_path=``) is written as.
        template: default prompt template.
    """

    hub_id: str
    config: str | None
    splits: dict[str, str]
    data_source: str
    convert: Callable[[dict[str, Any]], Converted]
    local_split: str
    template: str = "boxed"
    accepted: tuple[str, ...] = field(default=MATH_FORMATS)


ADAPTERS: Registry[HubSpec] = Registry("hub dataset")
ADAPTERS.add(
    "gsm8k", HubSpec("openai/gsm8k", "main", {"train": "train", "test": "test"}, "gsm8k", _gsm8k, "train")
)
ADAPTERS.add(
    "math",
    HubSpec(
        "DigitalLearningGmbH/MATH-lighteval",
        "default",
        {"train": "train", "test": "test"},
        "math",
        _math,
        "train",
    ),
)
ADAPTERS.add("math500", HubSpec("HuggingFaceH4/MATH-500", None, {"test": "test"}, "math", _math, "test"))
ADAPTERS.add(
    "dapo_math_17k",
    HubSpec(
        "BytedTsinghua-SIA/DAPO-Math-17k", None, {"train": "train"}, "math", _dapo, "train", template="dapo"
    ),
)
ADAPTERS.add("aime24", HubSpec("HuggingFaceH4/aime_2024", None, {"test": "train"}, "math", _aime, "test"))
ADAPTERS.add("aime25", HubSpec("math-ai/aime25", None, {"test": "test"}, "math", _aime, "test"))


def read_local(path: str | Path) -> Iterator[dict[str, Any]]:
    """Raw rows of a local .parquet / .jsonl / .json file; a bad JSON line names file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"data_path: no such file {path} (fix: pass an existing .parquet/.jsonl/.json)"
        )
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536):  # streamed: DAPO has 1.8M rows
            yield from batch.to_pylist()
    elif suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            for i, line in enumerate(f):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise RowError(
                        str(path), i, "<line>", f"invalid JSON ({e.msg})", "fix or remove the line"
                    ) from None
                if not isinstance(obj, dict):
                    raise RowError(str(path), i, "<line>", f"must be a JSON object, got {type(obj).__name__}")
                yield obj
    elif suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        yield from (data if isinstance(data, list) else data.get("data", []))
    else:
        raise ValueError(
            f"data_path: unsupported file type {suffix!r} for {path} (use .parquet, .jsonl or .json)"
        )


class HubUnavailable(UsageError, RuntimeError):
    """A hub dataset that could not be loaded (no network, gated, misspelled): the command says so
    in one line with the fix (``data_path=``), not in a traceback."""


def read_hub(spec: HubSpec, split: str) -> Iterator[dict[str, Any]]:
    """Raw rows of ``spec``'s ``split`` from the hub (needs network access)."""
    import datasets  # ~2 s; only reading from the hub needs it

    try:
        ds = datasets.load_dataset(spec.hub_id, spec.config, split=spec.splits[split])
    except Exception as e:  # noqa: BLE001 - any hub failure gets the same remedy
        raise HubUnavailable(  # no network, a gated set, a typo: the user's to fix, one line
            f"could not load {spec.hub_id} ({split}) from the hub: {type(e).__name__}: {e}. "
            f"Fix: download it elsewhere and pass data_path=<local .parquet/.jsonl>"
        ) from e
    yield from ds


def convert_rows(
    raw_rows: Any,
    spec: HubSpec,
    split: str,
    where: str,
    template: str | None = None,
    on_error: str = "raise",
    deduper: Deduper | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Convert raw rows; return ``(rows, report)`` where report counts and samples skipped rows.

    With a ``deduper``, duplicates are dropped while converting (counted in its report).
    """
    if on_error not in ("raise", "skip"):
        raise ValueError(f"[data] on_error must be 'raise' or 'skip', got {on_error!r}")
    tpl = resolve_template(template or spec.template, spec.accepted, spec.data_source)
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    total = 0
    for i, raw in enumerate(raw_rows):
        total += 1
        try:
            if not isinstance(raw, dict):
                raise ConvertError("<row>", f"must be a mapping, got {type(raw).__name__}")
            question, gold, extra = spec.convert(raw)
        except ConvertError as e:
            err = RowError(
                where, i, e.key, e.problem, "repair the row, or pass on_error=skip to count and skip it"
            )
            if on_error == "raise":
                raise err from None
            skipped.append(str(err))
            continue
        row = make_row(
            data_source=spec.data_source,
            question=question,
            answer=gold,
            ability="math",
            split=split,
            index=len(rows),
            template=tpl,
            extra={"source_row": i, **extra},
        )
        if deduper is None or deduper.keep(row):
            rows.append(row)
    report = {
        "source": where,
        "read": total,
        "converted": total - len(skipped),
        "skipped": len(skipped),
        "skipped_examples": skipped[:5],
    }
    return rows, report
