"""What a student at the back of the room sees (issue 26): a window of exactly 1024×768 in presentation mode, the
bundled translation model on the default sentence. For the first stage of every kind, every heatmap the panel
shows is measured as drawn (attnlab.ui.window.pixel_check: the image mapped into its view's pixels / its rows).

Floors (the targets of issues 26 and 32): one head's attention map and the mask ≥ 36 px per token row, each head
of the all-heads grid ≥ 16 px with every head on screen (8 heads too), add & norm ≥ 24 px with the tokens as its
row labels and its bars' ticks, every other matrix (positional encoding, …) ≥ 12 px; at 100 % the maps of those
stages are wholly on screen; the same floors at 150 %; zooming in (100 → 110 → 150 %) never makes a plot smaller,
except the heads grid, which shrinks (never below its floor) to keep every head on screen."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
from PySide6 import QtGui
from PySide6.QtWidgets import QApplication, QScrollArea

from attnlab.checkpoints import load_bundled
from attnlab.ui.plots.axes import tick_font
from attnlab.ui.plots.head_grid import best_grid_shape, cell_size
from attnlab.ui.plots.heatmap import elide_label
from attnlab.ui.window import zoom
from attnlab.ui.window.main_window import MainWindow
from attnlab.ui.window.pixel_check import RowPixels, row_pixels

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py

SIZE = (1024, 768)
SENTENCE, DECODER_INPUT = "the black cat sees the small dog", "le chat noir voit le"
# the issues' targets, stated here (not read from pixel_check.FLOORS, which the app's benchmark prints)
SINGLE_HEAD_KINDS = ("scores", "scaled", "masked", "weights", "mask")
FLOORS = {**dict.fromkeys(SINGLE_HEAD_KINDS, 36.0), "heads": 16.0, "addnorm": 24.0, "post_norm": 24.0}
OTHER_FLOOR = 12.0  # positional encoding and every other matrix
WHOLE_ON_SCREEN = (*SINGLE_HEAD_KINDS, "heads", "addnorm", "pos")


@pytest.fixture(scope="module")
def translation():
    return load_bundled("translation")


def settled(window: MainWindow) -> list[RowPixels]:
    """The panel's heatmaps once two passes of the event loop in a row leave them as they were."""
    scroll = window.findChild(QScrollArea, "panelScroll")
    before: list[RowPixels] = []
    for i in range(60):  # sizes settle over several passes (a plot's least height follows its axes' new sizes)
        QApplication.processEvents()
        now = row_pixels(window.current_panel(), scroll.viewport())
        if now == before and i >= 10:
            break
        before = now
    return before


def wait_for_trace(window: MainWindow) -> None:
    deadline = time.monotonic() + 60
    while window.session.trace is None or window.session.busy:
        QApplication.processEvents()
        time.sleep(0.01)
        assert time.monotonic() < deadline, "no trace within 60 s"


@contextlib.contextmanager
def presenting(model, zoom_level: float, **options) -> Iterator[MainWindow]:
    """A window presenting at exactly 1024×768 and `zoom_level`, on the default sentence, with `options`."""
    window = MainWindow()
    try:
        window.set_zoom(zoom_level)
        window.show()
        window.set_presenting(True, full_screen=False)
        window.resize(*SIZE)
        window.session.set_model(model, SENTENCE, DECODER_INPUT)
        wait_for_trace(window)
        if options:
            window.session.update_options(**options)
            wait_for_trace(window)
        yield window
    finally:
        window.set_presenting(False)
        window.set_zoom(1.0)
        window.errors.uninstall()
        window.session.shutdown()
        window.close()


def measure(model, zoom_level: float) -> dict[str, list[RowPixels]]:
    """{stage kind: the heatmaps of its first stage} at `zoom_level`, presenting at 1024×768."""
    with presenting(model, zoom_level) as window:
        shown: dict[str, list[RowPixels]] = {}
        for stage in window.session.stages:
            if stage.kind in shown:
                continue
            window.session.set_stage(stage.key)
            shown[stage.kind] = settled(window)
            assert (window.width(), window.height()) == SIZE, f"{stage.key} grew the window"
        return shown


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory):
    """isolated_settings for the module-scoped measurements (they run before any function-scoped fixture)."""
    from PySide6.QtCore import QSettings

    folder = tmp_path_factory.mktemp("settings")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNLAB_SETTINGS", str(folder / "settings.ini"))
        QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(folder))
        yield


@pytest.fixture(scope="module")
def at_100(qapp, module_settings, translation):
    return measure(translation, 1.0)


@pytest.fixture(scope="module")
def at_110(qapp, module_settings, translation):
    return measure(translation, 1.1)  # one Ctrl+= from 100 %


@pytest.fixture(scope="module")
def at_150(qapp, module_settings, translation):
    return measure(translation, 1.5)


