#!/usr/bin/env bash
# CI: does a plain (non-editable) install of the wheel work without the source tree?
#
# Builds the wheel, checks that it carries every module and every run-time resource, installs it into a fresh
# virtual environment outside the source tree (with the building interpreter's site-packages on its path, so torch
# and PySide6 come from there rather than being downloaded again; attnlab itself from the wheel only), then, from a
# temporary folder: `attnlab --version`, `attnlab info` and `attnlab trace` on both bundled models, and the app
# offscreen to its first painted trace.  PYTHON picks the interpreter (default python3).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/attnlab-wheel.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
step() { echo "== wheel_smoke $(date -u +%H:%M:%S) $*"; }

step "build the wheel"
"$PYTHON" -m pip wheel -q --no-deps -w "$WORK/dist" "$ROOT"
WHEEL="$(ls "$WORK"/dist/attnlab-*.whl)"
echo "$(basename "$WHEEL") ($(du -h "$WHEEL" | cut -f1))"

step "check the wheel's contents against the source tree"
"$PYTHON" - "$WHEEL" "$ROOT" <<'PY'
import sys
import zipfile
from pathlib import Path

wheel, root = sys.argv[1], Path(sys.argv[2])
shipped = set(zipfile.ZipFile(wheel).namelist())
wanted = [p.relative_to(root).as_posix() for p in (root / "attnlab").rglob("*.py") if "__pycache__" not in p.parts]
# Everything under resources/ is read at run time (models, stylesheet, icons, and whatever is added later),
# except the training records (resources/training/: loss curves and eval figures for the model card).
for p in (root / "resources").rglob("*"):
    rel = p.relative_to(root / "resources")
    if p.is_file() and rel.parts[0] not in ("training", "__pycache__"):
        wanted.append("attnlab/resources/" + rel.as_posix())
missing = sorted(set(wanted) - shipped)
if missing:
    sys.exit("the wheel lacks:\n  " + "\n  ".join(missing) + "\n(see [tool.setuptools] in pyproject.toml)")
must = ["attnlab/resources/translation.safetensors", "attnlab/resources/language.safetensors",
        "attnlab/resources/translation.snapshots.safetensors",
        "attnlab/resources/style.qss", "attnlab/resources/icons/attnlab.svg"]
absent = [m for m in must if m not in shipped]
if absent:
    sys.exit(f"the wheel lacks {absent}")
print(f"{len(wanted)} source files and resources all present ({len(shipped)} entries in the wheel)")
PY

step "fresh virtual environment outside the source tree"
"$PYTHON" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
# torch, PySide6 and the rest come from the interpreter that built the wheel (a virtual environment too, in CI),
# not from a second download: its site-packages goes on the new environment's path after the environment's own,
# where the wheel is installed. Its .pth files are not run from there, so its editable attnlab stays out.
"$PYTHON" -c "import site; print('\n'.join(site.getsitepackages()))" \
  >"$("$VPY" -c "import site; print(site.getsitepackages()[0])")/attnlab-ci-host.pth"
"$VPY" -m pip install -q --no-deps --force-reinstall "$WHEEL"

cd "$WORK"  # nothing of the source tree on sys.path from here on
export QT_QPA_PLATFORM=offscreen ATTNLAB_SETTINGS="$WORK/settings.ini"
"$VPY" - "$WORK/venv" <<'PY'
import sys
from importlib import resources
from pathlib import Path

import attnlab

venv = Path(sys.argv[1]).resolve()
where = Path(attnlab.__file__).resolve()
assert venv in where.parents, f"attnlab was imported from {where}, not from the wheel installed in {venv}"
style = resources.files("attnlab.resources").joinpath("style.qss")
assert venv in Path(str(style)).resolve().parents and style.read_text(encoding="utf-8").strip()
print(f"attnlab {attnlab.__version__} imported from {where.parent}")
PY

ATTNLAB="$WORK/venv/bin/attnlab"
step "attnlab --version / info / trace"
"$ATTNLAB" --version
for name in translation language; do
  "$ATTNLAB" info "bundled:$name" >"$WORK/info-$name.txt"
  grep -q "classroom_model: \"$name\"" "$WORK/info-$name.txt" \
    || { cat "$WORK/info-$name.txt"; echo "bundled:$name is not the trained classroom model"; exit 1; }
  head -n 1 "$WORK/info-$name.txt"
done
"$ATTNLAB" trace --checkpoint bundled:translation --src "the black cat sees the dog" --out "$WORK/translation.npz"
"$ATTNLAB" trace --checkpoint bundled:translation --src "the black cat sees the dog" --training-step 0 \
  --out "$WORK/translation-step0.npz"
"$ATTNLAB" trace --checkpoint bundled:language --src "le chat noir voit" --generate 3 --out "$WORK/language.npz"
"$VPY" -c "import numpy as np, sys; [print(f, len(np.load(f).files), 'tensors') for f in sys.argv[1:]]" \
  "$WORK/translation.npz" "$WORK/language.npz"

step "the app, offscreen, to its first painted trace"
for name in translation language; do
  out="$(timeout 120 "$ATTNLAB" --bundled "$name" --startup-time --quit-after-trace 2>&1)" || { echo "$out"; exit 1; }
  grep -q "first trace painted" <<<"$out" || { echo "$out"; exit 1; }
  echo "  $name: $(grep -E "^first trace painted" <<<"$out")"
done
step "OK"
