"""Where the main window goes on its screen: its whole frame (title bar included) inside the screen's available
area, a 1024×768 projector too, and its docks narrow enough there that the centre column keeps room for the
decoder-input box and the panels.

Pure geometry on QRects (no window needed), so each rule is tested with any screen size.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize
from PySide6.QtWidgets import QWidget

DEFAULT_SIZE = (1400, 900)  # the window's inside, where the screen has room
# a title bar and borders, before the window manager has said what it draws (a window not shown yet)
FRAME_GUESS = QMargins(2, 32, 2, 4)
SMALL_SCREEN_WIDTH = 1280  # narrower than this: the docks keep their least widths (DOCK_WIDTHS_SMALL)
DOCK_WIDTHS = (290, 280)  # px: the stage list | the toggles, on a wide screen
# on a small screen (a 1024-px projector): the docks at their least widths, the centre column gets the rest (the
# schematic's least width is 220 px; the toggles' rows need 270 px: narrower, they scroll sideways)
DOCK_WIDTHS_SMALL = (220, 270)
TOGGLES_LEAST_WIDTH = 270  # px: the toggles dock's least width (without its scroll bar)


def frame_margins(inner: QRect, frame: QRect) -> QMargins:
    """The window manager's frame around the window's inside (title bar on top); zero before it is known."""
    return QMargins(
        max(0, inner.left() - frame.left()),
        max(0, inner.top() - frame.top()),
        max(0, frame.right() - inner.right()),
        max(0, frame.bottom() - inner.bottom()),
    )


def default_geometry(available: QRect, margins: QMargins = FRAME_GUESS) -> QRect:
    """The window's inside at start: DEFAULT_SIZE where it fits with its frame, else all the available area
    less the frame; centred, so the frame lies wholly inside `available`."""
    room = available.marginsRemoved(margins)
    size = QSize(min(DEFAULT_SIZE[0], room.width()), min(DEFAULT_SIZE[1], room.height()))
    top_left = room.topLeft() + QPoint((room.width() - size.width()) // 2, (room.height() - size.height()) // 2)
    return QRect(top_left, size)


def inside_screen(inner: QRect, frame: QRect, available: QRect, least: QSize | None = None) -> QRect:
    """`inner` (the window's inside, whose frame is `frame`) moved and shrunk so the frame fits in `available`.
    It never shrinks below `least` (the window's least size): such a window keeps its top left corner on
    screen, title bar included, so it can still be moved."""
    margins = frame_margins(inner, frame)
    room = available.marginsRemoved(margins)
    width, height = min(inner.width(), room.width()), min(inner.height(), room.height())
    if least is not None:
        width, height = max(width, least.width()), max(height, least.height())
    x = max(room.left(), min(inner.left(), room.right() + 1 - width))
    y = max(room.top(), min(inner.top(), room.bottom() + 1 - height))
    return QRect(x, y, width, height)


def sized_for_screen(wanted: QSize, available: QRect, margins: QMargins = FRAME_GUESS) -> QSize:
    """A tool window's inside: `wanted` where it fits with its frame in `available`, else as much as fits (a
    1024×768 projector keeps every tool window's colour bar and notes on screen)."""
    room = available.marginsRemoved(margins)
    return QSize(min(wanted.width(), room.width()), min(wanted.height(), room.height()))


def resize_for_screen(window: QWidget, width: int, height: int) -> None:
    """Resize a tool window (head roles, quantization, LoRA, the patching map) to (width, height), or to what its
    screen has room for."""
    screen = window.screen()
    size = QSize(width, height)
    window.resize(sized_for_screen(size, screen.availableGeometry()) if screen is not None else size)


def small_screen(available: QRect) -> bool:
    return available.width() < SMALL_SCREEN_WIDTH


def dock_widths(available: QRect) -> tuple[int, int]:
    """The stage list's and the toggles' first widths: narrower on a small screen."""
    return DOCK_WIDTHS_SMALL if small_screen(available) else DOCK_WIDTHS
