#!/usr/bin/env bash
# Make sure a Python virtual environment with the reference implementation
# exists, for regenerating and cross-checking the fixtures in tests/data/fixtures.
#
#   scripts/env/python-env.sh         -> <repo>/.venv     with gulpio2 0.0.4
#   scripts/env/python-env.sh --v1    -> <repo>/.venv-v1  with GulpIO v1 (only needed to
#                                    regenerate tests/data/fixtures/gulpio1/)
#
# Idempotent: when the environment exists, matches the pinned requirement list
# (hash in <venv>/.gulp-env-ok) and can import the package, it prints nothing
# and exits 0. Otherwise the environment is (re-)created from scratch. If pip
# fails (e.g. the package registry is unreachable) the script exits non-zero
# with a message; it never skips silently.
#
# GulpIO v1 is not published on the package registry, so --v1 needs a local
# checkout of the TwentyBN/GulpIO sources (MIT): set GULPIO_V1_SRC to the
# checkout root (the directory containing src/main/python/gulpio). The script
# adds that directory to the venv's import path with a .pth file.
#
# Environment: PYTHON (default python3) selects the interpreter used to create
# the venv.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"

# gulpio2 0.0.4 declares Pillow-SIMD as a dependency, which does not build
# easily and is not needed, hence --no-deps for gulpio2 and an explicit list.
GULPIO2_REQ="gulpio2==0.0.4"
# gulpio2's real dependencies and the test runner: one list, shared with the
# test of the wheel (scripts/ci/wheel-test.sh).
mapfile -t TEST_REQS < <(grep -v '^\s*\(#\|$\)' "$REPO/crates/gulp-python/tests/requirements.txt")
V2_REQS=(
    "${TEST_REQS[@]}"
    # The gulp package's build backend, the linker and C compiler of its
    # manylinux2014 wheels (scripts/wheel.sh), the wheel's tag check and the
    # registry's check of the distributions' metadata.
    "maturin==1.16.0"
    "ziglang==0.17.1"
    "auditwheel==6.8.2"
    "twine==7.0.0"
    # The event loop of the test's counting S3 proxy (scripts/ci/s3_proxy.py).
    "uvloop==0.23.0"
)

# GulpIO v1 (cv2-based) writes with ndarray.tostring(), removed in NumPy 2.
V1_REQS=(
    "numpy==1.26.4"
    "opencv-python-headless==4.10.0.84"
    "tqdm==4.70.1"
)

die() {
    echo "python-env.sh: error: $*" >&2
    exit 1
}

usage() {
    echo "usage: $0 [--v1]" >&2
    exit 2
}

mode=v2
case "${1:-}" in
    "") ;;
    --v1) mode=v1 ;;
    -h | --help) usage ;;
    *) usage ;;
esac

if [ "$mode" = v2 ]; then
    VENV="$REPO/.venv"
    IMPORT_CHECK="import gulpio2, simplejpeg, numpy, pytest, maturin, ziglang, auditwheel, twine"
    REQ_TEXT="$(printf '%s\n' "--no-deps $GULPIO2_REQ" "${V2_REQS[@]}")"
else
    VENV="$REPO/.venv-v1"
    IMPORT_CHECK="import gulpio, gulpio.fileio, cv2, numpy"
    V1_SRC=""
    if [ -n "${GULPIO_V1_SRC:-}" ]; then
        [ -d "$GULPIO_V1_SRC/src/main/python/gulpio" ] ||
            die "GULPIO_V1_SRC=$GULPIO_V1_SRC does not contain src/main/python/gulpio"
        V1_SRC="$(cd "$GULPIO_V1_SRC/src/main/python" && pwd)"
    fi
    REQ_TEXT="$(printf '%s\n' "${V1_REQS[@]}" "gulpio-src=${V1_SRC:-<existing .pth>}")"
fi

req_hash() {
    # Hash of the requirement list plus the interpreter's version.
    {
        printf '%s\n' "$REQ_TEXT"
        "$PYTHON" -c 'import sys; print(sys.version_info[:2])'
    } | sha256sum | cut -d' ' -f1
}

MARKER="$VENV/.gulp-env-ok"
command -v "$PYTHON" >/dev/null 2>&1 || die "interpreter '$PYTHON' not found"
HASH="$(req_hash)"

env_ok() {
    [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$HASH" ] &&
        "$VENV/bin/python" -c "$IMPORT_CHECK" >/dev/null 2>&1
}

if [ "$mode" = v1 ] && [ -z "$V1_SRC" ]; then
    # Without GULPIO_V1_SRC, accept an existing environment as it is.
    if [ -f "$MARKER" ] && "$VENV/bin/python" -c "$IMPORT_CHECK" >/dev/null 2>&1; then
        exit 0
    fi
    die "GulpIO v1 is not on the package registry; set GULPIO_V1_SRC to a checkout of the TwentyBN/GulpIO sources (the directory containing src/main/python/gulpio)"
fi

if env_ok; then
    exit 0
fi

echo "python-env.sh: creating $VENV" >&2
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv' failed (is the venv/ensurepip module installed?)"

LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
pip_install() {
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input -q "$@" >"$LOG" 2>&1; then
        cat "$LOG" >&2
        rm -rf "$VENV"
        die "pip install $* failed (is the package registry reachable?)"
    fi
}

if [ "$mode" = v2 ]; then
    pip_install --no-deps "$GULPIO2_REQ"
    # pip warns here that gulpio2's declared Pillow-SIMD is missing; expected.
    pip_install "${V2_REQS[@]}"
else
    pip_install "${V1_REQS[@]}"
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    printf '%s\n' "$V1_SRC" >"$site/gulpio-v1-src.pth"
fi

"$VENV/bin/python" -c "$IMPORT_CHECK" ||
    die "environment $VENV was created but '$IMPORT_CHECK' fails"
printf '%s\n' "$HASH" >"$MARKER"
echo "python-env.sh: ready: $VENV" >&2
