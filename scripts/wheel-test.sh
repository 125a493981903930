#!/usr/bin/env bash
# The wheel as a user gets it: a fresh venv on a PATH where cargo, rustc,
# cmake, nasm and the C compilers are hidden, `pip install` of the wheel in
# dist/ (timed), `gulp --help` and `python -m gulp --help`, the metadata
# `pip show` gives, and then the whole pytest suite against the installed
# wheel (with the real gulpio2 beside it for the compatibility tests).
#
#   scripts/wheel-test.sh [pytest args...]
#
# Uses the wheel scripts/python-package.sh built (scripts/wheel.sh), so the
# workspace is not compiled again; builds it when dist/ has none.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { echo "wheel-test.sh: $*" >&2; }
fail() { echo "wheel-test.sh: error: $*" >&2; exit 1; }

wheels=(dist/gulp_video-*.whl)
[ -f "${wheels[0]}" ] || scripts/python-package.sh
wheels=(dist/gulp_video-*.whl)
[ "${#wheels[@]}" = 1 ] || fail "expected one wheel in dist/, found: ${wheels[*]}"
wheel="$root/${wheels[0]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="$work/venv"
"${PYTHON:-python3}" -m venv "$venv"

# A PATH with every command of this one but the build tools: symlinks in one
# directory, first match wins, as the shell would find them.
hidden=" cargo rustc rustup rustdoc cmake nasm yasm cc gcc c++ g++ clang maturin "
shadow="$work/bin"
mkdir "$shadow"
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
    [ -d "$dir" ] || continue
    for exe in "$dir"/*; do
        name="${exe##*/}"
        [ -x "$exe" ] && [ ! -d "$exe" ] || continue
        case "$hidden" in *" $name "*) continue ;; esac
        case "$name" in *-gcc | *-gcc-[0-9]* | gcc-[0-9]* | cc-* | rust-*) continue ;; esac
        [ -e "$shadow/$name" ] || ln -s "$exe" "$shadow/$name"
    done
done
user_env=(env "PATH=$venv/bin:$shadow" "HOME=$HOME" "VIRTUAL_ENV=$venv")
for tool in cargo rustc cmake nasm cc gcc; do
    if "${user_env[@]}" sh -c "command -v $tool" >/dev/null 2>&1; then
        fail "$tool is still on the test's PATH"
    fi
done
py=("${user_env[@]}" "$venv/bin/python")
pip=("${py[@]}" -m pip --disable-pip-version-check --no-input -q)

step "pip install $(basename "$wheel") into a fresh venv (no cargo, rustc, cmake, nasm or C compiler on PATH)"
start=$(date +%s.%N)
# --only-binary: a wheel that needed building would fail here, not build.
"${pip[@]}" install --only-binary=:all: "$wheel"
step "installed in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"

# numpy is the only dependency.
deps="$("${py[@]}" -m pip --disable-pip-version-check list --format=freeze | cut -d= -f1 |
    tr 'A-Z_' 'a-z-' | { grep -vxE 'pip|setuptools|wheel' || true; } | sort | tr '\n' ' ')"
[ "$deps" = "gulp-video numpy " ] || fail "installed packages: $deps (expected gulp-video and numpy)"
"${user_env[@]}" "$venv/bin/gulp" --help | grep -q "ingest" || fail "gulp --help"
(cd "$work" && "${py[@]}" -m gulp --help) | grep -q "ingest" || fail "python -m gulp --help"
(cd "$work" && "${py[@]}" -c 'import gulp, sys; print("wheel-test.sh: import gulp:", gulp.__version__, gulp.CODEC, gulp.__file__, file=sys.stderr)')
"${py[@]}" -m pip --disable-pip-version-check show gulp-video | sed 's/^/wheel-test.sh: pip show: /' >&2

step "installing the test requirements (gulpio2 0.0.4, pytest, ...)"
"${pip[@]}" install -r crates/gulp-python/tests/requirements.txt
"${pip[@]}" install --no-deps gulpio2==0.0.4
step "pytest against the installed wheel"
# From a directory outside the checkout, so that `import gulp` can only be
# the installed wheel.
cd "$work"
"${py[@]}" -m pytest "$root/crates/gulp-python/tests" -q -ra -p no:cacheprovider "$@"
