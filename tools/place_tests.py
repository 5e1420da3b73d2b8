#!/usr/bin/env python3
"""Where a test file lives: tests/ is laid out like the code (issue 33, item 8).

    tests/engine/       the run, the trace, options, tokenizers: attnlab.engine
    tests/checkpoints/  reading and checking files, the Hugging Face cache, snapshots: attnlab.checkpoints
    tests/families/     each Hugging Face family against `transformers` (fixtures: tests/support/hf_tiny*.py,
                        collected by the registry tests/support/family_cases.py)
    tests/present/      stages, views, explanations, lessons: attnlab.present (Qt-free)
    tests/session/      the Session (runs off the GUI thread)
    tests/ui/           widgets and the window (pytest-qt)
    tests/commands/     the `attnlab` sub-commands and the CLI
    tests/training/     training, corpora, the bundled model's quality
    tests/robustness/   hostile files and inputs, storms and soaks
    tests/project/      the repository as a whole: import layers, packaging, documented examples
    tests/support/      importable helpers (`from tests.support.hf_tiny import ...`); fixtures stay in conftest.py
    tests/golden/       golden text files

    python tools/place_tests.py            # what would move: each flat tests/*.py and where it belongs
    python tools/place_tests.py --apply    # git mv them, then rewrite the imports and paths that name them
                                           # (run it after merging a branch that added or named flat tests)
    python tools/place_tests.py --check    # exit 1 while a file sits flat in tests/ (tests/project/test_layout.py)

A flat tests/test_*.py (a new one, or one merged from a branch that wrote it there) is placed by the table
PLACE, then by its name's prefix (PREFIXES), then by the highest attnlab layer it imports; any other flat
module is a helper and goes to tests/support/. --apply moves it with `git mv` (history follows), rewrites
`from conftest import` / `from hf_tiny import` / `import hostile_files` / `from test_x import` into package
imports (`from tests.support.hf_tiny import ...`, `from tests.ui.test_x import ...`), drops
`sys.path.insert(0, os.path.dirname(__file__))`, deepens `Path(__file__).resolve().parents[N]`, and rewrites
"tests/NAME.py" mentions in the repository (attnlab/, docs, README, .ci, packaging, pyproject) for every
module that lives in a room. Then run
`ruff check --fix . && ruff format .` (import order) and `pytest --collect-only -q`.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
ROOMS = (
    "engine",
    "checkpoints",
    "families",
    "present",
    "session",
    "ui",
    "commands",
    "training",
    "robustness",
    "project",
    "support",
)
KEEP_FLAT = {"conftest.py", "__init__.py"}
# names the tests import from conftest.py that live in tests/support/tiny.py
TINY_NAMES = {"build_tiny_model", "assert_same_trace", "shown_widget", "WINDOW_SRC", "WINDOW_TGT", "WINDOW_WAIT_MS"}
TINY_NAMES |= {"TEXTS", "TINY_SIZES"}

_ROOM_FILES = {
    "engine": """ablation ablation_reuse device_memory final_norm gpu logit_lens memory_refusal names offload
        option_specs overview projections recorder_views reference_torch replay trace_budget trace_derived
        trace_device trace_linear trace_names trace_out trace_resume trace_shapes trace_toggles worked_examples
        departures space_marks imported_architectures model_tokenizers""",
    "checkpoints": """checkpoints cached_models cached_revisions hf_cache hf_folder_files folder_tokenizers
        gguf_refusal open_nanogpt_bare snapshots tokenizer_layouts tokenizer_bertish hf_bart_tokenizers
        weights_as_stored""",
    "families": """hf_alibi hf_alibi_folders hf_bart hf_bart_generate hf_bertish hf_deberta hf_families
        hf_models hf_moe hf_norms hf_reference hf_t5 bert_relative_key head_dim family_lists deberta_stages
        present_families texts_per_family""",
    "present": """present_compare present_explain present_explain_imported present_jumps present_stages
        present_texts views views_inputs views_output stages stages_alibi stage_golden colour_scale
        compare_forms formulas_follow_model position_range prediction_labels readable_texts scaling_long
        scaling_norms lesson_questions lessons weight_scale decoder_input untrained_banner""",
    "session": "session session_warm",
    "ui": """app app_alibi app_bart app_get_model app_imported app_open_models app_sentence_pairs app_study
        about axes_ticks axis_titles bars classroom_panels clip_check contrast dark_theme head_menu heatmap
        long_map_view long_token_panels model_view narrow_centre overview_strip panel_area present_keys
        present_mode projector_pixels quit_after_trace raster snapshot_slider steady_repaint temperature_axis
        temperature_ui unchanged_repaint window_geometry one_way_round click_budget precision_app
        no_tokenizer_input start_stage""",
    "commands": "cli cli_teacher render_export render_slides app_checkpoint_flag get",
    "training": "additive additive_eval classroom_models corpus everyday_corpus lexicon typed_sentences",
    "robustness": """hostile_api hostile_app hostile_app_open hostile_app_paint hostile_app_tokenizer
        hostile_cache_links hostile_checkpoints hostile_cli hostile_surfaces_files hostile_surfaces_readers
        soak storm""",
    "project": "architecture packaging documented_examples startup_imports import_graph layout",
}
# test_<stem>.py -> its room, for the files that were flat before this layout
PLACE = {f"test_{stem}.py": room for room, stems in _ROOM_FILES.items() for stem in stems.split()}
# a new file's room by its name (first match wins)
PREFIXES = (
    ("test_hostile", "robustness"),
    ("test_soak", "robustness"),
    ("test_storm", "robustness"),
    ("test_fuzz", "robustness"),
    ("test_hf_cache", "checkpoints"),
    ("test_hf_", "families"),
    ("test_family", "families"),
    ("test_gguf", "checkpoints"),
    ("test_quantiz", "checkpoints"),
    ("test_checkpoint", "checkpoints"),
    ("test_cache", "checkpoints"),
    ("test_tokenizer", "checkpoints"),
    ("test_import", "project"),
    ("test_architecture", "project"),
    ("test_packaging", "project"),
    ("test_boundary", "project"),
    ("test_trace", "engine"),
    ("test_engine", "engine"),
    ("test_score", "engine"),
    ("test_mechanism", "engine"),
    ("test_recorder", "engine"),
    ("test_replay", "engine"),
    ("test_live", "engine"),
    ("test_present", "present"),
    ("test_views", "present"),
    ("test_stage", "present"),
    ("test_explain", "present"),
    ("test_lesson", "present"),
    ("test_session", "session"),
    ("test_job", "session"),
    ("test_app", "ui"),
    ("test_window", "ui"),
    ("test_head_grid", "ui"),
    ("test_panel", "ui"),
    ("test_ui", "ui"),
    ("test_cli", "commands"),
    ("test_render", "commands"),
    ("test_command", "commands"),
    ("test_train", "training"),
)
# the highest layer a file imports decides last (cli -> commands -> ui -> session -> present|training -> ...)
LAYERS = (
    ("attnlab.cli", "commands"),
    ("attnlab.commands", "commands"),
    ("attnlab.ui", "ui"),
    ("qtbot", "ui"),
    ("attnlab.session", "session"),
    ("attnlab.present", "present"),
    ("attnlab.training", "training"),
    ("attnlab.checkpoints", "checkpoints"),
)


def room_for(path: Path) -> str:
    """The room a flat tests/ file belongs in."""
    name = path.name
    if not name.startswith("test_"):
        return "support"
    if name in PLACE:
        return PLACE[name]
    for prefix, room in PREFIXES:
        if name.startswith(prefix):
            return room
    text = path.read_text(encoding="utf-8")
    for marker, room in LAYERS:
        if marker in text:
            return room
    return "engine"


def flat_files(tests: Path = TESTS) -> list[Path]:
    """The .py files directly in tests/ that belong in a room."""
    return sorted(p for p in tests.glob("*.py") if p.name not in KEEP_FLAT)


def placed_modules(tests: Path = TESTS) -> dict[str, str]:
    """Every module of a room, by stem -> its dotted package path ("tests.ui.test_app")."""
    found = {}
    for room in ROOMS:
        for p in sorted((tests / room).glob("*.py")):
            if p.name != "__init__.py":
                found[p.stem] = f"tests.{room}.{p.stem}"
    return found


def rewrite_imports(text: str, modules: dict[str, str]) -> str:
    """Bare imports of helpers, conftest and other test modules -> package imports."""

    def from_conftest(m: re.Match) -> str:
        names = {part.split(" as ")[0].strip() for part in m.group(2).split("#")[0].strip(" ()").split(",")}
        home = "tests.support.tiny" if names <= TINY_NAMES else "tests.conftest"
        return f"{m.group(1)}from {home} import {m.group(2)}"

    text = re.sub(r"^(\s*)from conftest import (.+)$", from_conftest, text, flags=re.M)

    def from_module(m: re.Match) -> str:
        stem = m.group(2)
        return f"{m.group(1)}from {modules[stem]} import" if stem in modules else m.group(0)

    text = re.sub(r"^(\s*)from (?:tests\.)?(\w+) import", from_module, text, flags=re.M)  # tests.test_x: flat

    def import_module(m: re.Match) -> str:
        stem = m.group(2)
        if stem not in modules:
            return m.group(0)
        package, _, leaf = modules[stem].rpartition(".")
        return f"{m.group(1)}from {package} import {leaf}{m.group(3)}"

    text = re.sub(r"^(\s*)import (\w+)((?: as \w+)?(?:\s*#.*)?)$", import_module, text, flags=re.M)
    text = re.sub(r"^sys\.path\.insert\(0, os\.path\.dirname\(__file__\)\)\n", "", text, flags=re.M)
    # a benchmark put tests/ on sys.path for bare imports: the repository root serves the package imports
    return re.sub(r'(sys\.path\.insert\(0, str\([^)\n]*?) / "tests"\)\)', r"\1))", text)


def deepen(text: str, support: set[str]) -> str:
    """A file moved one folder down: the paths it builds from __file__ climb one level more."""
    text = re.sub(
        r"Path\(__file__\)\.resolve\(\)\.parents\[(\d)\]",
        lambda m: f"Path(__file__).resolve().parents[{int(m.group(1)) + 1}]",
        text,
    )
    text = re.sub(r'Path\(__file__\)\.parent / "golden"', 'Path(__file__).resolve().parents[1] / "golden"', text)

    def sibling(m: re.Match) -> str:
        stem = m.group(1)
        if stem in support:
            return f'Path(__file__).resolve().parents[1] / "support" / "{stem}.py"'
        return m.group(0)

    return re.sub(r'Path\(__file__\)\.with_name\("(\w+)\.py"\)', sibling, text)


def rewrite_mentions(text: str, moved: dict[str, str]) -> str:
    """ "tests/NAME.py" -> "tests/ROOM/NAME.py"; "python tests/NAME.py" (a test run as a script) -> "-m"."""

    def script(m: re.Match) -> str:
        return f"python -m tests.{moved[m.group(1)]}.{m.group(1)}" if m.group(1) in moved else m.group(0)

    text = re.sub(r"python tests/(\w+)\.py", script, text)

    def mention(m: re.Match) -> str:
        return f"tests/{moved[m.group(1)]}/{m.group(1)}.py" if m.group(1) in moved else m.group(0)

    return re.sub(r"(?<![\w/.])tests/(\w+)\.py", mention, text)


def code_files() -> list[Path]:
    """The files that may import a test module: the tests, the benchmarks, the tools."""
    found = [*TESTS.rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "tools").glob("*.py")]
    return [p for p in found if p.resolve() != Path(__file__).resolve()]


def text_files() -> list[Path]:
    """The repository's files that may name a test file ("tests/test_x.py"): code, comments, documents."""
    found = [*code_files(), *(ROOT / "attnlab").rglob("*.py"), *ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")]
    found += [ROOT / "pyproject.toml", *(ROOT / ".ci").glob("*"), *(ROOT / "packaging").glob("*")]
    return sorted({p for p in found if p.is_file() and p.resolve() != Path(__file__).resolve()})


def apply(moves: dict[Path, str]) -> list[Path]:
    """Move `moves` into their rooms, then rewrite every import and mention of a module that now lives in a room
    (all of them, not only those moved now: a branch merged later may still name a flat path). The files
    changed."""
    for room in ROOMS:
        (TESTS / room).mkdir(exist_ok=True)
    for init in [TESTS / "__init__.py", *(TESTS / room / "__init__.py" for room in ROOMS)]:
        if not init.exists():
            init.write_text("")
            subprocess.run(["git", "add", str(init)], cwd=ROOT, check=True)
    for path, room in moves.items():
        subprocess.run(["git", "mv", str(path), str(TESTS / room / path.name)], cwd=ROOT, check=True)
    modules = placed_modules()
    rooms = {stem: dotted.split(".")[1] for stem, dotted in modules.items()}
    support = {stem for stem, room in rooms.items() if room == "support"}
    deeper = {TESTS / room / path.name for path, room in moves.items()}
    code = set(code_files())
    changed = []
    for path in text_files():
        text = path.read_text(encoding="utf-8")
        new = rewrite_mentions(text, rooms)
        if path in code and path.suffix == ".py":
            new = rewrite_imports(new, modules)
            if path in deeper:
                new = deepen(new, support)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--apply", action="store_true", help="git mv the files and rewrite what names them")
    parser.add_argument("--check", action="store_true", help="exit 1 while a file sits flat in tests/")
    args = parser.parse_args(argv)
    moves = {path: room_for(path) for path in flat_files()}
    for path, room in moves.items():
        print(f"tests/{path.name} -> tests/{room}/{path.name}")
    if args.check:
        return 1 if moves else 0
    if args.apply:
        changed = apply(moves)
        print(f"moved {len(moves)}, rewrote {len(changed)} files; now: ruff check --fix . && ruff format . (lines")
        print("that grew past 120 characters are wrapped by hand) && pytest --collect-only -q")
    return 0


if __name__ == "__main__":
    sys.exit(main())
