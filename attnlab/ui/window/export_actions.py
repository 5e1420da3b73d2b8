"""File → Export: the current panel as PNG (1×, 2×, 3× for slides) or SVG, its numbers as CSV, the whole run as
.npz. window_menus.py only calls `add_export_menu(window, menu)`; `export_current` does the work (tests call it
with a path instead of a dialog)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from attnlab.present.export import safe_file_stem, stage_table, write_text
from attnlab.present.window_facts import save_run
from attnlab.ui.window.export import save_widget

if TYPE_CHECKING:
    from attnlab.ui.window.window_host import WindowHost

PNG_SCALES = (1, 2, 3)
FILTERS = {
    "png": "PNG image (*.png)",
    "svg": "SVG drawing (*.svg)",
    "csv": "CSV table (*.csv)",
    "npz": "NumPy archive (*.npz)",
}


def export_current(window: WindowHost, fmt: str, path: str | Path, scale: float = 1.0) -> Path:
    """Write what the window shows: 'png'/'svg' the current panel, 'csv' its numbers, 'npz' the whole run.

    Raises ValueError when there is nothing to export and OSError when the file cannot be written."""
    s = window.session
    if s.trace is None or s.stage is None:
        raise ValueError("There is no run to export yet.")
    path = Path(path)
    if fmt in ("png", "svg"):
        return save_widget(window.current_panel(), path, scale, s.stage.title)
    if fmt == "csv":
        return write_text(path, stage_table(s.trace, s.stage, s.view).csv_text())
    if fmt == "npz":
        return save_run(s.trace, path)
    raise ValueError(f"unknown export format {fmt!r}")


def _export_dialog(window: WindowHost, fmt: str, scale: float = 1.0) -> None:
    s = window.session
    if s.trace is None or s.stage is None:
        window.statusBar().showMessage("There is no run to export yet.", 6000)
        return
    suffix = "" if scale == 1 else f"@{scale:g}x"
    stem = "attnlab-run" if fmt == "npz" else f"{safe_file_stem(s.stage.key)}{suffix}"
    path, _ = QFileDialog.getSaveFileName(window, f"Export as {fmt.upper()}", f"{stem}.{fmt}", FILTERS[fmt])
    if not path:
        return
    if not path.lower().endswith(f".{fmt}"):
        path += f".{fmt}"
    try:
        written = export_current(window, fmt, path, scale)
    except (OSError, ValueError) as e:
        QMessageBox.warning(window, "Export failed", str(e))
        return
    window.statusBar().showMessage(f"Exported {written}", 6000)


def add_export_menu(window: WindowHost, menu: QMenu) -> QMenu:
    """File → Export ▸ Panel as PNG (1×/2×/3×)…, Panel as SVG…, Numbers as CSV…, Run as .npz…"""
    export = menu.addMenu("&Export")
    export.setObjectName("exportMenu")
    for scale in PNG_SCALES:
        window._action(
            export,
            f"Panel as &PNG ({scale}×)…",
            lambda _=False, k=scale: _export_dialog(window, "png", k),
            name=f"exportPng{scale}Action",
        )
    window._action(export, "Panel as &SVG…", lambda: _export_dialog(window, "svg"), name="exportSvgAction")
    window._action(export, "Numbers as &CSV…", lambda: _export_dialog(window, "csv"), name="exportCsvAction")
    window._action(export, "Run as .&npz…", lambda: _export_dialog(window, "npz"), name="exportNpzAction")
    return export
