"""No import cycles in the egraph_lower package.

What counts as an import of module A by module B: every `import` and `from ... import`
statement in B that runs, at the top of the module or inside a function or class body
(an import moved into a function to dodge a cycle still makes one); those under
`if TYPE_CHECKING:` never run and do not count. `from P import name` imports the
module `P.name` when there is one (`from . import backends`), else `P` itself.
Importing `P.Q` also runs `P`'s `__init__`, but that is the package around it, not
an import B asked for, and does not count.

The test fails on any cycle, naming it (`KNOWN` lists edges to overlook: none).
"""

from __future__ import annotations

import ast
from pathlib import Path

import egraph_lower

ROOT = Path(egraph_lower.__file__).parent
KNOWN: set[tuple[str, str]] = set()  # (importer, imported): none left


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for a in node.names:
            sub = f"{source}.{a.name}"
            if sub in known:
                out.add(sub)
            elif source in known:
                out.add(source)
    out.discard(name)
    return out


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the import graph (its modules in import order, the first one repeated), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in sorted(graph):
        if start in state:
            continue
        state[start] = 1
        path, todo = [start], [iter(sorted(graph[start]))]
        while path:
            k = next(todo[-1], None)
            if k is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(k) == 1:
                return path[path.index(k):] + [k]
            elif k not in state:
                state[k] = 1
                path.append(k)
                todo.append(iter(sorted(graph.get(k, ()))))
    return None


def test_the_walk_finds_an_import_cycle() -> None:
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": {"b"}}) == ["b", "b"]
    assert cycle_in({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_package_has_no_import_cycle() -> None:
    known = modules()
    assert "egraph_lower.extract.local_search" in known and "egraph_lower.explore" in known
    graph = {m: imported(m, p, known) for m, p in known.items()}
    assert "egraph_lower.extract.selection" in graph["egraph_lower.extract.local_search"]
    for a, b in KNOWN:
        assert b in graph[a], f"{a} no longer imports {b}: drop it from KNOWN"
        graph[a].discard(b)
    loop = cycle_in(graph)
    assert loop is None, "import cycle: " + " -> ".join(loop or ())
