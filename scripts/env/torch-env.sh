#!/usr/bin/env bash
# The venv with PyTorch that the on-demand torch scripts share
# (<repo>/.venv-torch; torch is never put into .venv): the test environment
# of the pytest suite (crates/gulp-python/tests/requirements.txt and gulpio2
# 0.0.4, whose conftest.py imports it), torch, and the gulp wheel of this
# checkout (scripts/python-package.sh builds it once; installed with
# --force-reinstall on every call, since the checkout may have changed).
# Prints the venv's python on stdout. Used by scripts/torch-check.sh and
# scripts/ddp-check.sh.
#
#   scripts/env/torch-env.sh [--clean]
#
# torch: the CPU-only wheel from the PyTorch index when that index answers
# (no CUDA libraries), else PyPI's default wheel, which on Linux x86-64 pulls
# in the CUDA libraries: 2.8 GB of wheels for torch 2.15 (torch 0.54 GB,
# cuDNN, cuBLAS, triton, ...), 5.3 GB installed. TORCH_SPEC (default "torch") and
# TORCH_CPU_INDEX (default https://download.pytorch.org/whl/cpu; empty to go
# to PyPI directly) change that. Environment: PYTHON (default python3.11).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
VENV="$REPO/.venv-torch"
PYTHON="${PYTHON:-python3.11}"
TORCH_SPEC="${TORCH_SPEC:-torch}"

log() { echo "torch-env.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ "${1:-}" = --clean ] && rm -rf "$VENV"
. "$REPO/scripts/env/venv.sh"
venv_make "$VENV" "$PYTHON" || exit 1
PY="$VENV/bin/python"
pipi() { venv_pip "$PY" "$@"; }

pipi -r crates/gulp-python/tests/requirements.txt || die "pip could not install the test requirements"
venv_pin "$PY" gulpio2 0.0.4 --no-deps || exit 1
venv_torch "$PY" "$TORCH_SPEC" || exit 1

# What scripts/ddp-check.sh resumes through: torchdata's StatefulDataLoader
# and Lightning's checkpoints.
"$PY" -c 'import torchdata, lightning' 2>/dev/null || pipi torchdata lightning ||
    die "pip could not install torchdata and lightning"

scripts/python-package.sh >&2
pipi --force-reinstall --no-deps dist/gulp_video-*.whl
log "gulp $("$PY" -c 'import gulp; print(gulp.__version__, "with", gulp.CODEC)') installed from the wheel"
echo "$PY"
