"""Desktop integration files: they exist, agree with each other and with attnlab.__version__, and pass the
freedesktop validators (desktop-file-validate, appstreamcli; skipped with the reason when not installed)."""

import configparser
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import attnlab

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
APP_ID = "io.github.attnlab.attnlab"
DESKTOP = PACKAGING / f"{APP_ID}.desktop"
METAINFO = PACKAGING / f"{APP_ID}.metainfo.xml"
MIME = PACKAGING / f"{APP_ID}.mime.xml"
SVG = ROOT / "resources" / "icons" / "attnlab.svg"
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def needs(tool: str):
    return pytest.mark.skipif(
        shutil.which(tool) is None, reason=f"{tool} is not installed (apt-get install desktop-file-utils appstream)"
    )


def desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser["Desktop Entry"]


def mime_type() -> str:
    return ET.parse(MIME).getroot().find(f"{MIME_NS}mime-type").get("type")


@needs("desktop-file-validate")
def test_desktop_entry_validates():
    result = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


@needs("appstreamcli")
def test_metainfo_validates():
    result = subprocess.run(["appstreamcli", "validate", "--no-net", str(METAINFO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_desktop_entry_opens_safetensors_with_the_icon_of_the_same_id():
    entry = desktop_entry()
    assert entry["Exec"].split()[0] == "attnlab" and "%f" in entry["Exec"].split()
    assert entry["Icon"] == APP_ID
    assert mime_type() in entry["MimeType"].rstrip(";").split(";")
    globs = [g.get("pattern") for g in ET.parse(MIME).getroot().iter(f"{MIME_NS}glob")]
    assert globs == ["*.safetensors"]


def test_metainfo_agrees_with_the_package_and_the_desktop_entry():
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == APP_ID
    assert root.findtext("launchable") == DESKTOP.name
    assert root.find("releases/release").get("version") == attnlab.__version__  # newest release first
    assert root.find("content_rating").get("type").startswith("oars-")
    assert mime_type() in [m.text for m in root.iter("mediatype")]
    shots = [Path(image.text).name for image in root.iter("image")]
    assert shots, "no screenshots"
    for name in shots:  # the URLs point at the committed files
        assert (PACKAGING / "screenshots" / name).is_file(), name


def test_png_icons_are_the_svg_rendered_at_each_size(qapp):
    sys.path.insert(0, str(PACKAGING))
    try:
        import make_icons
    finally:
        sys.path.remove(str(PACKAGING))
    from PySide6.QtGui import QImage
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SVG))
    assert renderer.isValid()
    for size in make_icons.SIZES:
        committed = QImage(str(make_icons.png_path(size)))
        assert (committed.width(), committed.height()) == (size, size)
        fresh = make_icons.render(renderer, size).convertToFormat(committed.format())
        assert fresh == committed, f"{size}px icon is stale: run python packaging/make_icons.py"


@needs("update-mime-database")
def test_install_desktop_installs_everything_and_registers_the_mime_type(tmp_path):
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "elsewhere"))
    subprocess.run(
        ["bash", str(PACKAGING / "install-desktop.sh"), "--prefix", str(tmp_path), "--exec", "/opt/attnlab/attnlab"],
        check=True,
        capture_output=True,
        env=env,
    )
    for rel in (
        f"applications/{APP_ID}.desktop",
        f"metainfo/{APP_ID}.metainfo.xml",
        f"mime/packages/{APP_ID}.xml",
        f"icons/hicolor/scalable/apps/{APP_ID}.svg",
        f"icons/hicolor/48x48/apps/{APP_ID}.png",
        f"icons/hicolor/128x128/apps/{APP_ID}.png",
        f"icons/hicolor/256x256/apps/{APP_ID}.png",
    ):
        assert (tmp_path / rel).is_file(), rel
    globs = (tmp_path / "mime" / "globs2").read_text()
    assert f"{mime_type()}:*.safetensors" in globs
    installed = (tmp_path / "applications" / f"{APP_ID}.desktop").read_text()
    assert "Exec=/opt/attnlab/attnlab %f" in installed
    subprocess.run(
        ["bash", str(PACKAGING / "install-desktop.sh"), "--prefix", str(tmp_path), "--uninstall"],
        check=True,
        capture_output=True,
        env=env,
    )
    assert not (tmp_path / "applications" / f"{APP_ID}.desktop").exists()