def floor_of(kind: str) -> float:
    return FLOORS.get(kind, OTHER_FLOOR)


@pytest.mark.parametrize("which", ["at_100", "at_150"])
def test_every_heatmap_keeps_its_floor_at_1024x768_presenting(request, which):
    shown = request.getfixturevalue(which)
    assert {"weights", "heads", "addnorm", "pos", "scale_why", "probs"} <= set(shown)  # the stage kinds are all here
    counted = sum(len(maps) for maps in shown.values())
    assert counted >= 20  # the heatmaps were found (a measure that finds none would pass any floor)
    low = [
        f"{kind}: {m.line()} < {floor_of(kind)}"
        for kind, maps in shown.items()
        for m in maps
        if m.px_per_row < floor_of(kind)
    ]
    assert not low, "\n".join(low)


def test_the_plots_of_the_main_stages_are_on_screen_at_100(at_100):
    cut = [f"{kind}: {m.line()}" for kind in WHOLE_ON_SCREEN for m in at_100[kind] if m.on_screen < 0.99]
    assert not cut, "\n".join(cut)


def test_zooming_in_never_makes_a_plot_smaller(at_100, at_110, at_150):
    smaller = []
    for kind, maps in at_100.items():
        if kind == "heads":  # the grid shrinks to keep every head on screen (its floor is checked above)
            continue
        for lower, higher, step in ((maps, at_110[kind], "100 → 110 %"), (at_110[kind], at_150[kind], "110 → 150 %")):
            assert len(higher) == len(lower), kind
            for before, after in zip(lower, higher, strict=True):
                if after.px_per_row < before.px_per_row - 0.5:
                    smaller.append(f"{kind} {step}: {before.line()} → {after.px_per_row:.1f} px/row")
    assert not smaller, "\n".join(smaller)
    grown = [
        a.px_per_row / b.px_per_row
        for kind in at_100
        if kind != "heads"
        for b, a in zip(at_100[kind], at_150[kind], strict=True)
    ]
    assert grown and min(grown) > 1.2  # the plots grow with the text (1.5 × where they fit the room)


def test_presenting_folds_the_explanation_and_e_brings_it_back(qtbot, translation):
    window = MainWindow()
    qtbot.addWidget(window)
    try:
        window.show()
        qtbot.waitExposed(window)
        assert window.explanation.isVisible()
        window.set_presenting(True, full_screen=False)
        assert not window.explanation.isVisible() and window.present_hint.isVisible()
        assert "E: explanation" in window.present_hint.text()
        assert zoom.row_floor(zoom.ROW_PX_ATTENTION) > 0
        qtbot.keyClick(window.navigator, "e")
        assert window.explanation.isVisible()
        qtbot.keyClick(window.navigator, "e")
        assert not window.explanation.isVisible()
        window.set_presenting(False)
        assert window.explanation.isVisible() and not window.present_hint.isVisible()
        assert zoom.row_floor(zoom.ROW_PX_ATTENTION) == 0.0  # outside presentation the plots fill the room
    finally:
        window.set_presenting(False)
        window.errors.uninstall()
        window.session.shutdown()
        window.close()


def test_the_default_window_fits_a_1024x768_screen(qtbot, translation):
    """Not presenting: the window's least width leaves room on a 1024-px screen (the toggles dock's rows wrap and
    its combo boxes elide), the toggles dock lies inside the window, no stage grows the window past its screen,
    and every token chip is shown."""
    window = MainWindow()
    qtbot.addWidget(window)
    try:
        window.resize(*SIZE)
        window.show()
        qtbot.waitExposed(window)
        with qtbot.waitSignal(window.session.traceReady, timeout=60000):
            window.session.set_model(translation, SENTENCE, DECODER_INPUT)
        assert window.minimumSizeHint().width() <= 0.92 * SIZE[0]  # main_window.default_size on a 1024-px screen
        screen = window.screen().availableGeometry()
        for key in ("src.tokens", "enc.0.norm1", "src.input", "enc.0.self.weights"):
            window.session.set_stage(key)
            settled(window)
            toggles = window.controls_dock.geometry()
            assert window.width() == SIZE[0] and toggles.right() < window.width(), key
            assert window.frameGeometry().height() <= screen.height(), f"{key} grew the window past its screen"
        window.session.set_stage("src.tokens")
        settled(window)
        chips = window.current_panel()._scroll
        assert chips.verticalScrollBar().maximum() == 0  # all 8 chips, none below a scroll bar
    finally:
        window.errors.uninstall()
        window.session.shutdown()
        window.close()


