"""Dependencies point one way: ui -> session -> {checkpoints, engine} -> torch. The engine never imports Qt."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QT_FREE = ["attnlab/engine", "attnlab/checkpoints", "attnlab/training", "attnlab/present"]
FORBIDDEN = ("PySide6", "pyqtgraph", "attnlab.ui", "attnlab.session")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def qt_free_files() -> list[Path]:
    files: list[Path] = []
    for entry in QT_FREE:
        p = ROOT / entry
        files += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return files


@pytest.mark.parametrize("path", qt_free_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_qt_imports_in_engine_layer(path):
    bad = sorted(m for m in imported_modules(path) if m.startswith(FORBIDDEN))
    assert not bad, f"{path.relative_to(ROOT)} imports {bad}; the engine layer must stay Qt-free"


def test_importing_the_engine_loads_no_qt():
    code = ("import sys, attnlab, attnlab.engine.live, attnlab.checkpoints, attnlab.present.stages;"
            "bad = [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph'))];"
            "assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_import_linter_contract_is_kept():
    """The same rule as declared in pyproject.toml's [tool.importlinter], checked by import-linter itself."""
    linter = pytest.importorskip("importlinter")
    assert linter
    result = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                             "lint_imports_command()"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and "1 kept, 0 broken" in result.stdout, result.stdout + result.stderr
