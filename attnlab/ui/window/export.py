"""Drawing stages to files: a widget to PNG (at a chosen scale, for slides) or SVG, and StageRenderer, which
draws any stage of a trace with the app's own panels, off screen, for `attnlab render`.

The numbers (CSV), the handout page and the way files are written are Qt-free, in attnlab/present/export.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QBuffer, QIODevice, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QImage, QPaintDevice, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from attnlab.present.export import check_picture, write_atomically
from attnlab.present.stages import Stage, ViewState

if TYPE_CHECKING:
    from attnlab.present.engine_api import Trace
    from attnlab.ui.stages.base import StagePanel

FORMATS = ("png", "svg")
RENDER_SIZE = (1000, 640)  # logical pixels of a panel drawn for a handout (× scale for the PNG)


def _settle(widget: QWidget) -> None:
    """Lay out a widget that may never have been shown, so that it draws at its current size."""
    widget.ensurePolished()
    layout = widget.layout()
    if layout is not None:
        layout.activate()
    QApplication.processEvents()


def widget_image(widget: QWidget, scale: float = 1.0) -> QImage:
    """The widget drawn into an image `scale` times its size in pixels (text and lines re-drawn sharp)."""
    _settle(widget)
    size = widget.size()
    image = QImage(
        QSize(round(size.width() * scale), round(size.height() * scale)), QImage.Format.Format_ARGB32_Premultiplied
    )
    image.setDevicePixelRatio(scale)
    image.fill(widget.palette().window().color())
    _paint(widget, image)
    return image


def _paint(widget: QWidget, device: QPaintDevice) -> None:
    painter = QPainter(device)
    try:
        painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        widget.render(painter, QPoint())
    finally:
        painter.end()


def _memory() -> QBuffer:
    """An open in-memory file: Qt draws there and Python writes the bytes, so a failed write (a full disk)
    raises instead of leaving a cut file that atomic_write would rename over the target."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    return buffer


def save_png(widget: QWidget, path: str | Path, scale: float = 1.0) -> Path:
    """The widget drawn at `scale` into a PNG (counted first: present/export.check_picture raises RunTooBig, a
    ValueError, in one line when the picture cannot fit the memory there is)."""
    check_picture(widget.width(), widget.height(), scale)
    image = widget_image(widget, scale)

    def write(tmp: Path) -> None:
        buffer = _memory()
        # PySide6 takes the format as str (bytes fail at run time); its stub asks for bytes
        if not image.save(buffer, "PNG"):  # type: ignore[call-overload]
            raise OSError(f"Qt could not encode a PNG of {image.width()} × {image.height()} pixels")
        tmp.write_bytes(bytes(buffer.data().data()))

    return write_atomically(path, write)


def save_svg(widget: QWidget, path: str | Path, title: str = "") -> Path:
    """The widget as SVG (QtSvg's generator: text and lines stay vectors; heatmap cells are embedded images)."""
    _settle(widget)

    def write(tmp: Path) -> None:
        buffer = _memory()
        generator = QSvgGenerator()
        generator.setOutputDevice(buffer)
        generator.setSize(widget.size())
        generator.setViewBox(QRect(0, 0, widget.width(), widget.height()))
        generator.setTitle(title or "attnlab")
        generator.setDescription("Drawn by attnlab")
        _paint(widget, generator)
        tmp.write_bytes(bytes(buffer.data().data()))

    return write_atomically(path, write)


def save_widget(widget: QWidget, path: str | Path, scale: float = 1.0, title: str = "") -> Path:
    """PNG or SVG by the file's suffix."""
    if Path(path).suffix.lower() == ".svg":
        return save_svg(widget, path, title)
    return save_png(widget, path, scale)


class StageRenderer:
    """Draws stages with the app's panels into files, without a window (one panel instance per class)."""

    def __init__(
        self, vocabulary: Callable[[int], str] | Sequence[str] | None = None, size: tuple[int, int] = RENDER_SIZE
    ) -> None:
        from attnlab.ui.window import app as appsettings

        appsettings.plot_colours()
        self._panels: dict[type[StagePanel], StagePanel] = {}
        self._vocabulary = vocabulary
        self._size = size

    def panel(self, trace: Trace, stage: Stage, view: ViewState) -> StagePanel:
        from attnlab.ui.stages import panel_class_for

        cls = panel_class_for(stage.kind)
        panel = self._panels.get(cls)
        if panel is None:
            panel = self._panels[cls] = cls()
            if callable(self._vocabulary):
                panel.vocab = self._vocabulary  # names the decoder rows' predictions ("mord → l'homme")
            if self._vocabulary is not None and hasattr(panel, "set_vocabulary"):
                panel.set_vocabulary(self._vocabulary)
            panel.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)  # laid out like a shown one
            panel.resize(*self._size)
            panel.show()
        panel.show_stage(trace, stage, view)
        blank_hover_hints(panel)
        return panel

    def render(self, trace: Trace, stage: Stage, view: ViewState, path: Path, scale: float = 1.0) -> Path:
        return save_widget(self.panel(trace, stage, view), path, scale, stage.title)


def blank_hover_hints(panel: QWidget) -> None:
    """A picture cannot be hovered: a handout, a slide or a GIF frame shows no "Hover a cell …" line (the line
    keeps its height, so the panel is laid out as on screen)."""
    from attnlab.ui.plots.head_grid import HeadGrid
    from attnlab.ui.plots.heatmap import LabeledHeatmap

    hints = {LabeledHeatmap.HINT, HeadGrid.HINT}
    for label in panel.findChildren(QLabel):
        if label.text() in hints:
            label.setText(" ")
