"""Dependencies point one way: cli -> commands -> ui -> session -> present -> checkpoints -> engine -> torch.
The engine, the checkpoints and the presentation layer never import Qt."""

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QT_FREE = ["attnlab/engine", "attnlab/checkpoints", "attnlab/training", "attnlab/present"]
QT_FREE_PACKAGES = ["attnlab.engine", "attnlab.checkpoints", "attnlab.present"]
FORBIDDEN = ("PySide6", "pyqtgraph", "attnlab.ui", "attnlab.session")

# Run in a fresh interpreter: a meta-path finder refuses PySide6 and pyqtgraph, then every module of the
# given packages is imported. Prints the imported module names, one a line.
BLOCKED_IMPORT = textwrap.dedent("""
    import importlib, pkgutil, sys

    class NoQt:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("PySide6", "pyqtgraph"):
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, NoQt())
    for package in sys.argv[1:]:
        module = importlib.import_module(package)
        print(package)
        for info in pkgutil.walk_packages(module.__path__, package + "."):
            importlib.import_module(info.name)
            print(info.name)
""")


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


def import_blocked(*packages: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED_IMPORT, *packages], capture_output=True, text=True, cwd=ROOT)


def test_the_qt_free_layers_import_with_qt_blocked():
    result = import_blocked(*QT_FREE_PACKAGES)
    assert result.returncode == 0, result.stderr
    imported = set(result.stdout.split())
    files = [p for pkg in QT_FREE_PACKAGES for p in (ROOT / pkg.replace(".", "/")).rglob("*.py")]
    expected = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") for p in files}
    assert expected <= imported, f"not imported: {sorted(expected - imported)}"
    assert "attnlab.present.explain" in imported and "attnlab.present.stages" in imported


def test_the_qt_block_does_stop_a_qt_module():
    """The same block makes a widget module fail, so the test above would notice a Qt import."""
    result = import_blocked("attnlab.ui.stages")
    assert result.returncode != 0
    assert "is blocked in this test" in result.stderr


def lint_imports(*args: str) -> subprocess.CompletedProcess:
    code = (
        "import sys; from importlinter.cli import lint_imports_command; "
        "sys.argv = ['lint-imports', *sys.argv[1:]]; lint_imports_command()"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache", "--no-logo", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_import_linter_contracts_are_kept():
    """The layers and the Qt ban declared in pyproject.toml's [tool.importlinter], checked by import-linter
    itself: it exits 0 only when every contract is kept."""
    pytest.importorskip("importlinter")
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'type = "layers"' in config and '"attnlab.present' in config
    result = lint_imports()
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_linter_reports_a_broken_contract(tmp_path):
    """The exit code the test above relies on: a contract the code breaks (the widgets do import Qt) fails."""
    pytest.importorskip("importlinter")
    config = tmp_path / "broken.toml"
    config.write_text(
        textwrap.dedent("""
        [tool.importlinter]
        root_package = "attnlab"
        include_external_packages = true

        [[tool.importlinter.contracts]]
        name = "The widgets never import Qt (false on purpose)"
        type = "forbidden"
        source_modules = ["attnlab.ui"]
        forbidden_modules = ["PySide6"]
    """),
        encoding="utf-8",
    )
    result = lint_imports("--config", str(config))
    assert result.returncode != 0, result.stdout + result.stderr
