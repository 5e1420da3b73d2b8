"""The main window on small screens (issue 32): its frame, title bar included, inside the screen's available area
at start and after leaving presentation mode, and a centre column with room for the decoder-input box.

The rules are pure geometry (attnlab/ui/window/geometry.py), tested on any screen size; the window itself is
tested on the screen the offscreen platform has."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMargins, QRect, QSize
from PySide6.QtWidgets import QApplication

from attnlab.ui.window import geometry
from attnlab.ui.window.main_window import MainWindow

WAIT = 15000
OPENBOX = QMargins(1, 20, 1, 5)  # the frame openbox draws (measured under Xvfb: title bar 20 px)
SCREENS = [
    QRect(0, 0, 1024, 768),  # a projector
    QRect(0, 0, 1280, 720),
    QRect(0, 0, 1366, 740),  # a laptop less its panel
    QRect(0, 0, 1920, 1050),
    QRect(1920, 0, 1024, 768),  # a projector right of the laptop's screen
    QRect(0, 32, 1024, 736),  # a top panel
]

pytestmark = pytest.mark.usefixtures("isolated_settings")  # tests/conftest.py


@pytest.mark.parametrize("available", SCREENS)
@pytest.mark.parametrize("margins", [OPENBOX, geometry.FRAME_GUESS, QMargins()])
def test_the_start_geometry_puts_the_whole_frame_on_screen(available, margins):
    inner = geometry.default_geometry(available, margins)
    assert available.contains(inner.marginsAdded(margins))
    wanted = QSize(*geometry.DEFAULT_SIZE)
    room = available.marginsRemoved(margins).size()
    # the default size where it fits; else all the room there is (not 92 % of it)
    assert inner.size() == wanted.boundedTo(room)


@pytest.mark.parametrize("available", SCREENS)
def test_a_window_off_or_past_its_screen_is_brought_inside(available):
    for inner in (
        QRect(available.left(), available.top(), 1024, 929),  # the window the issue found after presenting
        QRect(available.right() - 100, available.bottom() - 50, 800, 600),  # mostly off the bottom right
        QRect(available.left() - 300, available.top() - 200, 700, 500),  # off the top left, title bar too
    ):
        frame = inner.marginsAdded(OPENBOX)
        placed = geometry.inside_screen(inner, frame, available)
        assert available.contains(placed.marginsAdded(OPENBOX)), (inner, placed)
        assert placed.width() <= inner.width() and placed.height() <= inner.height()
    inside = QRect(available.left() + 10, available.top() + 30, 400, 300)
    assert geometry.inside_screen(inside, inside.marginsAdded(OPENBOX), available) == inside  # left alone


def test_a_window_that_cannot_shrink_keeps_its_title_bar_on_screen():
    available = QRect(0, 0, 1024, 768)
    inner = QRect(500, 400, 900, 700)
    placed = geometry.inside_screen(inner, inner.marginsAdded(OPENBOX), available, least=QSize(1100, 800))
    assert placed.size() == QSize(1100, 800)
    assert placed.topLeft() == available.marginsRemoved(OPENBOX).topLeft()  # the title bar can still be grabbed


def test_the_docks_start_narrower_on_a_small_screen():
    small, wide = geometry.dock_widths(QRect(0, 0, 1024, 768)), geometry.dock_widths(QRect(0, 0, 1920, 1080))
    assert sum(small) < sum(wide)


@pytest.fixture
def win(open_window, generating_model):
    w = open_window(generating_model())  # tests/conftest.py
    yield w
    w.set_presenting(False)
    w.close()


PROJECTOR = QRect(0, 0, 1024, 768)


@pytest.fixture
def projector(win, monkeypatch):
    """The window on a 1024×768 screen (the offscreen platform's is 800×800, narrower than the window's least
    width): keep_on_screen and the start placement read this available area."""
    monkeypatch.setattr(win, "available_geometry", lambda: PROJECTOR)
    win.keep_on_screen()
    return win


def frame_inside(w: MainWindow) -> bool:
    return PROJECTOR.contains(w.frameGeometry())


def test_leaving_presentation_puts_the_window_back_inside_the_screen(qtbot, projector):
    w = projector
    w.setGeometry(40, 60, 950, 700)
    before = w.geometry()
    assert frame_inside(w)
    w.set_presenting(True)  # full screen, larger text: the window's least size grows
    qtbot.waitUntil(lambda: w.isFullScreen(), timeout=5000)
    w.set_presenting(False)
    qtbot.waitUntil(lambda: not w.isFullScreen(), timeout=5000)
    qtbot.wait(1200)  # the placements after leaving (0, 300 and 1000 ms)
    # as wide as it was, inside the screen (the issue found 1024×929 on a 768-px screen); its height may be its
    # least height (kept whole for an 800-px screen: the offscreen platform's, whatever this test says)
    assert frame_inside(w) and w.width() == before.width() and not w.isFullScreen()


def test_a_window_restored_past_its_screen_comes_back_inside(qtbot, projector):
    w = projector
    w.setGeometry(300, 200, 1000, 740)
    assert not frame_inside(w)
    w.keep_on_screen()
    assert frame_inside(w)


def test_the_centre_column_has_room_at_1024x768(qtbot, open_window, generating_model):
    """On a small screen the docks start at their least widths: in the inside of a window framed by openbox on a
    1024×768 screen (1020 px) they leave the centre column the room for the decoder-input box (the issue measured
    400 px and 40 px). The offscreen screen is 800 px wide, so the docks are measured and the sum is done here."""
    w = open_window(generating_model())  # tests/conftest.py
    for _ in range(10):
        QApplication.processEvents()
    left = max(w.nav_dock.minimumSizeHint().width(), w.schematic_dock.minimumSizeHint().width())
    right = w.controls_dock.minimumSizeHint().width()
    assert w.nav_dock.width() <= left + 10 and w.controls_dock.width() <= right + 10  # at their least widths
    centre = 1020 - w.nav_dock.width() - w.controls_dock.width() - 12  # two dock separators
    assert centre >= 480 and w.minimumSizeHint().width() <= 1020
    # the decoder-input box gets what the centre has beyond its label and buttons
    taken = w.centralWidget().width() - w.inputs.tgt.width()
    assert centre - taken >= 120
    w.close()


@pytest.mark.parametrize("sized", [False, True])
def test_the_start_placement_keeps_the_window_on_screen_unless_a_caller_sized_it(qtbot, monkeypatch, sized):
    """A remembered geometry from a larger screen comes back inside this one; a window a caller sized (a test
    or a screenshot standing for a larger screen) keeps its size."""
    w = MainWindow()
    qtbot.addWidget(w)
    monkeypatch.setattr(w, "available_geometry", lambda: PROJECTOR)
    w.setGeometry(600, 500, 1000, 740)  # as restoreGeometry leaves it: partly off the projector
    if sized:
        w.resize(1000, 740)
    w.show()
    qtbot.waitExposed(w)
    qtbot.wait(400)  # the placements after the first show (0 and 300 ms)
    assert frame_inside(w) is not sized
    w.close()


@pytest.mark.parametrize("screen", [QRect(0, 0, 1024, 768), QRect(0, 0, 1920, 1080)])
def test_a_tool_window_fits_the_screen_with_its_frame(screen: QRect) -> None:
    """The head-roles window asks for 1100×700: on a 1024×768 projector it gets what fits beside its frame (its
    colour bar and notes were cut off at the right edge), on a wide screen what it asked for."""
    size = geometry.sized_for_screen(QSize(1100, 700), screen)
    room = screen.marginsRemoved(geometry.FRAME_GUESS)
    assert size.width() <= room.width() and size.height() <= room.height()
    if room.width() >= 1100 and room.height() >= 700:
        assert size == QSize(1100, 700)
    else:
        assert size.width() == min(1100, room.width()) and size.height() == min(700, room.height())
