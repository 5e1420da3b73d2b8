"""The token chips of the tokenization stage, virtualised (issue 23: long inputs): a list model over the
view-model's chips and a QListView that wraps them like words and paints only the chips in view, so 8,192 tokens
are one widget, not 8,192. Each chip: its position (top), the token piece, its vocabulary id (bottom); special
tokens dashed, padding dotted, unknown red; the tooltip says it all in words."""

from __future__ import annotations

import math

from PySide6 import QtCore, QtGui, QtWidgets
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize, Qt

from attnlab.present.views.inputs import Chip
from attnlab.ui.window import zoom

# kind -> (fill, text, border, pen style): the chip colours of the classroom panel
CHIP_LOOK = {
    "word": ("#e6f0fb", "#0d2440", "#3b7dd8", Qt.PenStyle.SolidLine),
    "special": ("#fff2cc", "#5a3d00", "#c98a00", Qt.PenStyle.DashLine),
    "pad": ("#ececec", "#5a5a5a", "#8a8a8a", Qt.PenStyle.DotLine),
    "unk": ("#fde3e1", "#6b1510", "#c0392b", Qt.PenStyle.DashLine),
}
# a conversation's chips (present/chat_marks.py): the person's words as words; role tags and template text apart
ORIGIN_LOOK = {
    "role": ("#efe3fb", "#3d1459", "#8e44ad", Qt.PenStyle.SolidLine),
    "template": ("#eeeeee", "#2b2b2b", "#9a9a9a", Qt.PenStyle.SolidLine),
}
ORIGIN_WORDS = {"template": "template text", "role": "role tag", "words": "the person's words", "special": "special"}
CHIP_NOTE_INK = "#555555"  # the position and id lines: 4.5:1 or more on every chip's fill (issue 32)
KIND_WORDS = {"word": "token", "special": "special token", "pad": "padding", "unk": "unknown token"}
CHIP_POINTS = (11.0, 24.0, 12.0)  # position, piece, id
PAD_X, PAD_Y, RADIUS, BORDER = 10, 4, 9.0, 2.0
MAX_PIECE_PX = 220  # a longer piece is cut with '…' on its chip (the tooltip has it whole)
GAP = 8  # between chips
ChipRole = Qt.ItemDataRole.UserRole + 1


def chip_fonts() -> tuple[QtGui.QFont, QtGui.QFont, QtGui.QFont]:
    fonts = []
    for size in CHIP_POINTS:
        font = QtGui.QFont(QtWidgets.QApplication.font())
        font.setPointSizeF(zoom.points(size))
        fonts.append(font)
    return fonts[0], fonts[1], fonts[2]


