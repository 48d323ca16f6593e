"""The pre-flight report: findings, timings, the verdict and its exit code, as text and as JSON.

A :class:`Finding` says which check found what, where (a file and row, or a config key), how bad
(:data:`LEVELS`) and the fix. :class:`Report` collects them with each check's wall and CPU time
and rows read/sampled and the config each check judged (:mod:`recipes.preflight.target`), turns
them into the exit code (:data:`EXIT`: 0 pass, 1 pass with warnings or with a check that did not
run, 2 fail) and writes ``preflight.json``. Not covered: deciding anything (the checks do).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Severity, mildest first: ``info`` (a number worth knowing), ``skip`` (a check asked for that did
#: not run, and why: it does not count as passed), ``warn`` (launchable, but probably not what you
#: want), ``fail`` (the launch would break or mislead).
LEVELS = ("info", "skip", "warn", "fail")
#: Exit code of ``python -m recipes.preflight`` for the verdict: a skipped check leaves the
#: pre-flight ``incomplete`` (exit 1, as a warning), never ``pass``.
EXIT = {"pass": 0, "incomplete": 1, "warn": 1, "fail": 2}


@dataclass
class Finding:
    """One result of one check.

    Attributes:
        check: the check that produced it (``data``, ``golds``, ``lengths``, ``reward``, ``memory``).
        level: ``info``, ``skip``, ``warn`` or ``fail``.
        where: the file and row(s), or the config key, it is about.
        message: what was found, with numbers.
        fix: what to change (empty for plain information).
        examples: a few offending rows or values.
    """

    check: str
    level: str
    where: str
    message: str
    fix: str = ""
    examples: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"finding level {self.level!r} is not one of {LEVELS}")

    def line(self) -> str:
        tag = {"info": "  ok ", "skip": "SKIP ", "warn": "WARN ", "fail": "FAIL "}[self.level]
        text = f"{tag}[{self.check}] {self.where}: {self.message}"
        if self.fix:
            text += f"\n       fix: {self.fix}"
        for ex in self.examples:
            text += f"\n       e.g. {ex}"
        return text


@dataclass
class Report:
    """Findings and per-check timings of one pre-flight."""

    recipe: str
    engine: str
    findings: list[Finding] = field(default_factory=list)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    #: check -> the config it judged (the GPU run, the CPU run, a rehearsal's CPU copy)
    judged: dict[str, str] = field(default_factory=dict)

    def add(
        self, check: str, level: str, where: str, message: str, fix: str = "", examples: Any = ()
    ) -> Finding:
        f = Finding(check, level, where, message, fix, [str(e)[:240] for e in examples][:5])
        self.findings.append(f)
        return f

    @contextmanager
    def timed(self, check: str, **counts: float) -> Iterator[dict[str, float]]:
        """Record the wall and CPU seconds of a block under ``check`` (plus counts the block sets)."""
        rec: dict[str, float] = dict(counts)
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            yield rec
        finally:
            rec["wall_s"] = time.perf_counter() - w0
            rec["cpu_s"] = time.process_time() - c0
            self.timings[check] = rec

    @property
    def verdict(self) -> str:
        levels = {f.level for f in self.findings}
        for level, verdict in (("fail", "fail"), ("warn", "warn"), ("skip", "incomplete")):
            if level in levels:
                return verdict
        return "pass"

    @property
    def exit_code(self) -> int:
        return EXIT[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "engine": self.engine,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "counts": {lv: sum(f.level == lv for f in self.findings) for lv in LEVELS},
            "findings": [asdict(f) for f in self.findings],
            "timings": self.timings,
            "judged": self.judged,
            "facts": self.facts,
        }

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the report as JSON (atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, default=str, ensure_ascii=False) + "\n")
        tmp.replace(path)
        return path

    def format(self) -> str:
        """The findings, worst first, then one line per check's timing and the verdict."""
        order = {lv: i for i, lv in enumerate(reversed(LEVELS))}
        lines = [f.line() for f in sorted(self.findings, key=lambda f: order[f.level])]
        times = ", ".join(f"{k} {v['wall_s']:.2f}s" for k, v in self.timings.items())
        by_config: dict[str, list[str]] = {}
        for check, config in self.judged.items():
            by_config.setdefault(config, []).append(check)
        lines += [f"judged {', '.join(checks)}: {config}" for config, checks in by_config.items()]
        counts = self.to_dict()["counts"]
        lines.append(
            f"pre-flight {self.verdict.upper()} (exit {self.exit_code}): {counts['fail']} failed, "
            f"{counts['warn']} warnings, {counts['skip']} not run, {counts['info']} notes; {times}"
        )
        return "\n".join(lines)
