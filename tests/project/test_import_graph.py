"""The engine in floors (issue 33): no import circle in any room, and one engine module loads few others.

The graph is grimp's (the library import-linter reads), built from the source: every `import` statement counts,
those inside functions (lazy imports) and under `if TYPE_CHECKING:` included, so a circle cannot hide behind
either. A circle is a strongly connected component of more than one module; each is listed with the lines
that close it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

import attnlab
from attnlab.engine import mechanisms

ROOMS = ("engine", "checkpoints", "present", "training", "ui", "commands", "session")
NORMS_MODULES = 8  # attnlab modules `import attnlab.engine.norms` may load, the package's own __init__ included


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    graph = grimp.build_graph("attnlab", cache_dir=None)  # lazy and TYPE_CHECKING imports are counted by default
    for entry in mechanisms.REGISTRY:  # score_steps imports these through importlib, which grimp cannot see
        assert entry.module in graph.modules, f"{entry.name}: no module {entry.module}"
        graph.add_import(
            importer="attnlab.engine.score_steps",
            imported=entry.module,
            line_number=0,
            line_contents=f"importlib.import_module({entry.module!r})  # mechanisms.REGISTRY",
        )
    return graph


def circles(graph: grimp.ImportGraph) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
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
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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
                    found.append(component)
    return found


def in_room(module: str, room: str) -> bool:
    name = f"attnlab.{room}"
    return module == name or module.startswith(name + ".")


def described(graph: grimp.ImportGraph, circle: set[str]) -> str:
    """The circle's modules and, for each import between two of them, where it is written."""
    lines = [f"{len(circle)} modules: {', '.join(sorted(circle))}"]
    for importer in sorted(circle):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & circle):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                lines.append(f"  {importer}:{detail['line_number']}: {detail['line_contents']}")
    return "\n".join(lines)


def test_the_graph_counts_lazy_and_type_checking_imports(graph: grimp.ImportGraph) -> None:
    """The check sees the imports a circle hides behind: one inside a function (attnlab's own `__getattr__`
    imports the Trace on first use) and one under TYPE_CHECKING (the same module names LiveModel only there)."""
    imported = graph.find_modules_directly_imported_by("attnlab")
    assert "attnlab.engine.trace" in imported  # a lazy import (inside __getattr__)
    assert "attnlab.engine.live" in imported  # a TYPE_CHECKING import


def test_the_registered_mechanisms_are_edges_of_the_graph(graph: grimp.ImportGraph) -> None:
    """score_steps loads each registered mechanism module by name (importlib); the graph has those edges."""
    assert {entry.module for entry in mechanisms.REGISTRY} <= graph.find_modules_directly_imported_by(
        "attnlab.engine.score_steps"
    )


def test_a_circle_is_found_with_the_lines_that_close_it() -> None:
    """The search itself can fail: a graph with a circle of three and a loose module gives that circle."""
    graph = grimp.ImportGraph()
    for module in ("a", "a.x", "a.y", "a.z", "a.w"):
        graph.add_module(module)
    for importer, imported in (("a.x", "a.y"), ("a.y", "a.z"), ("a.z", "a.x"), ("a.w", "a.x")):
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")
    assert circles(graph) == [{"a.x", "a.y", "a.z"}]
    assert "a.z:1: import a.x" in described(graph, {"a.x", "a.y", "a.z"})


@pytest.mark.parametrize("room", ROOMS)
def test_no_import_circle_in_the_room(graph: grimp.ImportGraph, room: str) -> None:
    """Every room's modules import one another one way only: each module has a floor, and what it imports is
    on a floor below (lazy and TYPE_CHECKING imports included)."""
    found = [c for c in circles(graph) if any(in_room(m, room) for m in c)]
    assert not found, f"import circles in attnlab/{room}:\n" + "\n".join(described(graph, c) for c in found)


def test_a_norm_loads_few_attnlab_modules() -> None:
    """`import attnlab.engine.norms` in a fresh interpreter loads at most NORMS_MODULES attnlab modules: a
    LayerNorm needs the recorder, the derived rules and the names, not the model, the options or the trace."""
    root = str(Path(attnlab.__file__).resolve().parent.parent)
    code = (
        "import sys; import attnlab.engine.norms; "
        "print('\\n'.join(sorted(m for m in sys.modules if m == 'attnlab' or m.startswith('attnlab.'))))"
    )
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, check=True)
    loaded = out.stdout.split()
    assert "attnlab.engine.norms" in loaded
    assert len(loaded) <= NORMS_MODULES, f"{len(loaded)} attnlab modules loaded:\n" + "\n".join(loaded)
