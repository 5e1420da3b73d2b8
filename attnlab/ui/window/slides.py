"""Slides at projector size (1024 × 768): a header line, the step's note and question as text, and a stage
panel drawn below them. Pages of a PDF (QPdfWriter: the texts stay text, selectable and searchable) and frames
of an animated GIF (QImages; Pillow writes the GIF, Qt cannot). Used by `attnlab render LESSON --pdf/--gif`
(attnlab/commands/render_slides.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QPoint, QRect, QSizeF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtWidgets import QApplication, QWidget

from attnlab.present.export import write_atomically

SLIDE_SIZE = (1024, 768)  # a projector's pixels; a PDF page of as many points
MARGIN = 24
HEADER_PT, NOTE_PT, QUESTION_PT = 11.0, 16.0, 15.0
INK, MUTED, ACCENT = "#111111", "#444444", "#8a5a00"  # ≥ 4.5:1 on white
GIF_MS = 900  # how long each GIF frame shows
PDF_DPI = 96


@dataclass(frozen=True)
class Slide:
    """What one page or frame shows: `panel` is drawn as it is when the slide is painted."""

    header: str
    note: str
    panel: QWidget
    question: str = ""


def _font(points: float, bold: bool = False) -> QFont:
    font = QFont(QApplication.font())
    font.setPointSizeF(points)
    font.setBold(bold)
    return font


def _text_block(painter: QPainter, top: int, width: int, text: str, font: QFont, colour: str) -> int:
    """Draw wrapped `text` from `top`; returns the y below it (nothing drawn for empty text)."""
    if not text:
        return top
    painter.setFont(font)
    painter.setPen(QColor(colour))
    flags = int(Qt.TextFlag.TextWordWrap) | int(Qt.AlignmentFlag.AlignLeft)
    # the painter's own metrics (a PDF writer's resolution differs from the screen's)
    bounds = QFontMetrics(font, painter.device()).boundingRect(QRect(0, 0, width, 10_000), flags, text)
    painter.drawText(QRect(MARGIN, top, width, bounds.height()), flags, text)
    return top + bounds.height() + 8


def paint_slide(painter: QPainter, slide: Slide) -> None:
    """One slide on a SLIDE_SIZE surface: header, note, question, then the panel in what is left."""
    width, height = SLIDE_SIZE
    painter.fillRect(QRect(0, 0, width, height), QColor("white"))
    inner = width - 2 * MARGIN
    y = _text_block(painter, MARGIN // 2, inner, slide.header, _font(HEADER_PT), MUTED)
    y = _text_block(painter, y, inner, slide.note, _font(NOTE_PT), INK)
    y = _text_block(painter, y, inner, slide.question, _font(QUESTION_PT, bold=True), ACCENT)
    room = max(120, height - y - MARGIN // 2)
    panel = slide.panel
    panel.resize(inner, room)
    layout = panel.layout()
    if layout is not None:
        layout.activate()
    QApplication.processEvents()  # the panel lays out (and its plots fit) at the new size
    painter.save()
    painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    panel.render(painter, QPoint(MARGIN, y))
    painter.restore()


def write_pdf(path: str | Path, slides: Iterable[Slide], title: str = "") -> tuple[Path, int]:
    """One PDF page per slide (the slides are made as they are drawn); returns (the file, pages)."""
    pages = 0

    def write(tmp: Path) -> None:
        nonlocal pages
        # drawn into memory, then written by Python: Qt's file writes fail silently (a full disk left a cut
        # PDF renamed over the target), Python's raise (ENOSPC, EFBIG) and atomic_write keeps the old file
        buffer = QBuffer()
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        writer = QPdfWriter(buffer)
        # 96 dots per inch, as the screen the panels are laid out for: the page is SLIDE_SIZE device pixels
        # (768 × 576 points) and a panel's fonts keep their size against its lines and cells
        writer.setResolution(PDF_DPI)
        writer.setPageLayout(
            QPageLayout(
                QPageSize(QSizeF(*(n * 72 / PDF_DPI for n in SLIDE_SIZE)), QPageSize.Unit.Point, "slide"),
                QPageLayout.Orientation.Portrait,
                QMarginsF(0, 0, 0, 0),
            )
        )
        writer.setTitle(title or "attnlab slides")
        writer.setCreator("attnlab render")
        painter = QPainter(writer)
        try:
            for slide in slides:
                if pages:
                    writer.newPage()
                paint_slide(painter, slide)
                pages += 1
        finally:
            painter.end()
        if not pages:
            raise OSError("no slides to write")
        tmp.write_bytes(bytes(buffer.data().data()))

    return write_atomically(path, write), pages


def slide_image(slide: Slide) -> QImage:
    image = QImage(*SLIDE_SIZE, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    try:
        paint_slide(painter, slide)
    finally:
        painter.end()
    return image


def _pillow_frame(image: QImage) -> Any:
    """A QImage (RGB32: bytes B, G, R, X) as a palette image for the GIF."""
    from PIL import Image

    rgb = image.convertToFormat(QImage.Format.Format_RGB888)
    frame = Image.frombuffer(
        "RGB", (rgb.width(), rgb.height()), bytes(rgb.constBits()), "raw", "RGB", rgb.bytesPerLine(), 1
    )
    return frame.quantize(colors=255)


def write_gif(path: str | Path, slides: Iterable[Slide], frame_ms: int = GIF_MS) -> tuple[Path, int]:
    """An animated GIF, one frame per slide, looping; returns (the file, frames). Needs Pillow."""
    frames = [_pillow_frame(slide_image(slide)) for slide in slides]
    if not frames:
        raise OSError("no frames to write")

    def write(tmp: Path) -> None:
        frames[0].save(
            tmp, format="GIF", save_all=True, append_images=frames[1:], duration=frame_ms, loop=0, optimize=False
        )

    return write_atomically(path, write), len(frames)
