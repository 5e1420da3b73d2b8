"""What `attnlab render` and its slide and GIF modes (render.py, render_slides.py) share: starting the Qt
application that draws, off screen when there is no display, and how a refusal is reported."""

from __future__ import annotations

import os

from attnlab.commands.refusal import refuse


def fail(message: str) -> int:
    return refuse("attnlab render", message)


def start_qt() -> None:
    """The Qt application drawing needs; off screen when there is no display to reach."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from attnlab.ui.window import app as appsettings

    appsettings.create_app(["attnlab-render"])
