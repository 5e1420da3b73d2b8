"""The architecture schematic: encoder and decoder stacks drawn as boxes, top (input) to bottom (output).

One layer of each stack is drawn with "×N" beside it; the layer chips in each header pick which layer.
The norm placement is drawn as it is for the CURRENT run: post-norm puts an "Add & Norm" box after each
sub-layer; pre-norm puts a "Norm" box inside the residual branch, before the sub-layer, and a "+" after it.
The current stage's box is highlighted; clicking a box emits `boxClicked(name)` with the name
`Stage.schematic_box` uses ("enc.0.self", "dec.1.norm2", "src.input", "output"). Which boxes, their keys
and words come from present/schematic_boxes.py (Qt-free); this module places and paints them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
    QPixmap,
    QPolygonF,
    QShowEvent,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from attnlab.present import schematic_boxes as boxes
from attnlab.present.schematic_boxes import SHORT, Branch
from attnlab.ui.window.errors import guarded_paint

if TYPE_CHECKING:
    from attnlab.present.engine_api import ModelConfig, ResolvedOptions

WIDTH = 300.0  # logical width; the drawing scales to the widget
BOX_H, GAP, CIRCLE, CHIP = 24.0, 13.0, 18.0, 18.0
FILLS = {
    "input": "#e8e8e8",
    "attn": "#d6e6ff",
    "ffn": "#d8f2d8",
    "norm": "#fff0c2",
    "add": "#fff0c2",
    "output": "#f0dcf5",
}
HIGHLIGHT = "#ff9f1c"
RESIDUAL = "#4a78b0"
# What is kept of earlier drawings, newest last: a wiring, highlight or size seen lately costs no layout and one
# pixmap blit, so toggling an option back and forth redraws nothing (about 0.5 MB a picture at 300×430).
LAYOUTS_KEPT, PICTURES_KEPT = 32, 8


@dataclass
class Item:
    box: str  # the schematic_box it stands for ("" = not clickable)
    rect: QRectF
    label: str
    kind: str  # a FILLS key, or "chip" for a layer chip


class Schematic(QWidget):
    boxClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("schematic")
        self.setMouseTracking(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.setAccessibleName("Architecture schematic")
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # its picture fills it: nothing below is drawn
        self.config: ModelConfig | None = None
        self.options: ResolvedOptions | None = None  # the run's wiring, with the model's config
        self.current = ""
        self.layer = {"enc": 0, "dec": 0}
        self.items: list[Item] = []
        self.lines: list[tuple[list[QPointF], str, bool]] = []  # (polyline, colour, arrow at end)
        self.texts: list[tuple[QRectF, str, int]] = []  # (rect, text, alignment)
        self.height_ = 200.0
        self._drawn: tuple | None = None  # the state the current layout was made from
        # (config, the tallest height laid out for it): the size hint, so a toggle never relays out the window
        self._hint: tuple[ModelConfig | None, float] = (None, self.height_)
        self._layouts: dict[tuple, tuple] = {}  # drawn_state() -> (items, lines, texts, height_)
        self._pictures: dict[tuple, QPixmap] = {}  # (drawn state, size, pixel ratio, colour, font) -> drawing

    # ---- state -----------------------------------------------------------------------------------------
    def set_model(self, config: ModelConfig) -> None:
        """Draw a newly opened model as trained (its first trace then draws the run)."""
        self.set_run(config, boxes.trained_wiring(config))

    def set_run(self, config: ModelConfig, options: ResolvedOptions) -> None:
        """Draw the model of `config` wired as the run of `options` (a finished trace's, or a newly opened
        model's trained wiring until its first trace arrives). Laid out now; painted after the repaints
        already asked for (a zero timer), so the stage panel of the same run reaches the screen first."""
        self.config, self.options = config, options
        for stack, n_layers in boxes.layer_counts(config).items():
            self.layer[stack] = min(self.layer[stack], max(0, n_layers - 1))
        self._relayout(repaint=lambda: QTimer.singleShot(0, self, self.update))

    def set_current(self, box: str) -> None:
        """Highlight `box`; a box inside a layer also shows that layer of its stack."""
        self.current = box
        where = boxes.box_layer(box)
        if where is not None:
            self.layer[where[0]] = where[1]
        self._relayout()

    def boxes(self) -> list[str]:
        self._relayout(hidden_too=True)
        return [i.box for i in self.items if i.box and not i.kind.startswith("chip")]

    def box_rect(self, box: str) -> QRectF | None:
        """Where `box` is drawn, in widget coordinates."""
        self._relayout(hidden_too=True)
        scale, dx = self._transform()
        for item in self.items:
            if item.box == box and item.kind != "chip":
                r = item.rect
                return QRectF(r.x() * scale + dx, r.y() * scale, r.width() * scale, r.height() * scale)
        return None

    # ---- layout ----------------------------------------------------------------------------------------
    def drawn_state(self) -> tuple:
        """Everything the drawing depends on: a toggle that changes none of it (heads, scaling,
        temperature, …) leaves the schematic alone."""
        if self.config is None or self.options is None:
            return (None,)
        return (boxes.wiring(self.config, self.options), self.current, self.layer["enc"], self.layer["dec"])

    def _relayout(self, hidden_too: bool = False, repaint: Callable[[], None] | None = None) -> None:
        """Lay out the drawn state if it changed (a state laid out lately is taken from `_layouts`); while hidden
        only when asked (`hidden_too`), else when shown (`showEvent`)."""
        if not (hidden_too or self.isVisible()):
            return
        state = self.drawn_state()
        if state == self._drawn:
            return
        self._drawn = state
        layout = self._layouts.pop(state, None)
        if layout is None:
            self._lay_out()
            layout = (self.items, self.lines, self.texts, self.height_)
        self.items, self.lines, self.texts, self.height_ = layout
        _keep(self._layouts, state, layout, LAYOUTS_KEPT)
        hint = self.height_ if self._hint[0] != self.config else max(self._hint[1], self.height_)
        if (self.config, hint) != self._hint:
            self._hint = (self.config, hint)
            self.updateGeometry()
        (repaint or self.update)()

    def _lay_out(self) -> None:
        """The boxes, lines and texts of the drawn state, in logical coordinates."""
        self.items, self.lines, self.texts = [], [], []
        cfg, opts = self.config, self.options
        if cfg is None or opts is None:
            self.height_ = 60.0
            return
        title = boxes.wiring_title(cfg, opts)
        self.texts.append((QRectF(0, 2, WIDTH, 18), title, Qt.AlignmentFlag.AlignCenter))
        top, counts = 24.0, boxes.layer_counts(cfg)
        stacks = boxes.drawn_stacks(cfg)
        if len(stacks) == 2:  # encoder-decoder: two columns, the encoder's output feeding the decoder's cross
            enc_bottom, enc_out = self._stack(cfg, opts, "enc", 4.0, 140.0, top, counts["enc"], None, False)
            dec_bottom, _ = self._stack(cfg, opts, "dec", 156.0, 140.0, top, counts["dec"], enc_out, True)
            bottom = max(enc_bottom, dec_bottom)
        else:
            side = stacks[0]
            bottom, _ = self._stack(cfg, opts, side, 50.0, 200.0, top, counts[side], None, True)
        self.height_ = bottom + 4

    def _stack(
        self,
        cfg: ModelConfig,
        opts: ResolvedOptions,
        side: str,
        x0: float,
        w: float,
        y: float,
        n_layers: int,
        memory: QPointF | None,
        output: bool,
    ) -> tuple[float, QPointF]:
        """One column of model `cfg`, top to bottom; returns (its bottom y, the point where the stack's output
        leaves)."""
        y = self._header(cfg, side, x0, w, y, n_layers)
        column, branches, layer_start, layer_end = boxes.column(cfg, opts, side, self.layer[side], output)
        bx, bw = x0 + 16, w - 18
        cx = bx + bw / 2
        rects: list[QRectF] = []
        for i, (box, text, kind) in enumerate(column):
            y += 8 if i == layer_start else (6 if i == layer_end else 0)  # room for the layer frame
            r = QRectF(cx - CIRCLE / 2, y, CIRCLE, CIRCLE) if kind == "add" else QRectF(bx, y, bw, BOX_H)
            if rects:
                self._arrow(cx, rects[-1].bottom(), r.top())
            rects.append(r)
            self._box(box, r, text, kind)
            y = r.bottom() + GAP
        top, bottom = rects[layer_start].top() - 9, rects[layer_end - 1].bottom() + 7
        self.items.insert(0, Item("", QRectF(x0 + 2, top, w - 2, bottom - top), "", "frame"))
        self._residual_paths(branches, rects, x0 + 7, cx, boxes.residual_on(opts))
        if memory is not None:  # the encoder output feeds cross-attention's keys and values
            cross = rects[[c[0] for c in column].index(boxes.cross_box(side, self.layer[side]))]
            mid = x0 - 6
            self.lines.append(
                (
                    [
                        memory,
                        QPointF(mid, memory.y()),
                        QPointF(mid, cross.center().y()),
                        QPointF(bx, cross.center().y()),
                    ],
                    RESIDUAL,
                    True,
                )
            )
            label_rect = QRectF(mid, cross.top() - 10, bx - mid, 12)
            self.texts.append((label_rect, "K,V", Qt.AlignmentFlag.AlignCenter))
        last = rects[-1].bottom()
        out_point = QPointF(cx, last + 8)
        if not output and boxes.feeds_decoder(cfg):
            self.lines.append(([QPointF(cx, last), out_point], RESIDUAL, False))
        return last + 10, out_point

    def _header(self, cfg: ModelConfig, side: str, x0: float, w: float, y: float, n_layers: int) -> float:
        """The stack's name and its layer chips (click one to show that layer); returns the y below them."""
        left = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        self.texts.append((QRectF(x0, y, w, 18), boxes.stack_header(side, n_layers), left))
        for i in range(n_layers):  # layer chips, right-aligned in the header
            r = QRectF(x0 + w - (n_layers - i) * (CHIP + 2), y, CHIP, CHIP)
            chip = "chip-on" if i == self.layer[side] else "chip"
            self.items.append(Item(boxes.chip_box(side, i), r, str(i + 1), chip))
        note = boxes.shared_note(cfg, side, n_layers)  # ALBERT: one layer's weights in every layer
        if note:
            self.texts.append((QRectF(x0, y + 20, w, 14), note, left))
            return y + 38
        return y + 24

    def _residual_paths(
        self, branches: list[Branch], rects: list[QRectF], lane: float, cx: float, residual: bool
    ) -> None:
        """The skip paths on the stack's left lane (grey and cut short when residuals are off)."""
        colour = RESIDUAL if residual else "#b0b0b0"
        for first, join in branches:
            branch_y = rects[first].top() - GAP / 2
            if join is not None:
                join_y = rects[join].center().y()
                end = [QPointF(lane, join_y), QPointF(rects[join].left(), join_y)]
            else:  # pre-norm without residual: the skip path is cut
                cut_y = rects[first + 1].bottom() + GAP / 2
                end = [QPointF(lane, cut_y)]
                self.texts.append((QRectF(lane + 3, cut_y - 12, 30, 12), "cut", Qt.AlignmentFlag.AlignLeft))
            self.lines.append(([QPointF(cx, branch_y), QPointF(lane, branch_y), *end], colour, residual))

    def _box(self, box: str, rect: QRectF, label: str, kind: str) -> None:
        self.items.append(Item(box, rect, label, kind))

    def _arrow(self, x: float, y0: float, y1: float) -> None:
        self.lines.append(([QPointF(x, y0), QPointF(x, y1)], "#707070", True))

    # ---- drawing ---------------------------------------------------------------------------------------
    def sizeHint(self) -> QSize:
        return QSize(int(WIDTH), int(self._hint[1]))

    def minimumSizeHint(self) -> QSize:
        return QSize(220, int(self._hint[1] * 0.7))

    def _transform(self) -> tuple[float, float]:
        scale = max(0.5, min(self.width() / WIDTH, self.height() / max(self.height_, 1.0), 1.5))
        return scale, (self.width() - WIDTH * scale) / 2

    def showEvent(self, event: QShowEvent) -> None:
        self._relayout()  # what changed while hidden
        super().showEvent(event)

    @guarded_paint
    def paintEvent(self, _event: QPaintEvent) -> None:
        """Blit the drawing of this state at this size (drawn once, `_draw`, then kept in `_pictures`)."""
        self._relayout(hidden_too=True)
        scale, dx = self._transform()
        palette, ratio = self.palette(), self.devicePixelRatioF()
        text_colour, background = palette.windowText().color(), palette.window().color()
        size = QSize(round(self.width() * ratio), round(self.height() * ratio))
        if size.isEmpty():
            return
        key = (
            self._drawn,
            size.width(),
            size.height(),
            ratio,
            text_colour.rgba(),
            background.rgba(),
            self.font().key(),
        )
        picture = self._pictures.pop(key, None)
        if picture is None:
            picture = QPixmap(size)
            picture.setDevicePixelRatio(ratio)
            picture.fill(background)
            p = QPainter(picture)
            try:
                self._draw(p, scale, dx, text_colour)
            finally:
                p.end()  # a failed drawing is reported by guarded_paint and not kept
        _keep(self._pictures, key, picture, PICTURES_KEPT)
        QPainter(self).drawPixmap(0, 0, picture)

    def _draw(self, p: QPainter, scale: float, dx: float, text_colour: QColor) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.translate(dx, 0)
        p.scale(scale, scale)
        font = QFont(self.font())
        font.setPointSizeF(max(8.0, font.pointSizeF() - 0.5))
        p.setFont(font)
        if self.config is None:
            p.setPen(text_colour)
            p.drawText(QRectF(0, 0, WIDTH, 40), Qt.AlignmentFlag.AlignCenter, "no model open")
            return
        for item in self.items:
            if item.kind == "frame":
                p.setPen(QPen(QColor("#9a9a9a"), 1.2, Qt.PenStyle.DashLine))
                p.setBrush(Qt.BrushStyle.NoBrush)
                p.drawRoundedRect(item.rect, 8, 8)

        for points, colour, arrow in self.lines:
            self._draw_line(p, points, QColor(colour), arrow, dashed=colour == "#b0b0b0")
        for item in self.items:
            if item.kind != "frame":
                self._draw_item(p, item, text_colour)
        p.setPen(text_colour)
        for rect, text, align in self.texts:
            p.drawText(rect, int(align), text)

    def _draw_item(self, p: QPainter, item: Item, text_colour: QColor) -> None:
        on = bool(item.box) and item.box == self.current
        if item.kind.startswith("chip"):
            active = item.kind == "chip-on"
            p.setPen(QPen(QColor("#707070"), 1))
            in_layer = boxes.same_layer(self.current, item.box)
            p.setBrush(QColor(HIGHLIGHT if active and in_layer else ("#c8c8c8" if active else "#f4f4f4")))
            p.drawRoundedRect(item.rect, 4, 4)
            p.setPen(QColor("black"))
            p.drawText(item.rect, Qt.AlignmentFlag.AlignCenter, item.label)
            return
        p.setPen(QPen(QColor("#d46a00" if on else "#606060"), 2.5 if on else 1))
        p.setBrush(QColor(HIGHLIGHT if on else FILLS.get(item.kind, "#eeeeee")))
        if item.kind == "add":
            p.drawEllipse(item.rect)
        else:
            p.drawRoundedRect(item.rect, 5, 5)
        p.setPen(QColor("black"))
        room = int(item.rect.width() - 6)
        text = item.label
        if p.fontMetrics().horizontalAdvance(text) > room:
            text = p.fontMetrics().elidedText(SHORT.get(text, text), Qt.TextElideMode.ElideRight, room)
        p.drawText(item.rect, Qt.AlignmentFlag.AlignCenter, text)

    @staticmethod
    def _draw_line(p: QPainter, points: list[QPointF], colour: QColor, arrow: bool, dashed: bool) -> None:
        p.setPen(QPen(colour, 1.4, Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine))
        p.setBrush(Qt.BrushStyle.NoBrush)
        path = QPainterPath(points[0])
        for pt in points[1:]:
            path.lineTo(pt)
        p.drawPath(path)
        if arrow and len(points) >= 2:
            a, b = points[-2], points[-1]
            d = b - a
            length = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            ux, uy = d.x() / length, d.y() / length
            tip = QPolygonF(
                [
                    b,
                    QPointF(b.x() - 6 * ux + 3.5 * uy, b.y() - 6 * uy - 3.5 * ux),
                    QPointF(b.x() - 6 * ux - 3.5 * uy, b.y() - 6 * uy + 3.5 * ux),
                ]
            )
            p.setBrush(colour)
            p.drawPolygon(tip)

    # ---- interaction -----------------------------------------------------------------------------------
    def item_at(self, pos: QPointF) -> Item | None:
        scale, dx = self._transform()
        logical = QPointF((pos.x() - dx) / scale, pos.y() / scale)
        for item in reversed(self.items):
            if item.box and item.rect.contains(logical):
                return item
        return None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        item = self.item_at(event.position())
        self.setCursor(Qt.CursorShape.PointingHandCursor if item else Qt.CursorShape.ArrowCursor)
        self.setToolTip(f"Go to {item.label}" if item else "")

    def mousePressEvent(self, event: QMouseEvent) -> None:
        item = self.item_at(event.position())
        if item is not None and event.button() == Qt.MouseButton.LeftButton:
            self.boxClicked.emit(item.box)


def _keep(kept: dict, key: tuple, value: object, most: int) -> None:
    """Put `value` in `kept` as its newest entry, dropping the oldest beyond `most`."""
    kept[key] = value
    while len(kept) > most:
        del kept[next(iter(kept))]
