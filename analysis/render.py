"""A tiny document model (sections of text, tables and PNG figures) written as Markdown and HTML.

Reports (``diagnose``, ``report``, ``evaluate``) build a ``Document`` and call ``write``;
figures are saved next to the documents as PNG (matplotlib, Agg backend) and linked by
relative path, so the output folder can be copied or attached as is. HTML uses jinja2 with
autoescaping. It does not do interactive plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import jinja2  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

STATUS_ICON = {"ok": "OK", "warn": "WARN", "fail": "FAIL", "not_logged": "NOT LOGGED", "info": "INFO"}


def fmt(v: Any, digits: int = 3) -> str:
    """Human formatting: floats to ``digits`` significant places, nan -> 'n/a'."""
    if isinstance(v, bool) or v is None:
        return "n/a" if v is None else str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.{digits}g}"
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def num(v: Any, spec: str = "{:.3f}") -> str:
    """``spec.format(v)`` for a number, an en dash for anything else (a value not recorded)."""
    return spec.format(v) if isinstance(v, (int, float)) else "–"


@dataclass
class Table:
    header: list[str]
    rows: list[list[Any]]

    def markdown(self) -> str:
        def cell(v: Any) -> str:
            return fmt(v).replace("|", "\\|").replace("\n", " ")

        lines = ["| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in self.rows]
        return "\n".join(lines)


@dataclass
class Section:
    title: str
    status: str = "info"
    verdict: str = ""
    text: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)  # file names relative to the output dir


@dataclass
class Document:
    title: str
    out: Path
    intro: list[str] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)

    def save_figure(self, fig: Figure, name: str) -> str:
        """Save ``fig`` as ``<out>/<name>.png``, close it and return the file name."""
        fname = f"{name}.png"
        fig.tight_layout()
        fig.savefig(self.out / fname, dpi=90)
        plt.close(fig)
        return fname

    def markdown(self) -> str:
        parts = [f"# {self.title}", *self.intro]
        for s in self.sections:
            head = f"## {s.title}"
            parts.append(head)
            if s.verdict:
                parts.append(f"**{STATUS_ICON.get(s.status, s.status)}** — {s.verdict}")
            parts += s.text
            parts += [t.markdown() for t in s.tables]
            parts += [f"![{s.title}]({f})" for f in s.figures]
        return "\n\n".join(parts) + "\n"

    def html(self) -> str:
        env = jinja2.Environment(autoescape=True)
        env.filters["fmt"] = fmt
        return env.from_string(_HTML).render(doc=self, icon=STATUS_ICON)

    def write(self, stem: str = "report") -> dict[str, Path]:
        md = self.out / f"{stem}.md"
        html = self.out / f"{stem}.html"
        md.write_text(self.markdown(), encoding="utf-8")
        html.write_text(self.html(), encoding="utf-8")
        return {"markdown": md, "html": html}


_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>{{ doc.title }}</title>
<style>body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}
.ok{color:#176c2e}.warn{color:#a05a00}.fail{color:#b00020}.not_logged{color:#777}.info{color:#235}
img{max-width:100%}pre{white-space:pre-wrap}</style></head><body>
<h1>{{ doc.title }}</h1>
{% for p in doc.intro %}<p>{{ p }}</p>{% endfor %}
{% for s in doc.sections %}<h2>{{ s.title }}</h2>
{% if s.verdict %}<p class="{{ s.status }}"><b>{{ icon.get(s.status, s.status) }}</b> — {{ s.verdict }}</p>{% endif %}
{% for p in s.text %}<pre>{{ p }}</pre>{% endfor %}
{% for t in s.tables %}<table><tr>{% for h in t.header %}<th>{{ h }}</th>{% endfor %}</tr>
{% for r in t.rows %}<tr>{% for v in r %}<td>{{ v | fmt }}</td>{% endfor %}</tr>{% endfor %}</table>{% endfor %}
{% for f in s.figures %}<img src="{{ f }}" alt="{{ s.title }}">{% endfor %}
{% endfor %}</body></html>
"""
