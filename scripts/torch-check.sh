#!/usr/bin/env bash
# On demand: the gulp package with PyTorch, in a venv of its own
# (<repo>/.venv-torch; torch is never put into .venv), then
# crates/gulp-python/tests/test_torch.py.
#
#   scripts/torch-check.sh                 # create or update the venv, run the tests
#   scripts/torch-check.sh -- -k loader    # arguments after -- go to pytest
#   scripts/torch-check.sh --clean         # delete .venv-torch first
#
# The venv (python3.11, no system site packages) gets the test environment
# of scripts/python-env.sh (numpy, gulpio2 0.0.4 and the rest at the same
# pinned versions, read from that script: the tests' conftest.py imports
# gulpio2), then torch, then `pip install ./crates/gulp-python` built from this
# checkout (maturin in the venv, no build isolation, cargo's target directory
# being the workspace's, so an earlier build of the package is reused).
#
# torch: the CPU-only wheel from the PyTorch index when that index answers
# (no CUDA libraries), else PyPI's default wheel, which on Linux x86-64 pulls
# in the CUDA libraries: 2.8 GB of wheels for torch 2.15 (torch 0.54 GB,
# cuDNN, cuBLAS, triton, ...), 5.3 GB installed. TORCH_SPEC (default "torch") and
# TORCH_CPU_INDEX (default https://download.pytorch.org/whl/cpu; empty to go
# to PyPI directly) change that.
#
# Idempotent: torch is installed once (kept while `import torch` works); the
# gulp package is rebuilt and reinstalled on every run (cargo rebuilds only
# what changed). Environment: PYTHON (default python3.11).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
VENV="$REPO/.venv-torch"
PYTHON="${PYTHON:-python3.11}"
TORCH_SPEC="${TORCH_SPEC:-torch}"
TORCH_CPU_INDEX="${TORCH_CPU_INDEX-https://download.pytorch.org/whl/cpu}"
TEST="crates/gulp-python/tests/test_torch.py"

log() { echo "torch-check.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

PYTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --clean) rm -rf "$VENV" ;;
        --) shift; PYTEST_ARGS=("$@"); break ;;
        -h | --help) sed -n '2,26p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) die "unknown argument '$1' (try --help)" ;;
    esac
    shift
done

command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON)"
PY="$VENV/bin/python"
pipi() { "$PY" -m pip install --disable-pip-version-check --no-input -q "$@"; }

if [ ! -x "$PY" ]; then
    log "creating $VENV ($("$PYTHON" -V 2>&1))"
    "$PYTHON" -m venv "$VENV"
    # Keep the venv out of git without touching the repository's .gitignore.
    echo '*' >"$VENV/.gitignore"
fi

# The test environment of scripts/python-env.sh, same pins (its V2_REQS list
# and GULPIO2_REQ; gulpio2 without its declared Pillow-SIMD dependency).
mapfile -t REQS < <(sed -n '/^V2_REQS=(/,/^)/p' scripts/python-env.sh | grep -o '"[^"]*"' | tr -d '"')
GULPIO2_REQ="$(sed -n 's/^GULPIO2_REQ="\(.*\)"$/\1/p' scripts/python-env.sh)"
[ ${#REQS[@]} -gt 0 ] && [ -n "$GULPIO2_REQ" ] || die "could not read the pins from scripts/python-env.sh"
pipi "${REQS[@]}" || die "pip could not install ${REQS[*]}"
pipi --no-deps "$GULPIO2_REQ" || die "pip could not install $GULPIO2_REQ"

if "$PY" -c 'import torch' 2>/dev/null; then
    log "torch $("$PY" -c 'import torch; print(torch.__version__)') already installed"
else
    t=$SECONDS
    installed=""
    if [ -n "$TORCH_CPU_INDEX" ]; then
        log "pip install $TORCH_SPEC from $TORCH_CPU_INDEX (CPU only)"
        if pipi --retries 0 --timeout 20 --index-url "$TORCH_CPU_INDEX" "$TORCH_SPEC"; then
            installed=cpu
        else
            log "the CPU-only index did not answer; PyPI's default wheel instead (with CUDA libraries, ~2.8 GB)"
        fi
    fi
    if [ -z "$installed" ]; then
        log "pip install $TORCH_SPEC (PyPI)"
        pipi "$TORCH_SPEC" || die "pip could not install $TORCH_SPEC"
    fi
    log "torch $("$PY" -c 'import torch; print(torch.__version__)') installed in $((SECONDS - t)) s" \
        "($(du -sh "$VENV" | cut -f1) in $VENV)"
fi

log "pip install ./crates/gulp-python (builds the Rust core in release mode)"
t=$SECONDS
PATH="$VENV/bin:$PATH" pipi --no-build-isolation --force-reinstall --no-deps ./crates/gulp-python
log "gulp $("$PY" -c 'import gulp; print(gulp.__version__, "with", gulp.CODEC)') installed in $((SECONDS - t)) s"

[ -f "$TEST" ] || die "$TEST does not exist"
exec "$PY" -m pytest -q "$TEST" "${PYTEST_ARGS[@]}"
