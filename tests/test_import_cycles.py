"""No import circles between the project's modules, the benchmark scripts included.

Computed from the source: every import counts, the ones inside a function too (a circle hidden
in a function is still a circle); only imports named for the type checker alone
(``if TYPE_CHECKING:``) are left out. Importing ``a.b.c`` runs ``a/__init__`` first, but that is
no dependency of the importer's on ``a``'s other modules, so parents are not edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("evrcore", "envs", "planners", "critique", "leakbench", "runtime", "testkit", "bench",
         "scripts")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = {module_name(p, root): p for top in ROOTS if (root / top).is_dir()
               for p in (root / top).rglob("*.py") if "__pycache__" not in p.parts}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for_checker = {id(x) for n in ast.walk(tree)
                       if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
                       for b in n.body for x in ast.walk(b)}
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(tree):
            if id(node) in for_checker:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                script_dir = path.parent.name
                if script_dir in ("bench", "scripts") and f"{script_dir}.{target}" in modules:
                    target = f"{script_dir}.{target}"  # scripts import their neighbours by bare name
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles():
    found = circles(import_graph(REPO))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_circle_is_seen_even_inside_a_function(tmp_path):
    """The check is not vacuous: two modules that import each other, one of them lazily."""
    pkg = tmp_path / "runtime"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from runtime.b import thing\n")
    (pkg / "b.py").write_text("thing = 1\n\ndef later():\n    from runtime import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from runtime import a\n")
    (pkg / "d.py").write_text("from . import e\n")
    (pkg / "e.py").write_text("from .d import x\n")
    assert sorted(circles(import_graph(tmp_path))) == [["runtime.a", "runtime.b"], ["runtime.d", "runtime.e"]]
