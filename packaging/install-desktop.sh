#!/usr/bin/env bash
# Install attnlab's desktop entry, icons, .safetensors MIME type and AppStream metainfo for the current user,
# so attnlab appears in the applications menu and a double-click on a .safetensors file opens it.
#
#   packaging/install-desktop.sh                          for `attnlab` on PATH (pip install)
#   packaging/install-desktop.sh --exec /opt/attnlab/attnlab   for a PyInstaller bundle unpacked there
#   packaging/install-desktop.sh --prefix /usr/local/share     for every user (as root)
#   packaging/install-desktop.sh --uninstall              remove what it installed
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
APP_ID=io.github.attnlab.attnlab
PREFIX="${XDG_DATA_HOME:-$HOME/.local/share}"
EXEC=attnlab
UNINSTALL=0
while (($#)); do
  case "$1" in
    --prefix) PREFIX="$2"; shift 2 ;;
    --exec) EXEC="$2"; shift 2 ;;
    --uninstall) UNINSTALL=1; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "install-desktop: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# source (in the repository) -> destination (under PREFIX)
FILES=(
  "$HERE/$APP_ID.desktop|applications/$APP_ID.desktop"
  "$HERE/$APP_ID.metainfo.xml|metainfo/$APP_ID.metainfo.xml"
  "$HERE/$APP_ID.mime.xml|mime/packages/$APP_ID.xml"
  "$ROOT/resources/icons/attnlab.svg|icons/hicolor/scalable/apps/$APP_ID.svg"
)
for size in 48 128 256; do
  FILES+=("$HERE/icons/hicolor/${size}x${size}/apps/$APP_ID.png|icons/hicolor/${size}x${size}/apps/$APP_ID.png")
done

for pair in "${FILES[@]}"; do
  src="${pair%%|*}" dest="$PREFIX/${pair#*|}"
  if ((UNINSTALL)); then
    rm -f "$dest" && echo "removed $dest"
  else
    install -Dm644 "$src" "$dest" && echo "installed $dest"
  fi
done
if ((! UNINSTALL)) && [[ "$EXEC" != attnlab ]]; then
  # Exec= must name the program; a path with spaces would need quoting, which desktop files make fragile
  [[ "$EXEC" != *" "* ]] || { echo "install-desktop: --exec path must not contain spaces" >&2; exit 2; }
  sed -i "s|^Exec=attnlab |Exec=$EXEC |" "$PREFIX/applications/$APP_ID.desktop"
fi

# Refresh the caches the desktop reads (each tool is optional: skipped when absent)
if command -v update-mime-database >/dev/null; then update-mime-database "$PREFIX/mime"; fi
if command -v update-desktop-database >/dev/null; then update-desktop-database "$PREFIX/applications"; fi
if command -v gtk-update-icon-cache >/dev/null && [[ -f "$PREFIX/icons/hicolor/index.theme" ]]; then
  gtk-update-icon-cache -q -t "$PREFIX/icons/hicolor" || true
fi
if ((! UNINSTALL)) && command -v xdg-mime >/dev/null && [[ "$PREFIX" == "${XDG_DATA_HOME:-$HOME/.local/share}" ]]; then
  xdg-mime default "$APP_ID.desktop" application/x-safetensors || true
fi
echo "done: attnlab ($( ((UNINSTALL)) && echo uninstalled || echo "Exec=$EXEC")) under $PREFIX"