@pytest.mark.parametrize(
    ("room", "expected"),
    [((1000, 300), (1, 4)), ((300, 1000), (4, 1)), ((600, 600), (2, 2))],  # wide, tall, square rooms
)
def test_the_heads_grid_takes_the_arrangement_with_the_largest_squarest_cells(room, expected):
    # 4 heads of 8 × 8 and nothing but cells: 1×4 in 1000×300 gives cells 31 × 37 px, 2×2 gives 62 × 19
    assert best_grid_shape(4, (8, 8), room, (0, 0, 0, 0)) == expected
    chosen = min(cell_size(expected, (8, 8), room, (0, 0, 0, 0)))
    for shape in ((1, 4), (2, 2), (4, 1)):
        assert chosen >= min(cell_size(shape, (8, 8), room, (0, 0, 0, 0)))


def test_the_heads_grid_leaves_no_empty_row():
    for heads in range(1, 13):
        rows, cols = best_grid_shape(heads, (6, 6), (900, 500), (80, 60, 4, 20))
        assert rows * cols >= heads and (rows - 1) * cols < heads


def shown_stage(window: MainWindow, key: str) -> list[RowPixels]:
    window.session.set_stage(key)
    return settled(window)


@pytest.mark.parametrize("zoom_level", [1.0, 1.5])
@pytest.mark.parametrize(
    ("key", "norm"), [("enc.0.norm1", "trained"), ("dec.0.norm2", "trained"), ("dec.0.norm2", "pre")]
)
def test_add_and_norm_reads_from_the_back(qapp, module_settings, translation, zoom_level, key, norm):
    """Issue 32 item 4: ≥ 24 px per token row, the rows labelled by token, a token name under each pair of bars,
    the bar charts tall enough for several value ticks, every title whole (at 100 % and 150 %; pre-norm's titles
    are the longest: "x + cross-attention(LayerNorm(x))")."""
    with presenting(translation, zoom_level, **({"norm": norm} if norm != "trained" else {})) as window:
        maps = shown_stage(window, key)
        panel = window.current_panel()
        tokens = panel.shown_data()["tokens"]
        assert len(maps) == 3 and len(tokens) >= 6
        assert min(m.px_per_row for m in maps) >= 24.0, [m.line() for m in maps]
        if zoom_level == 1.0:
            assert all(m.on_screen >= 0.99 for m in maps), [m.line() for m in maps]
        for heatmap in panel._maps:
            left = heatmap.plot_item().getAxis("left")
            assert left.mode == "labels" and left.labels == [elide_label(t) for t in tokens]  # not 0 and 5
            header = heatmap.header()  # the title whole: never elided, tall enough for its lines at its width
            assert header.text().replace("\u200b", "") == header.full_text() and "…" not in header.text()
            assert header.height() >= header.heightForWidth(header.width()) > 0
        for plot in (panel._mean_plot, panel._var_plot):
            axis = plot.getPlotItem().getAxis("bottom")  # a decoder row "<s> → le" on two lines
            assert [text.replace(" →\n", " → ") for _pos, text in axis._tickLevels[0]] == tokens
            values = plot.getPlotItem().getAxis("left").tickValues(*plot.getPlotItem().viewRange()[1], 400)
            shown = {v for _spacing, level in values for v in level}
            low, high = plot.getPlotItem().viewRange()[1]
            assert len({v for v in shown if low <= v <= high}) >= 2  # more than one tick on the value axis
            assert plot.getPlotItem().getViewBox().height() >= 3 * QtGui.QFontMetrics(tick_font()).lineSpacing()


@pytest.mark.parametrize("zoom_level", [1.0, 1.5])
def test_eight_heads_are_all_on_screen_at_their_floor(qapp, module_settings, translation, zoom_level):
    """Issue 32: with 8 heads toggled, the all-heads grid shows every head on screen at ≥ 16 px per row; with the
    Toggles dock brought back (T), the dock has no sideways scroll bar and, at 100 %, the heads still fit."""
    with presenting(translation, zoom_level, n_heads=8) as window:
        heads = shown_stage(window, "enc.0.self.heads")
        assert len(heads) == 8
        low = [m.line() for m in heads if m.px_per_row < 16.0 or m.on_screen < 0.99]
        assert not low, low
        window.controls_dock.setVisible(True)
        heads = settled(window)
        scroll = window.controls_dock.widget()
        assert isinstance(scroll, QScrollArea)
        for _ in range(5):
            QApplication.processEvents()
        assert (window.width(), window.height()) == SIZE  # the dock did not widen the window past its screen
        assert window.controls_dock.geometry().right() <= window.width()
        if zoom_level == 1.0:
            assert scroll.horizontalScrollBar().maximum() == 0  # nothing of the toggles cut at the right
        low = [m.line() for m in heads if m.px_per_row < 16.0 or (zoom_level == 1.0 and m.on_screen < 0.99)]
        assert len(heads) == 8 and not low, low  # at 150 % the dock leaves too little room: the grid scrolls
