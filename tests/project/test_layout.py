"""The tests are laid out like the code (tools/place_tests.py says where a file belongs): no test module sits
flat in tests/, every folder is a package, helpers are imported as `tests.support.X` (never through a
`sys.path.insert` or a bare module name), and a new flat file is placed by its name or its imports."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("place_tests", ROOT / "tools" / "place_tests.py")
assert SPEC and SPEC.loader
place = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(place)


def bare_imports(path: Path, local: set[str]) -> list[str]:
    """The modules of tests/ that `path` imports by a bare name (`import hf_tiny`, `from conftest import ...`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in local]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in local:
            found.append(node.module)
    return found


def test_no_test_module_sits_flat_in_tests():
    assert place.flat_files(place.TESTS) == []


def test_every_room_is_a_package():
    assert (place.TESTS / "__init__.py").exists()
    assert [room for room in place.ROOMS if not (place.TESTS / room / "__init__.py").exists()] == []


def test_helpers_are_imported_as_a_package_never_by_a_bare_name():
    local = set(place.placed_modules(place.TESTS)) | {"conftest"}
    files = [*place.TESTS.rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]
    bare = {str(p.relative_to(ROOT)): names for p in files if (names := bare_imports(p, local))}
    assert bare == {}
    needle = "sys.path.insert(0, os.path.dirname(__file__))"  # this file names it, and is left out
    inserted = [str(p.relative_to(ROOT)) for p in files if needle in p.read_text() and p != Path(__file__).resolve()]
    assert inserted == []


def test_a_new_flat_file_is_placed_by_its_name_then_its_imports(tmp_path):
    """The placing rules themselves, on files that are not in the table."""
    (tmp_path / "test_hostile_new_format.py").write_text("")
    (tmp_path / "test_something_drawn.py").write_text("from attnlab.ui.plots.heatmap import Heatmap\n")
    (tmp_path / "test_something_said.py").write_text("from attnlab.present.stages import stages_for\n")
    (tmp_path / "test_only_torch.py").write_text("import torch\n")
    (tmp_path / "new_helper.py").write_text("")
    (tmp_path / "conftest.py").write_text("")
    rooms = {p.name: place.room_for(p) for p in place.flat_files(tmp_path)}
    assert rooms == {
        "new_helper.py": "support",
        "test_hostile_new_format.py": "robustness",
        "test_only_torch.py": "engine",
        "test_something_drawn.py": "ui",
        "test_something_said.py": "present",
    }


def test_imports_and_mentions_are_rewritten_to_the_package():
    modules = {"hf_tiny": "tests.support.hf_tiny", "tiny": "tests.support.tiny", "test_gadget": "tests.ui.test_gadget"}
    source = (
        "import os\nimport hf_tiny as H  # the fixtures\nfrom conftest import build_tiny_model as make\n"
        "from conftest import open_window_helper\nfrom test_gadget import WAIT\n"
        "sys.path.insert(0, os.path.dirname(__file__))\n"
    )
    assert place.rewrite_imports(source, modules) == (
        "import os\nfrom tests.support import hf_tiny as H  # the fixtures\n"
        "from tests.support.tiny import build_tiny_model as make\nfrom tests.conftest import open_window_helper\n"
        "from tests.ui.test_gadget import WAIT\n"
    )
    said = "see tests/test_gadget.py and run python tests/test_gadget.py; tests/ui/test_gadget.py stays"
    assert place.rewrite_mentions(said, {"test_gadget": "ui"}) == (
        "see tests/ui/test_gadget.py and run python -m tests.ui.test_gadget; tests/ui/test_gadget.py stays"
    )
