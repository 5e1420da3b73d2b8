"""Render the app icon (resources/icons/attnlab.svg, the one drawing) to the PNG sizes desktops look for.

    python packaging/make_icons.py      # writes packaging/icons/hicolor/<N>x<N>/apps/io.github.attnlab.attnlab.png

Run it again after changing the SVG and commit the PNGs (install-desktop.sh installs them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ROOT = Path(__file__).resolve().parents[1]
SVG = ROOT / "resources" / "icons" / "attnlab.svg"
APP_ID = "io.github.attnlab.attnlab"
SIZES = (48, 128, 256)


def png_path(size: int, root: Path = ROOT) -> Path:
    return root / "packaging" / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        print(f"cannot read {SVG}", file=sys.stderr)
        return 1
    for size in SIZES:
        path = png_path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(renderer, size).save(str(path), "PNG"):
            print(f"cannot write {path}", file=sys.stderr)
            return 1
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
