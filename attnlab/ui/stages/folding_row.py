"""Maps side by side while the stage area on screen holds them, one under the other when it does not: a 1024-px
window's centre column is about 480 px, narrower than three maps' least widths (layer input, Q/K/V), and the
stage area would otherwise scroll sideways with the right-hand map cut off. Add & norm turns its rows the same way
with its own measure of what a row needs (addnorm.py)."""

from __future__ import annotations

from PySide6 import QtCore, QtWidgets

HYSTERESIS = 24  # px: a side-by-side row comes back only this much wider than it needs (no flip-flop at the edge)
ACROSS, DOWN = QtWidgets.QBoxLayout.Direction.LeftToRight, QtWidgets.QBoxLayout.Direction.TopToBottom


def shown_width(widget: QtWidgets.QWidget) -> int:
    """The width `widget` has on screen: its own, or less where the scroll area around it shows less."""
    width = widget.width()
    area = widget.parentWidget()
    while area is not None and not isinstance(area, QtWidgets.QScrollArea):
        area = area.parentWidget()
    if area is not None and area.viewport().width() > 1:
        width = min(width, area.viewport().width())
    return width


def turn(row: QtWidgets.QBoxLayout, need: float, width: int) -> None:
    """Across while `width` holds `need`, down when it does not (across again only HYSTERESIS px wider)."""
    across = row.direction() == ACROSS
    if across and width < need:
        row.setDirection(DOWN)
    elif not across and width >= need + HYSTERESIS:
        row.setDirection(ACROSS)


class FoldingRow(QtWidgets.QBoxLayout):
    """A row of widgets (maps and the operators between them) that folds into a column when the panel's width
    on screen is less than the sum of their least widths. The panel adds it to its layout and calls `fit()` from
    its resizeEvent."""

    def __init__(self) -> None:
        super().__init__(ACROSS)  # its panel is parentWidget() once added: no Python reference back to it

    def least_width(self) -> int:
        """What the row needs side by side: every widget's least width, the spacing and the panel's margins."""
        items = (self.itemAt(i) for i in range(self.count()))
        widgets = [w for item in items if item is not None and (w := item.widget()) is not None and w.isVisible()]
        panel = self.parentWidget()
        margins = panel.contentsMargins() if panel is not None else QtCore.QMargins()
        spacing = max(self.spacing(), 0) * max(len(widgets) - 1, 0)
        return sum(w.minimumSizeHint().width() for w in widgets) + spacing + margins.left() + margins.right() + 16

    def fit(self) -> None:
        panel = self.parentWidget()
        width = shown_width(panel) if panel is not None else 0
        if width > 1:
            turn(self, self.least_width(), width)

    def folded(self) -> bool:
        return self.direction() == DOWN
