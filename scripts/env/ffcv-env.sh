#!/usr/bin/env bash
# The venv of the FFCV comparison (scripts/bench/bench_images.py): FFCV 1.0.2 and
# the gulp wheel of this checkout in one interpreter, <repo>/.venv-ffcv
# (git-ignored by a .gitignore inside it). Idempotent; prints the venv's
# python on stdout, logs on stderr.
#
#   scripts/env/ffcv-env.sh [--clean]
#   PY="$(scripts/env/ffcv-env.sh)" && "$PY" scripts/bench/bench_images.py
#
# FFCV is only on the registry as a source distribution: its C++ extension
# (libffcv) builds against OpenCV and libjpeg-turbo found with pkg-config, so
# Debian's libopencv-dev, libturbojpeg0-dev and pkg-config are installed first
# (apt-get, as root; skipped when pkg-config already finds both).
#
# Python packages: only what FFCV's writer, loader, fields and transforms
# import: numpy, numba, opencv-python-headless (cv2, used by the writer to
# re-encode and resize), Pillow, tqdm and torch; numba and OpenCV pinned to the
# versions this was run with (numpy 2.4 works: FFCV does not need numpy < 2
# with a numba that supports numpy 2). ffcv itself goes in with
# --no-deps: the rest of its install_requires (pytorch_pfn_extras,
# terminaltables, fastargs, assertpy, psutil) is imported only by its
# benchmarks and by the GPU normalisation op, and pytorch_pfn_extras would
# pull torch in again.
#
# torch: FFCV's loader imports it. When <repo>/.venv-torch (scripts/env/torch-env.sh)
# already has torch, this venv reuses it through a .pth file that appends
# .venv-torch's site-packages to sys.path (after this venv's own packages,
# which take precedence; .venv-torch itself is not modified), which saves a
# second CUDA build (5.3 GB installed, as scripts/env/torch-env.sh says). Otherwise torch is installed here the way
# scripts/env/torch-env.sh does it: the CPU-only index if it answers, else
# PyPI's default wheel (with its CUDA libraries, ~2.8 GB).
# Environment: PYTHON (default python3.11), TORCH_CPU_INDEX (as in torch-env.sh).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
VENV="$REPO/.venv-ffcv"
TORCH_VENV="$REPO/.venv-torch"
PYTHON="${PYTHON:-python3.11}"
FFCV_VERSION="1.0.2"
DEPS=(numpy "numba==0.68.1" "opencv-python-headless==5.0.0.93" Pillow tqdm)

log() { echo "ffcv-env.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

case "${1:-}" in
    "") ;;
    --clean) rm -rf "$VENV" ;;
    -h | --help) sed -n '2,32p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac
. "$REPO/scripts/env/venv.sh"
PY="$VENV/bin/python"
pipi() { venv_pip "$PY" "$@"; }

# --- system libraries for building libffcv
if ! pkg-config --exists opencv4 libturbojpeg 2>/dev/null; then
    [ "$(id -u)" = 0 ] || die "needs libopencv-dev, libturbojpeg0-dev and pkg-config (run as root to install them)"
    log "apt-get install libopencv-dev libturbojpeg0-dev pkg-config"
    apt-get update -qq >&2 || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        libopencv-dev libturbojpeg0-dev pkg-config >&2 || die "apt-get install failed"
fi
log "OpenCV $(pkg-config --modversion opencv4), libturbojpeg $(pkg-config --modversion libturbojpeg) (pkg-config)"

# --- the venv
venv_make "$VENV" "$PYTHON" || exit 1
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PTH="$SITE/zz-venv-torch.pth"

# Dependencies before the torch link, so that pip never sees (and never
# upgrades or removes) a package of .venv-torch.
rm -f "$PTH"
pipi "${DEPS[@]}" || die "pip could not install ${DEPS[*]}"
# (ffcv's install builds libffcv.)
venv_pin "$PY" ffcv "$FFCV_VERSION" --no-deps || exit 1

# --- torch
if [ -f "$SITE/.torch-installed-here" ]; then
    :
elif [ -x "$TORCH_VENV/bin/python" ] && "$TORCH_VENV/bin/python" -c 'import torch' 2>/dev/null; then
    TORCH_SITE="$("$TORCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$TORCH_SITE" >"$PTH"
    log "torch from $TORCH_VENV (appended to sys.path by $PTH)"
else
    log "no torch in $TORCH_VENV: installing torch into $VENV"
    venv_torch "$PY" || exit 1
    touch "$SITE/.torch-installed-here"
fi

# --- gulp, from this checkout's wheel (scripts/python-package.sh makes it)
WHEEL="$(ls -t dist/gulp_video-*.whl 2>/dev/null | head -n1 || true)"
[ -n "$WHEEL" ] || die "no dist/gulp_video-*.whl (scripts/python-package.sh builds it)"
pipi --force-reinstall --no-deps "$WHEEL" || die "pip could not install $WHEEL"

"$PY" - >&2 <<'PY' || die "the venv does not import ffcv, torch and gulp together"
import importlib.metadata as md
import cv2, numba, numpy, torch, gulp
from ffcv.loader import Loader
from ffcv.writer import DatasetWriter
v = {d: md.version(d) for d in ("ffcv", "numba", "numpy", "opencv-python-headless", "pillow")}
print("ffcv-env.sh: " + ", ".join(f"{k} {x}" for k, x in v.items())
      + f", cv2 {cv2.__version__}, torch {torch.__version__} ({torch.__file__.rsplit('/', 3)[0]}),"
      + f" gulp {gulp.__version__} ({gulp.CODEC})")
PY
echo "$PY"
