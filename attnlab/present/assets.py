"""The files attnlab ships in attnlab.resources (the stylesheets, the icon), found through the package so they
are read the same from a checkout and from the wheel. Qt-free; the window reads them through here, so no widget
module loads a package by name at run time."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def resource_path(*parts: str) -> Path:
    """The path of a shipped file ("icons", "attnlab.svg")."""
    place = resources.files("attnlab.resources")
    for part in parts:
        place = place.joinpath(part)
    return Path(str(place))


def resource_text(name: str) -> str:
    """The text of a shipped file, or "" when it is missing (a stripped install draws without a stylesheet)."""
    try:
        return resources.files("attnlab.resources").joinpath(name).read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError, OSError):
        return ""
