"""The import graph of spec/: no cycles between spec modules, no internal module importing a
public facade, and function-local imports only of other packages, each with a comment naming
its reason (an optional dependency, say).

Every import statement counts, including those inside functions: a cycle hidden in a function
body is still a cycle in the design. ``from spec.x import y`` depends on ``spec.x`` and, when
``spec.x.y`` is a module, on it too; importing a package runs its ``__init__``, so a module
that imports a facade package (``from spec import lax``) depends on everything it imports.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "spec"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def known_module(name: str) -> str | None:
    """The longest prefix of ``name`` that is a spec module."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imported_names(node: ast.Import | ast.ImportFrom, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        if MODULES[module].name != "__init__.py":
            anchor = anchor[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_statements(node: ast.AST, in_function: bool = False
                      ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement under ``node``, with whether a function encloses it."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from import_statements(child, inside)


@functools.cache
def imports(module: str) -> tuple[tuple[ast.Import | ast.ImportFrom, bool], ...]:
    """Parsed once per module: every test reads the same import statements."""
    return tuple(import_statements(ast.parse(MODULES[module].read_text())))


def spec_targets(node: ast.Import | ast.ImportFrom, module: str) -> set[str]:
    targets = set()
    for name in imported_names(node, module):
        if name == "spec" or name.startswith("spec."):
            target = known_module(name)
            if target is not None and target != module:
                targets.add(target)
    return targets


@functools.cache
def import_graph() -> dict[str, set[str]]:
    return {m: {t for node, _ in imports(m) for t in spec_targets(node, m)} for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
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


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_spec_modules() -> None:
    found = cycles(import_graph())
    listing = "\n".join(f"{len(c)} modules: {', '.join(c)}" for c in found)
    assert not found, f"import cycles in spec/:\n{listing}"


def local_imports() -> Iterator[tuple[str, int, bool, bool]]:
    for module, path in MODULES.items():
        lines = path.read_text().splitlines()
        for node, is_local in imports(module):
            if is_local:
                here = lines[node.lineno - 1]
                above = lines[node.lineno - 2] if node.lineno > 1 else ""
                reason = ("#" in here) or above.strip().startswith("#")
                yield module, node.lineno, bool(spec_targets(node, module)), reason


def test_function_local_imports_of_other_packages_name_a_reason() -> None:
    bad = [f"{m}:{line}" for m, line, of_spec, reason in local_imports()
           if not of_spec and not reason]
    assert not bad, "function-local imports without a comment saying why:\n" + "\n".join(bad)


def test_no_function_local_imports_of_spec_modules() -> None:
    """A spec module imported inside a function hides a dependency: it goes at the top."""
    local = [f"{m}:{line}" for m, line, of_spec, _ in local_imports() if of_spec]
    assert not local, "function-local imports of spec modules:\n" + "\n".join(local)


@pytest.mark.parametrize("facade", ["spec.numpy", "spec.lax", "spec.random", "spec.sharding"])
def test_internals_do_not_import_public_facades(facade: str) -> None:
    graph = import_graph()
    users = sorted(m for m, targets in graph.items()
                   if m.startswith("spec._src.") and facade in targets)
    assert not users, f"{facade} is imported by {users}"
