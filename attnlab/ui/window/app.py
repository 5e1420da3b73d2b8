"""QApplication set-up: names, style, light/dark theme, and the settings store (QSettings).

Settings live under the organisation/app name "attnlab"; the environment variable ATTNLAB_SETTINGS (a path
to an .ini file) redirects them, which tests and screenshots use so they never touch a person's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import cast

from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from attnlab.env_settings import settings_path
from attnlab.model_ids import looks_like_id
from attnlab.present.assets import resource_path, resource_text

ORG = APP = "attnlab"
MAX_RECENT = 8
ICON = resource_path("icons", "attnlab.svg")  # ships in the wheel
DESKTOP_ID = "io.github.attnlab.attnlab"  # the .desktop file's name (packaging/), which Wayland matches windows to

# Keys of the settings store
GEOMETRY, WINDOW_STATE, DARK, ZOOM = "window/geometry", "window/state", "view/dark", "view/zoom"
LAST_SENTENCE, LAST_CHECKPOINT, RECENT = "session/lastSentence", "session/lastCheckpoint", "files/recent"
LAST_SENTENCE_MODEL = "session/lastSentenceModel"  # the model name the last sentence was typed for


def make_settings() -> QSettings:
    path = settings_path()  # SettingError: it names a folder
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORG, APP)


def application() -> QApplication:
    """The running QApplication (there is one once a window or a panel exists)."""
    app = QApplication.instance()
    assert isinstance(app, QApplication), "no QApplication is running"
    return app


def create_app(argv: list[str] | None = None) -> QApplication:
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(list(argv or ["attnlab"]))
    app.setOrganizationName(ORG)
    app.setApplicationName(APP)
    app.setApplicationDisplayName("attnlab")
    app.setDesktopFileName(DESKTOP_ID)
    app.setStyle("Fusion")
    if ICON.is_file():
        app.setWindowIcon(QIcon(str(ICON)))
    return app


def read_bool(settings: QSettings, key: str, default: bool = False) -> bool:
    value = settings.value(key, default)
    return value in (True, "true", "1", 1) if not isinstance(value, bool) else value


# ---- recent files ---------------------------------------------------------------------------------------
def recent_files(settings: QSettings) -> list[str]:
    """The remembered checkpoints that still exist, newest first (missing ones are pruned)."""
    value = settings.value(RECENT, [])
    # an .ini store gives one remembered path back as a str, several as a list of str
    paths = [value] if isinstance(value, str) else list(cast("Iterable[str]", value or []))
    kept = [p for p in paths if p and (Path(p).is_file() or looks_like_id(p))][:MAX_RECENT]  # files and model ids
    if kept != paths:
        settings.setValue(RECENT, kept)
    return kept


def add_recent_file(settings: QSettings, path: str) -> list[str]:
    path = path if looks_like_id(path) else str(Path(path).resolve())  # an id stays an id (org/name@revision)
    paths = [path] + [p for p in recent_files(settings) if p != path]
    settings.setValue(RECENT, paths[:MAX_RECENT])
    settings.setValue(LAST_CHECKPOINT, path)
    return paths[:MAX_RECENT]


# ---- theme ----------------------------------------------------------------------------------------------
def dark_palette() -> QPalette:
    p = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, "#2b2d31"),
        (roles.WindowText, "#e8e8e8"),
        (roles.Base, "#1f2023"),
        (roles.AlternateBase, "#2f3136"),
        (roles.ToolTipBase, "#3a3d42"),
        (roles.ToolTipText, "#f0f0f0"),
        (roles.Text, "#e8e8e8"),
        (roles.Button, "#35373c"),
        (roles.ButtonText, "#e8e8e8"),
        (roles.BrightText, "#ff6b6b"),
        (roles.Link, "#7fb2ff"),
        (roles.Highlight, "#3d7bd9"),
        (roles.HighlightedText, "#ffffff"),
        (roles.PlaceholderText, "#9a9a9a"),
    ):
        p.setColor(role, QColor(colour))
    disabled = QPalette.ColorGroup.Disabled
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        p.setColor(disabled, role, QColor("#777777"))
    return p


def light_palette() -> QPalette:
    """The style's own light palette, with a placeholder text a class can read: the shapes line, the trace name
    and the hints use it (Fusion's is black at half opacity, #777 on #efefef: 3.9:1; this is 6:1, issue 32)."""
    p = application().style().standardPalette()
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        p.setColor(group, QPalette.ColorRole.PlaceholderText, QColor("#595959"))
    return p


def muted_colour() -> str:
    """The colour of secondary text (the trace name beside a stage title): the palette's placeholder text,
    which both themes keep at 4.5:1 or more against the window."""
    return application().palette().color(QPalette.ColorRole.PlaceholderText).name()


def stylesheet(dark: bool = False) -> str:
    """style.qss, plus dark.qss in the dark theme; sizes written "13pt" follow the zoom (ui/window/zoom.py) and
    @ICONS@ is the bundled icons folder."""
    from attnlab.ui.window import zoom

    text = resource_text("style.qss") + ("\n" + resource_text("dark.qss") if dark else "")
    text = re.sub(r"(\d+(?:\.\d+)?)pt", lambda m: f"{zoom.points(float(m.group(1))):g}pt", text)
    return text.replace("@ICONS@", ICON.parent.as_posix())


def apply_theme(dark: bool) -> None:
    """Light or dark palette for every widget (plots follow when they are made: see plot_colours)."""
    app = application()
    app.setPalette(dark_palette() if dark else light_palette())
    app.setProperty("darkTheme", dark)
    app.setStyleSheet(stylesheet(dark))


def plot_colours() -> None:
    """pyqtgraph's background/foreground for the current theme; call before making plot widgets.
    (Kept out of apply_theme so that importing pyqtgraph waits until the first panel is needed.)"""
    import pyqtgraph as pg

    dark = bool(application().property("darkTheme"))
    pg.setConfigOptions(background="#1f2023" if dark else "w", foreground="#e8e8e8" if dark else "k")
