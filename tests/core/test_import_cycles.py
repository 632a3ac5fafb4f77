"""No import cycles in any first-party package, counting function-local imports.

The graph is read from the source (``ast``), not by importing: every ``import`` and
``from ... import`` of a module, at module level or inside a function or class, is an
edge (relative imports resolved; ``from pkg import name`` is an edge to the submodule
``pkg.name`` where there is one, else to ``pkg``). Imports under ``if TYPE_CHECKING:``
never run and are left out, and so is the implicit import of a parent package (every
module would otherwise be in a cycle with its package's ``__init__``). A cycle is a
strongly connected component of more than one module.

The cycles still there are listed in :data:`KNOWN`, one ``xfail(strict=True)`` test
each: removing a cycle makes its test pass unexpectedly, which fails until the cycle is
taken off the list; any cycle not listed fails :func:`test_no_import_cycle_outside_the_known_ones`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the folders that hold a first-party top-level package (its parent folder)
SOURCE_ROOTS = [ROOT, ROOT / "trainers", ROOT / "sandbox",
                *sorted(p for p in (ROOT / "plugins").iterdir() if p.is_dir())]
PACKAGE_PREFIXES = ("rewardkit",)  # rewardkit, rewardkit_trainers, rewardkit_sandbox, ...

#: cycles not fixed yet (issue 22 item 3), each the set of modules of one component
KNOWN: dict[str, frozenset[str]] = {}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in SOURCE_ROOTS:
        for package in sorted(root.iterdir()):
            if not (package.is_dir() and package.name.startswith(PACKAGE_PREFIXES)
                    and (package / "__init__.py").exists()):
                continue
            for path in sorted(package.rglob("*.py")):
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: at any depth, not under TYPE_CHECKING."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    base_name = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_name = node.module or ""
                targets = [f"{base_name}.{alias.name}" if f"{base_name}.{alias.name}" in modules
                           else base_name for alias in node.names]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a name in a.b
                    target = target.rpartition(".")[0]
                if target and target != name:  # a module importing itself (a `__main__`
                    graph[name].add(target)    # guard running the installed copy) is no cycle
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with a cycle (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return sorted(found, key=sorted)


MODULES = _modules()
CYCLES = _cycles(_graph(MODULES))


def _describe(cycle: frozenset[str]) -> str:
    return " <-> ".join(sorted(cycle))


def test_the_graph_covers_every_first_party_distribution():
    tops = {name.split(".")[0] for name in MODULES}
    assert {"rewardkit", "rewardkit_trainers", "rewardkit_sandbox", "rewardkit_code",
            "rewardkit_judge", "rewardkit_gui", "rewardkit_translation"} <= tops


def test_the_finder_sees_a_function_local_cycle(tmp_path: Path):
    graph = {"p.a": {"p.b"}, "p.b": set(), "p.c": set()}
    assert _cycles(graph) == []
    graph["p.b"].add("p.a")  # e.g. `def f(): from p import a` inside p.b
    assert _cycles(graph) == [frozenset({"p.a", "p.b"})]
    pkg = tmp_path / "rewardkit_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from rewardkit_demo import b\n")
    (pkg / "b.py").write_text("def later():\n    from . import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\n"
                              "if TYPE_CHECKING:\n    from rewardkit_demo import a\n")
    modules = {"rewardkit_demo": pkg / "__init__.py", "rewardkit_demo.a": pkg / "a.py",
               "rewardkit_demo.b": pkg / "b.py", "rewardkit_demo.c": pkg / "c.py"}
    assert _cycles(_graph(modules)) == [frozenset({"rewardkit_demo.a", "rewardkit_demo.b"})]


def test_no_import_cycle_outside_the_known_ones():
    new = [c for c in CYCLES if c not in KNOWN.values()]
    assert not new, "import cycles: " + "; ".join(_describe(c) for c in new)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"known cycle: "
                                                f"{_describe(cycle)}"))
    for name, cycle in KNOWN.items()])
def test_known_cycle_is_gone(name: str):
    assert KNOWN[name] not in CYCLES, f"still a cycle: {_describe(KNOWN[name])}"


#: run in a fresh interpreter: each module imported first, the first-party modules
#: before it forgotten, so a cycle through a package's ``__init__`` (which the graph
#: above leaves out) shows as the ImportError a user importing that module first gets
_IMPORT_EACH_FIRST = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("rewardkit")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:  # a backend's own package (verl) not installed here
        if not (e.name or "").startswith("rewardkit"):
            continue
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
    except BaseException:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\\n".join(failed))
"""


def test_every_module_imports_when_imported_first() -> None:
    """``import rewardkit.builtin.choice`` in a new interpreter once failed with a
    partially initialised module (choice -> math.commitment -> math/__init__ -> reward ->
    choice): every first-party module must import on its own, whatever is imported first."""
    import subprocess
    import sys

    names = sorted(name for name in _modules()
                   if not name.endswith("__main__") and ".rust_compat" not in name)
    done = subprocess.run([sys.executable, "-c", _IMPORT_EACH_FIRST, *names],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", done.stdout