class ChipModel(QtCore.QAbstractListModel):
    """One row per token; DisplayRole the printable piece, ToolTipRole the chip in words, ChipRole the Chip."""

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.chips: tuple[Chip, ...] = ()

    def set_chips(self, chips: tuple[Chip, ...]) -> None:
        self.beginResetModel()
        self.chips = chips
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.chips)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self.chips):
            return None
        chip = self.chips[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return chip.printable
        if role == Qt.ItemDataRole.ToolTipRole:
            kind = KIND_WORDS.get(chip.kind, "token")
            origin = f" · from {ORIGIN_WORDS[chip.origin]}" if chip.origin in ORIGIN_WORDS else ""
            return f"position {chip.position} · {kind} {chip.piece!r} · id {chip.token_id}{origin}"
        if role == ChipRole:
            return chip
        return None


class ChipDelegate(QtWidgets.QStyledItemDelegate):
    """Paints one chip in the uniform size `size` (set from the widest piece, up to MAX_PIECE_PX)."""

    def __init__(self, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.fonts = chip_fonts()
        self.size = QSize(60, 60)

    def fit(self, chips: tuple[Chip, ...]) -> QSize:
        """The one chip size for these chips: the widest of their three lines, cut at MAX_PIECE_PX."""
        top, piece, bottom = (QtGui.QFontMetrics(f) for f in self.fonts)
        widest = max((piece.horizontalAdvance(p) for p in {chip.printable for chip in chips}), default=0)
        largest_id = max((chip.token_id for chip in chips), default=0)
        numbers = max(top.horizontalAdvance(str(len(chips))), bottom.horizontalAdvance(f"id {largest_id}"))
        width = max(min(widest, MAX_PIECE_PX), numbers, 24) + 2 * (PAD_X + int(BORDER))
        height = top.height() + piece.height() + bottom.height() + 2 * (PAD_Y + int(BORDER))
        self.size = QSize(width, height)
        return self.size

    def sizeHint(self, option: QtWidgets.QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        return self.size

    def paint(
        self,
        painter: QtGui.QPainter,
        option: QtWidgets.QStyleOptionViewItem,
        index: QModelIndex | QPersistentModelIndex,
    ) -> None:
        chip = index.data(ChipRole)
        if not isinstance(chip, Chip):
            return
        fill, ink, border, style = ORIGIN_LOOK.get(chip.origin) or CHIP_LOOK.get(chip.kind, CHIP_LOOK["word"])
        rect = QtCore.QRectF(option.rect).adjusted(BORDER / 2, BORDER / 2, -BORDER / 2, -BORDER / 2)
        painter.save()
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        painter.setPen(QtGui.QPen(QtGui.QColor(border), BORDER, style))
        painter.setBrush(QtGui.QColor(fill))
        painter.drawRoundedRect(rect, RADIUS, RADIUS)
        inner = rect.adjusted(PAD_X, PAD_Y, -PAD_X, -PAD_Y)
        y = inner.top()
        lines = ((str(chip.position), CHIP_NOTE_INK), (chip.printable, ink), (f"id {chip.token_id}", CHIP_NOTE_INK))
        for font, (text, colour) in zip(self.fonts, lines, strict=True):
            metrics = QtGui.QFontMetrics(font)
            painter.setFont(font)
            painter.setPen(QtGui.QColor(colour))
            shown = metrics.elidedText(text, Qt.TextElideMode.ElideRight, int(inner.width()))
            line = QtCore.QRectF(inner.left(), y, inner.width(), metrics.height())
            painter.drawText(line, Qt.AlignmentFlag.AlignCenter, shown)
            y += metrics.height()
        painter.restore()


class ChipList(QtWidgets.QListView):
    """The chips, wrapped left to right like words; only the visible ones are painted. `needed_height(width)`
    is the height that shows every chip at that width (the panel asks for it, up to its cap)."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("tokenChips")
        self.chip_model = ChipModel(self)
        self.delegate = ChipDelegate(self)
        self.setModel(self.chip_model)
        self.setItemDelegate(self.delegate)
        self.setViewMode(QtWidgets.QListView.ViewMode.ListMode)
        self.setFlow(QtWidgets.QListView.Flow.LeftToRight)
        self.setWrapping(True)
        self.setResizeMode(QtWidgets.QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(True)
        self.setSpacing(GAP // 2)
        self.setSelectionMode(QtWidgets.QAbstractItemView.SelectionMode.NoSelection)
        self.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QtWidgets.QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.viewport().setAutoFillBackground(False)
        self.setMouseTracking(True)  # tooltips on hover

    def set_chips(self, chips: tuple[Chip, ...]) -> None:
        self.delegate.fit(chips)
        self.chip_model.set_chips(chips)
        self.verticalScrollBar().setSingleStep(max(1, self.delegate.size.height() // 3))

    def needed_height(self, width: int) -> int:
        """Pixels that show every chip at `width` (chips per line × lines, with the gaps around them)."""
        n = self.chip_model.rowCount()
        if n == 0:
            return 0
        cell = self.delegate.size
        step_x, step_y = cell.width() + 2 * self.spacing(), cell.height() + 2 * self.spacing()
        per_line = max(1, width // step_x)
        return math.ceil(n / per_line) * step_y + 2 * self.frameWidth() + 2

    def scroll_to_position(self, position: int) -> None:
        """Bring the chip of `position` into view (centred)."""
        if 0 <= position < self.chip_model.rowCount():
            index = self.chip_model.index(position)
            self.scrollTo(index, QtWidgets.QAbstractItemView.ScrollHint.PositionAtCenter)
