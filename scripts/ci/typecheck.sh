#!/usr/bin/env bash
# Type checks of the `gulp` Python package:
#   - mypy --strict over crates/gulp-python/python/gulp (the annotated .py
#     modules and _gulp.pyi, the stub of the native module), with the
#     [tool.mypy] settings of crates/gulp-python/pyproject.toml;
#   - mypy's stubtest: _gulp.pyi against the compiled gulp._gulp installed
#     in the interpreter.
#
#   scripts/ci/typecheck.sh [PYTHON]
#
# PYTHON (else $GULP_PYTHON, else <repo>/.venv/bin/python) must have the gulp
# package installed (scripts/python-package.sh); mypy, pinned below, is
# installed into its environment when it is not there at that version.
# Exits non-zero on any error; prints only what it checks when all is well.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
PY="${1:-${GULP_PYTHON:-$REPO/.venv/bin/python}}"
MYPY_VERSION="2.4.1"
CONFIG="$REPO/crates/gulp-python/pyproject.toml"
SOURCES="crates/gulp-python/python"
CACHE="$REPO/target/mypy"

log() { echo "typecheck.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -le 1 ] || die "one argument at most: the python interpreter"
command -v "$PY" >/dev/null || die "$PY not found"
native="$("$PY" -c 'import gulp._gulp as m; print(m.__file__)' 2>/dev/null)" ||
    die "$PY cannot import gulp._gulp (install the package: scripts/python-package.sh)"

. "$REPO/scripts/env/venv.sh"
venv_pin "$PY" mypy "$MYPY_VERSION" || exit 1

# Each check's output is shown only when it fails.
run() {
    local out
    if ! out="$("$@" 2>&1)"; then
        printf '%s\n' "$out" >&2
        return 1
    fi
}

mkdir -p "$CACHE"
status=0
log "mypy --strict $SOURCES/gulp"
run "$PY" -m mypy --strict --config-file "$CONFIG" --cache-dir "$CACHE" || status=1
# The stub is the checkout's (MYPYPATH), the module the installed one;
# stubtest runs in the cache directory, where it leaves its .mypy_cache.
log "stubtest gulp._gulp: $SOURCES/gulp/_gulp.pyi against $native"
(cd "$CACHE" && MYPYPATH="$REPO/$SOURCES" run "$PY" -m mypy.stubtest gulp._gulp \
    --mypy-config-file "$CONFIG") || status=1
[ "$status" -eq 0 ] || die "type checks failed"
