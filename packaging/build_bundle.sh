#!/usr/bin/env bash
# Build the one-folder attnlab bundle (PyInstaller) from a clean virtual environment with the CPU torch wheel,
# then smoke-test the bundled executable offscreen. Usage (from anywhere):
#
#   packaging/build_bundle.sh            build into build/bundle/dist/attnlab/ and smoke-test it
#   packaging/build_bundle.sh --ci       the same, but only when ATTNLAB_BUILD_BUNDLE=1 (else: skip, exit 0)
#
# Environment: PYTHON (default python3), ATTNLAB_BUNDLE_WORK (default build/bundle), ATTNLAB_BUNDLE_TRIM=0 (no
# trimming, to measure what it saves), ATTNLAB_TORCH (default torch==2.13.0), ATTNLAB_TORCH_INDEX (an index URL
# for the CPU wheel, e.g. https://download.pytorch.org/whl/cpu, where plain PyPI would give the CUDA build).
set -euo pipefail

if [[ "${1:-}" == "--ci" && "${ATTNLAB_BUILD_BUNDLE:-0}" != "1" ]]; then
  echo "build_bundle: skipped (set ATTNLAB_BUILD_BUNDLE=1 to build and smoke-test the PyInstaller bundle)"
  exit 0
fi

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mkdir -p "${ATTNLAB_BUNDLE_WORK:-$ROOT/build/bundle}" && cd "${ATTNLAB_BUNDLE_WORK:-$ROOT/build/bundle}" && pwd)"
PYTHON="${PYTHON:-python3}"
TORCH="${ATTNLAB_TORCH:-torch==2.13.0}"
step() { echo "== $(date -u +%H:%M:%S) $*"; }

step "clean virtual environment in $WORK/venv"
rm -rf "$WORK/venv" "$WORK/dist" "$WORK/build"
"$PYTHON" -m venv "$WORK/venv"   # no --system-site-packages: only what attnlab asks for goes in
VPY="$WORK/venv/bin/python"

step "install $TORCH (CPU build), attnlab (non-editable) and PyInstaller"
"$VPY" -m pip install -q ${ATTNLAB_TORCH_INDEX:+--index-url "$ATTNLAB_TORCH_INDEX"} "$TORCH"
"$VPY" -W ignore - <<'PY'
import torch
assert torch.version.cuda is None, f"torch {torch.__version__} is a CUDA build: the bundle would carry CUDA libraries"
print("torch", torch.__version__, "(CPU build)")
PY
"$VPY" -m pip install -q "$ROOT" pyinstaller

step "PyInstaller (trim=${ATTNLAB_BUNDLE_TRIM:-1})"
started=$(date +%s)
(cd "$WORK" && "$VPY" -m PyInstaller --noconfirm --log-level WARN --distpath "$WORK/dist" \
  --workpath "$WORK/build" "$ROOT/packaging/attnlab.spec")
APP="$WORK/dist/attnlab/attnlab"
echo "built in $(( $(date +%s) - started )) s; folder size: $(du -sh "$WORK/dist/attnlab" | cut -f1)" \
  "($(du -sb "$WORK/dist/attnlab" | cut -f1) bytes, $(find "$WORK/dist/attnlab" -type f | wc -l) files)"

step "smoke test: $APP"
SMOKE="$(mktemp -d)"
trap 'rm -rf "$SMOKE"' EXIT
export QT_QPA_PLATFORM=offscreen ATTNLAB_SETTINGS="$SMOKE/settings.ini"
"$APP" --version
"$APP" info bundled:language >"$SMOKE/info.txt" && head -n 3 "$SMOKE/info.txt"
"$APP" init --d-model 32 --heads 2 --d-ff 64 --enc-layers 1 --dec-layers 1 --out "$SMOKE/small.safetensors" >/dev/null
for run in 1 2; do  # the first start reads the files from disk; the second finds them in the page cache
  timeout 180 "$APP" --startup-time --quit-after-trace 2>&1 | grep -E "^(first|trace)" | sed "s/^/  start $run: /"
done
out="$(timeout 180 "$APP" "$SMOKE/small.safetensors" --quit-after-trace 2>&1)" || { echo "$out"; exit 1; }
grep -q "first trace painted after .*small.safetensors" <<<"$out" || { echo "$out"; echo "checkpoint not opened"; exit 1; }
echo "  $(grep "first trace painted" <<<"$out")"
step "bundle OK: $WORK/dist/attnlab"
