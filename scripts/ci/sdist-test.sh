#!/usr/bin/env bash
# The sdist as a user with Rust builds it: `pip install` of
# dist/gulp_video-*.tar.gz in a fresh venv (pip compiles the Rust core and
# libjpeg-turbo: cargo, cmake, nasm and a C compiler are needed), then the
# pytest suite against what it installed (with the real gulpio2 beside it).
#
#   scripts/wheel.sh && scripts/ci/sdist-test.sh [pytest args...]
#
# A release build from nothing (several minutes): the release workflow runs
# it once per release; the test command does not.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
step() { echo "sdist-test.sh: $*" >&2; }
fail() { echo "sdist-test.sh: error: $*" >&2; exit 1; }

sdists=(dist/gulp_video-*.tar.gz)
[ "${#sdists[@]}" = 1 ] && [ -f "${sdists[0]}" ] || fail "expected one sdist in dist/ (scripts/wheel.sh makes it), found: ${sdists[*]}"
sdist="$root/${sdists[0]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"${PYTHON:-python3}" -m venv "$work/venv"
py="$work/venv/bin/python"
pip=("$py" -m pip --disable-pip-version-check --no-input -q)

step "pip install $(basename "$sdist") into a fresh venv (builds the Rust core)"
start=$SECONDS
"${pip[@]}" install --no-binary=gulp-video "$sdist"
step "built and installed in $((SECONDS - start)) s"
(cd "$work" && "$py" -c 'import gulp, sys; print("sdist-test.sh: import gulp:", gulp.__version__, gulp.CODEC, gulp.__file__, file=sys.stderr)')

step "installing the test requirements (gulpio2 0.0.4, pytest, ...)"
"${pip[@]}" install -r crates/gulp-python/tests/requirements.txt
"${pip[@]}" install --no-deps gulpio2==0.0.4
step "pytest against the package built from the sdist"
cd "$work"
"$py" -m pytest "$root/crates/gulp-python/tests" -q -ra -p no:cacheprovider "$@"
