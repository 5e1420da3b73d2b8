"""Presenting, the overview stays on screen: a compact strip above the stage, in two rows of boxes.

    [Source input] → [Encoder 1] → [Encoder 2] → [Decoder input] → [Decoder 1] → [Decoder 2] → [Output]
                     [Self-attn.] → [add & LayerNorm 1] → [feed-forward] → [add & LayerNorm 2]

The top row is the model, one box per stage group (each layer, each input, the output); the bottom row the
parts of the current group (one box per schematic box: attention, add & norm, feed-forward, …). The current
group and part are highlighted; clicking a box goes to its first stage. It takes no keyboard focus (the clicker
keys keep stepping) and at most MAX_HEIGHT pixels from the plot. The Architecture dock (ui/plots/schematic.py)
is the full drawing; it is folded away while presenting.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from attnlab.present import words
from attnlab.present.stages import Stage

MAX_HEIGHT = 60  # px: what the strip may take from the plot (two rows)
ARROW = 10.0  # px between two boxes, an arrow drawn in it
HIGHLIGHT = "#ff9f1c"  # the schematic's highlight (ui/plots/schematic.py)
GROUP_WORDS = {"Encoder layer": "Encoder", "Decoder layer": "Decoder", "Layer": "Layer"}
SHORT_WORDS = {"Encoder": "Enc", "Decoder": "Dec", "Layer": "L", "Source input": "Source", "Decoder input": "Dec in"}


@dataclass(frozen=True)
class Box:
    key: str  # the stage a click goes to (the first stage of the box)
    label: str
    part: str  # the group (top row) or the schematic box (bottom row) it stands for
    short: str = ""  # the label where the row has no room for the labels (empty: the label, elided)


def group_label(group: str) -> str:
    """'Encoder layer 2' -> 'Encoder 2' (the strip is narrow); other groups as they are."""
    for long, short in GROUP_WORDS.items():
        if group.startswith(long + " "):
            return short + group[len(long) :]
    return group


def group_boxes(stages: list[Stage]) -> list[Box]:
    """One box per stage group, in pipeline order."""
    boxes: dict[str, Box] = {}
    for stage in stages:
        if stage.group not in boxes:
            label = group_label(stage.group)
            short = next((label.replace(w, s, 1) for w, s in SHORT_WORDS.items() if label.startswith(w)), label)
            boxes[stage.group] = Box(stage.key, label, stage.group, short)
    return list(boxes.values())


def part_of(stage: Stage, single: bool) -> str:
    """The bottom-row box a stage lights: its schematic box, or the stage itself in a group of one box."""
    return stage.key if single else stage.schematic_box


def part_boxes(stages: list[Stage], group: str) -> list[Box]:
    """One box per schematic box of `group` (attention, add & norm, feed-forward, …), named by the first part
    of its first stage's title ('self-attention · QKᵀ scores' -> 'self-attn.'); a group that is one schematic
    box (an input: tokens, embedding, positions) has a box per stage."""
    members = [s for s in stages if s.group == group]
    single = len({s.schematic_box for s in members}) == 1
    boxes: dict[str, Box] = {}
    for stage in members:
        part = part_of(stage, single)
        if part not in boxes:
            label = words.short_words(stage.title if single else stage.title.split(" · ")[0])
            boxes[part] = Box(stage.key, label, part)
    return list(boxes.values())


class OverviewStrip(QWidget):
    """The model as a strip of boxes, the current stage's group and part highlighted (see the module text)."""

    stageClicked = Signal(str)  # the first stage of the clicked box

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("overviewStrip")
        self.setAccessibleName("Where this step is in the model")
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # a click never takes the keys from the clicker
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self._stages: list[Stage] = []
        self._current: Stage | None = None
        self._rows: list[list[tuple[QRectF, Box]]] = [[], []]
        self.setVisible(False)  # shown while presenting (set_presenting)

    # ---- state -----------------------------------------------------------------------------------------
    def set_presenting(self, on: bool) -> None:
        self.setVisible(on)

    def set_stages(self, stages: list[Stage]) -> None:
        if stages is not self._stages:
            self._stages = stages
            self._current = next((s for s in stages if self._current and s.key == self._current.key), None)
            self._relayout()

    def set_current(self, key: str) -> None:
        stage = next((s for s in self._stages if s.key == key), None)
        if stage != self._current:
            relayout = stage is None or self._current is None or stage.group != self._current.group
            self._current = stage
            if relayout:
                self._relayout()
            self.update()

    def highlighted(self) -> tuple[str, str]:
        """(group, part) drawn highlighted: ('', '') when no stage is current."""
        stage = self._current
        if stage is None:
            return ("", "")
        parts = {box.part for _rect, box in self._rows[1]}
        return stage.group, stage.key if stage.key in parts else stage.schematic_box

    def box_rects(self) -> list[tuple[QRectF, Box]]:
        """Every box drawn, with where (both rows; tests click them)."""
        return self._rows[0] + self._rows[1]

    # ---- layout and drawing --------------------------------------------------------------------------------
    def _font(self) -> QFont:
        font = QFont(self.font())
        font.setPointSizeF(max(7.0, font.pointSizeF() * 0.9))
        return font

    def _row_height(self) -> int:
        return min(MAX_HEIGHT // 2 - 2, QFontMetrics(self._font()).height() + 6)

    def sizeHint(self) -> QSize:
        return QSize(400, 2 * self._row_height() + 4)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self.sizeHint().height())

    def _relayout(self) -> None:
        group = self._current.group if self._current is not None else ""
        rows = (group_boxes(self._stages), part_boxes(self._stages, group))
        h = float(self._row_height())
        self._rows = [self._lay_row(boxes, y, h) for boxes, y in zip(rows, (1.0, h + 3.0), strict=True)]
        self.updateGeometry()

    def _lay_row(self, boxes: list[Box], y: float, h: float) -> list[tuple[QRectF, Box]]:
        """Boxes as wide as their text where the row has room, else of equal share (text elided)."""
        if not boxes:
            return []
        metrics = QFontMetrics(self._font())
        room = max(1.0, self.width() - 2.0 - ARROW * (len(boxes) - 1))
        wanted = [metrics.horizontalAdvance(b.label) + 12.0 for b in boxes]
        if sum(wanted) > room and any(b.short for b in boxes):  # no room for the labels: the short ones
            boxes = [Box(b.key, b.short or b.label, b.part) for b in boxes]
            wanted = [metrics.horizontalAdvance(b.label) + 12.0 for b in boxes]
        scale = min(1.0, room / sum(wanted))
        x, laid = 1.0, []
        for box, width in zip(boxes, wanted, strict=True):
            w = width * scale
            laid.append((QRectF(x, y, w, h), box))
            x += w + ARROW
        return laid

    def resizeEvent(self, _event: QResizeEvent) -> None:
        self._relayout()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # the zoom or presenting: taller rows, wider labels
            self._relayout()

    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setFont(self._font())
        palette = self.palette()
        text = palette.color(QPalette.ColorRole.WindowText)
        group, part = self.highlighted()
        for row, current in ((self._rows[0], group), (self._rows[1], part)):
            for i, (rect, box) in enumerate(row):
                lit = box.part == current
                p.setPen(QPen(QColor(HIGHLIGHT) if lit else palette.color(QPalette.ColorRole.Mid), 2 if lit else 1))
                p.setBrush(QColor(HIGHLIGHT).lighter(150) if lit else palette.color(QPalette.ColorRole.Base))
                p.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
                p.setPen(QColor("#000000") if lit else text)
                label = p.fontMetrics().elidedText(box.label, Qt.TextElideMode.ElideRight, int(rect.width()) - 6)
                p.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
                if i:  # an arrow from the previous box
                    y = rect.center().y()
                    p.setPen(QPen(text, 1))
                    p.drawLine(int(rect.left() - ARROW + 2), int(y), int(rect.left() - 2), int(y))
                    p.drawLine(int(rect.left() - 5), int(y - 3), int(rect.left() - 2), int(y))
                    p.drawLine(int(rect.left() - 5), int(y + 3), int(rect.left() - 2), int(y))
        p.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        point = event.position()
        for rect, box in self.box_rects():
            if rect.contains(point):
                self.stageClicked.emit(box.key)
                event.accept()
                return
        super().mousePressEvent(event)
