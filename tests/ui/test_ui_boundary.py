"""The widgets' boundary (CONTRIBUTING.md, "The widgets' boundary"), checked on the source where import-linter
cannot see: every module under attnlab/ui is read as an AST and none may

- import attnlab.engine (anywhere, TYPE_CHECKING included: the engine's types reach ui as opaque handles named
  in present/engine_api.py);
- import from present/engine_api outside `if TYPE_CHECKING:` (engine_api holds type names only, nothing to
  call or read at run time);
- use importlib or __import__ (an import no static tool sees), nor define a module `__getattr__` (a lazy
  re-export); present/engine_api.py is held to the same and imports the engine under TYPE_CHECKING only;
- reach into an engine object: `.module.` (the torch module behind a LiveModel), `.checkpoint_tensors`,
  any `…tokenizer` attribute, a model's `.metadata`, a field of a config or of run options (`x.config.arch`,
  `s.options.device`: the handles themselves may be passed on), a trace's `.entries`, `.info` or `.notices`,
  a call of a trace's method (`trace.read(…)`, `trace.save_npz(…)`).
  The words and numbers come from present/ functions instead (present/window_facts.py, model_info.py,
  status_texts.py, schematic_boxes.py, the view-models).

`boundary_violations` returns one "file:line: what" per violation; the test prints them all. The mutation
tests write a small module that breaks each rule to tmp_path and require the checker to name its line."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2] / "attnlab"
UI = ROOT / "ui"
ENGINE_API = ROOT / "present" / "engine_api.py"
ENGINE_API_MODULE = "attnlab.present.engine_api"
# attributes that reach into an engine object (a LiveModel's torch module, its tensors, its tokenizers)
TRACE_FIELDS = ("entries", "info", "notices")  # what a trace holds besides its numbers' names
HANDLES = ("config", "options")  # handles a widget may pass on but not read a field of


def _is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """The lines inside the body of every `if TYPE_CHECKING:` block (not its else)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _imported_modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import statement names: `from a.b import c` names a.b and a.b.c (c may be a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _names_trace(node: ast.expr) -> bool:
    """Whether an expression names a trace (`trace`, `self.trace`, `s.trace`, `shown_trace`)."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    name = name.lower().strip("_")  # not traceReady (a signal) nor traceback
    return name == "trace" or name.endswith("_trace") or name.startswith("trace_")


def _attribute_problem(node: ast.Attribute) -> str | None:
    """What an attribute access reaches into, or None when it is fine."""
    if node.attr == "checkpoint_tensors":
        return "reaches the model's tensors (.checkpoint_tensors)"
    if node.attr.endswith("tokenizer"):
        return f"reaches a tokenizer (.{node.attr})"
    if node.attr == "metadata":
        return "reads a model's metadata (.metadata)"
    if node.attr in TRACE_FIELDS and _names_trace(node.value):
        return f"reads the trace's {node.attr} (.{node.attr})"
    if isinstance(node.value, ast.Attribute) and node.value.attr == "module":
        return f"reaches the torch module behind a model (.module.{node.attr})"
    if isinstance(node.value, ast.Attribute) and node.value.attr in HANDLES:
        return f"reads a field of a handle (.{node.value.attr}.{node.attr})"
    return None


def _call_problem(node: ast.Call) -> str | None:
    """A method of a trace called from ui (the trace is a handle: present/ functions read and write it)."""
    func = node.func
    if isinstance(func, ast.Attribute) and _names_trace(func.value):
        return f"calls a trace's method (.{func.attr}())"
    return None


def _import_problems(node: ast.Import | ast.ImportFrom, guarded: bool, is_api: bool) -> list[str]:
    problems = []
    for module in _imported_modules(node):
        if module == "importlib" or module.startswith("importlib."):
            problems.append(f"uses importlib ({module})")
        elif module == "attnlab.engine" or module.startswith("attnlab.engine."):
            if not is_api:
                problems.append(f"imports the engine ({module})")
            elif not guarded:
                problems.append(f"imports the engine outside TYPE_CHECKING ({module})")
        elif module == ENGINE_API_MODULE and not guarded and not is_api:
            problems.append("imports present/engine_api outside TYPE_CHECKING")
    first: dict[str, str] = {}  # one problem of each kind per statement (`from a import b, c` names a, a.b, a.c)
    for problem in problems:
        first.setdefault(problem.split(" (")[0], problem)
    return list(first.values())


def boundary_violations(path: Path, is_api: bool = False) -> list[str]:
    """Every breach of the boundary in the module at `path`, as "path:line: what". `is_api`: the module is
    present/engine_api.py (it may import the engine, under TYPE_CHECKING only; the attribute rules are for ui)."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    guarded = _type_checking_lines(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found += [(node.lineno, p) for p in _import_problems(node, node.lineno in guarded, is_api)]
        elif isinstance(node, ast.Name) and node.id == "__import__":
            found.append((node.lineno, "uses __import__"))
        elif isinstance(node, ast.Attribute | ast.Call) and not is_api:
            problem = _attribute_problem(node) if isinstance(node, ast.Attribute) else _call_problem(node)
            if problem:
                found.append((node.lineno, problem))
    for stmt in tree.body:  # a module __getattr__: names that appear on first use (a lazy re-export)
        if isinstance(stmt, ast.FunctionDef) and stmt.name in ("__getattr__", "__dir__"):
            found.append((stmt.lineno, f"defines a module {stmt.name} (a lazy re-export)"))
    shown = path.relative_to(ROOT.parent) if path.is_relative_to(ROOT.parent) else path  # file:line from the repo
    return [f"{shown}:{line}: {what}" for line, what in sorted(found)]


def all_violations() -> list[str]:
    """The breaches in every module under attnlab/ui and in present/engine_api.py."""
    found = [v for path in sorted(UI.rglob("*.py")) for v in boundary_violations(path)]
    return found + boundary_violations(ENGINE_API, is_api=True)


def test_the_widgets_stay_behind_the_boundary() -> None:
    found = all_violations()
    assert not found, "the widgets' boundary is broken:\n" + "\n".join(found)


def test_the_checker_reads_every_ui_module() -> None:
    """The walk finds the widgets (a moved folder would otherwise make the check pass on nothing)."""
    modules = {p.relative_to(UI).as_posix() for p in UI.rglob("*.py")}
    assert {"window/main_window.py", "controls/panel.py", "plots/schematic.py", "stages/base.py"} <= modules


def import_circles(graph: Any, prefix: str) -> list[list[str]]:
    """The import circles among the modules under `prefix` (strongly connected components of more than one
    module; every import counted: lazy ones inside functions and TYPE_CHECKING ones too), by Tarjan's walk."""
    modules = sorted(m for m in graph.modules if m == prefix or m.startswith(prefix + "."))
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(part) > 1:
                circles.append(sorted(part))

    for m in modules:
        if m not in index:
            visit(m)
    return circles


def test_no_import_circle_in_ui() -> None:
    grimp = pytest.importorskip("grimp")  # import-linter's graph (the dev extra)
    graph = grimp.build_graph("attnlab", cache_dir=None)
    assert "attnlab.ui.controls.panel" in graph.modules  # the graph is the package's
    assert import_circles(graph, "attnlab.ui") == []


def test_the_circle_finder_finds_a_circle() -> None:
    """A three-module circle and a module outside it: the finder names exactly the circle."""

    class Graph:
        imports = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a", "q.x"}, "p.d": {"p.a"}, "q.x": set()}
        modules = set(imports)

        def find_modules_directly_imported_by(self, module: str) -> set[str]:
            return self.imports[module]

    assert import_circles(Graph(), "p") == [["p.a", "p.b", "p.c"]]


# ---- mutation checks: each rule, broken once in a module written to tmp_path ------------------------------
CLEAN = """from __future__ import annotations
from typing import TYPE_CHECKING
from attnlab.present import words
if TYPE_CHECKING:
    from attnlab.present.engine_api import LiveModel, Trace
def title(trace: Trace, model: LiveModel) -> str:
    session.set_run(trace.config, trace.options)  # handles passed on, not read
    return words.word("self") + str(model.name) + self.tokenizer_path.text()
"""


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("from attnlab.engine import names", "imports the engine (attnlab.engine)"),
        ("import attnlab.engine.trace", "imports the engine (attnlab.engine.trace)"),
        ("from attnlab import engine", "imports the engine (attnlab.engine)"),
        ("if TYPE_CHECKING:\n    from attnlab.engine.live import LiveModel", "imports the engine"),
        ("from attnlab.present.engine_api import Trace", "imports present/engine_api outside TYPE_CHECKING"),
        ("from attnlab.present import engine_api", "imports present/engine_api outside TYPE_CHECKING"),
        ("import importlib", "uses importlib (importlib)"),
        ("from importlib import import_module", "uses importlib (importlib)"),
        ("m = __import__('attnlab.engine.live')", "uses __import__"),
        ("def __getattr__(name: str) -> object:\n    return name", "defines a module __getattr__"),
        ("n = sum(t.numel() for t in model.module.checkpoint_tensors().values())", ".checkpoint_tensors"),
        ("n = model.module.config", "reaches the torch module behind a model (.module.config)"),
        ("tok = model.tgt_tokenizer", "reaches a tokenizer (.tgt_tokenizer)"),
        ("f = model.output_tokenizer.id_to_token", "reaches a tokenizer (.output_tokenizer)"),
        ("keys = list(self.trace.entries)", "reads the trace's entries (.entries)"),
        ("ms = trace.info['compute_ms']", "reads the trace's info (.info)"),
        ("notes = s.trace.notices", "reads the trace's notices (.notices)"),
        ("s.trace.save_npz('run.npz')", "calls a trace's method (.save_npz())"),
        ("values = trace.read('enc.0.self.weights', 1)", "calls a trace's method (.read())"),
        ("spread = model.metadata.get('placement')", "reads a model's metadata (.metadata)"),
        ("arch = s.model.config.arch", "reads a field of a handle (.config.arch)"),
        ("device = s.options.device", "reads a field of a handle (.options.device)"),
    ],
)
def test_the_checker_names_the_line_that_breaks_a_rule(tmp_path: Path, line: str, what: str) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text(CLEAN, encoding="utf-8")
    assert boundary_violations(clean) == []
    broken = tmp_path / "broken.py"
    broken.write_text(CLEAN + line + "\n", encoding="utf-8")
    found = boundary_violations(broken)
    first = len(CLEAN.splitlines()) + 1
    assert found and all(f"{broken}:" in v for v in found), found
    assert any(v.startswith(f"{broken}:{first}") or v.startswith(f"{broken}:{first + 1}") for v in found), found
    assert any(what in v for v in found), found


def test_engine_api_may_name_engine_types_under_type_checking_only(tmp_path: Path) -> None:
    api = tmp_path / "engine_api.py"
    api.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from attnlab.engine.trace import Trace\n")
    assert boundary_violations(api, is_api=True) == []
    api.write_text(api.read_text() + "from attnlab.engine import names\n")
    assert boundary_violations(api, is_api=True) == [
        f"{api}:4: imports the engine outside TYPE_CHECKING (attnlab.engine)"
    ]


def test_a_view_models_entries_field_is_not_a_trace(tmp_path: Path) -> None:
    """`.entries` is a reach-in on a trace only: a view-model's field of that name is plain data; a signal
    named traceReady and the traceback module are not traces either."""
    view = tmp_path / "view.py"
    view.write_text(
        "entry = shown_view.entries\nother = trace.entries\n"
        "session.traceReady.connect(print)\ntext = traceback.format_exc()\n"
    )
    assert boundary_violations(view) == [f"{view}:2: reads the trace's entries (.entries)"]


if __name__ == "__main__":  # python -m tests.ui.test_ui_boundary: list the breaches
    print("\n".join(all_violations()) or "no breaches")
