"""The shape of the code: arrows between packages point down, and modules and functions stay small.

``analysis -> data_pipelines -> rewards -> core``; ``verl_cpu`` (veRL's CPU backend) uses ``core``
only; ``recipes`` may use those, ``benchmarks``
(measurements) and ``experiments`` (the drivers behind ``make results``) those and ``recipes`` but
not each other, and ``docgen`` (the docs generator) sits on top: it may use every package and no
package imports it (tests aside). No import cycle between top-level packages, nor between modules
of the project, counting imports inside functions too; an import
inside a function says why on its line (it buys start-up time, or the module is optional); no
function over 80 lines. A module over 400 lines is a warning for review, never a failure: a module
is split where its meaning splits, not to meet a line count. Read from the source with ``ast``, so a
violation names the file and line.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "core",
    "rewards",
    "data_pipelines",
    "analysis",
    "verl_cpu",
    "recipes",
    "benchmarks",
    "experiments",
    "docgen",
)
#: What each package may import (beyond itself).
ALLOWED = {
    "core": set(),
    "rewards": {"core"},
    "data_pipelines": {"core", "rewards"},
    "analysis": {"core", "rewards", "data_pipelines"},
    "verl_cpu": {"core"},
    "recipes": {"core", "rewards", "data_pipelines", "analysis", "verl_cpu"},
    "benchmarks": {"core", "rewards", "data_pipelines", "analysis", "verl_cpu", "recipes"},
    "experiments": {"core", "rewards", "data_pipelines", "analysis", "verl_cpu", "recipes"},
    "docgen": {
        "core",
        "rewards",
        "data_pipelines",
        "analysis",
        "verl_cpu",
        "recipes",
        "benchmarks",
        "experiments",
    },
}
#: The top floor: imported by no package (tests may).
TOP = "docgen"
#: Exempt from the size and comment rules (none: every package is held to them).
OWNED_ELSEWHERE: tuple[str, ...] = ()


def _sources(packages=PACKAGES, owned_elsewhere: bool = True) -> list[Path]:
    paths = sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))
    if owned_elsewhere or not OWNED_ELSEWHERE:
        return paths
    return [p for p in paths if not str(p.relative_to(ROOT)).startswith(OWNED_ELSEWHERE)]


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported top-level project package, inside a function?) for every import in ``path``."""
    tree = ast.parse(path.read_text())
    inside: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside |= {id(n) for n in ast.walk(fn)}
    out = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top in PACKAGES:
                out.append((node.lineno, top, id(node) in inside))
    return out


def test_arrows_point_down() -> None:
    wrong = []
    for path in _sources():
        pkg = path.relative_to(ROOT).parts[0]
        for line, top, _ in _imports(path):
            if top != pkg and top not in ALLOWED[pkg]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert not wrong, "imports against the arrows:\n" + "\n".join(wrong)


def test_no_cycle_between_packages() -> None:
    graph = {p: set() for p in PACKAGES}
    for path in _sources():
        pkg = path.relative_to(ROOT).parts[0]
        graph[pkg] |= {top for _, top, _ in _imports(path) if top != pkg}

    def reaches(a: str, b: str, seen: frozenset = frozenset()) -> bool:
        return any(n == b or (n not in seen and reaches(n, b, seen | {n})) for n in graph[a])

    cycles = [p for p in PACKAGES if reaches(p, p)]
    assert not cycles, f"packages on an import cycle: {cycles} ({graph})"


def test_nothing_imports_the_top() -> None:
    """``docgen`` renders the docs from everything; no package imports it (``recipes.sweep`` runs it)."""
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {TOP}"
        for path in _sources()
        if path.relative_to(ROOT).parts[0] != TOP
        for line, top, _ in _imports(path)
        if top == TOP
    ]
    assert not wrong, "imports of the top package:\n" + "\n".join(wrong)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict[str, set[str]]:
    """Project module -> the project modules it imports (inside functions too; ``from p import m``
    counts module ``p.m`` when it is one, else ``p``)."""
    modules = {_module_name(p): p for p in _sources()}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                while t and t not in modules:  # ``import a.b.c`` of a non-module attribute: its module
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def test_no_cycle_between_modules() -> None:
    """No two project modules import each other, directly or round a longer loop (Tarjan's SCCs)."""
    graph, index, low, stack, on, cycles = _module_graph(), {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                cycles.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "modules on an import cycle:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_function_level_imports_say_why() -> None:
    """An import inside a function carries a ``# reason`` on its line (start-up time, optional dep)."""
    silent = []
    for path in _sources(owned_elsewhere=False):
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                if not any("#" in line for line in lines[node.lineno - 1 : node.end_lineno]):
                    silent.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not silent, "function-level imports without a reason:\n" + "\n".join(sorted(set(silent)))


@pytest.mark.parametrize("limit_module,limit_function", [(400, 80)])
def test_sizes(limit_module: int, limit_function: int) -> None:
    big, long_modules = [], []
    for path in _sources(owned_elsewhere=False):
        src = path.read_text()
        if src.count("\n") > limit_module:
            long_modules.append(f"{path.relative_to(ROOT)}: {src.count(chr(10))} lines")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit_function:
                    big.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}(): {n} lines")
    if long_modules:
        warnings.warn(
            "modules to read again in review (over the size guideline):\n" + "\n".join(long_modules),
            stacklevel=2,
        )
    assert not big, "too big:\n" + "\n".join(big)
