#!/usr/bin/env bash
# Builds the Python distribution `gulp-video` from this checkout into dist/:
# one abi3 wheel (every CPython >= 3.9) for this platform with a manylinux
# tag on Linux (libjpeg-turbo linked statically: no system JPEG library is
# needed at run time), and the sdist. Prints the tag check and the sizes.
#
#   scripts/wheel.sh              # dist/gulp_video-<version>-cp39-abi3-manylinux_*.whl + .tar.gz
#   scripts/wheel.sh --no-sdist   # the wheel only (what the tests install)
#
# The release workflow (.github/workflows/release.yml) runs this same script
# for Linux x86_64. Needs what scripts/deps.sh installs (cmake, nasm, the
# .venv with maturin and auditwheel); it installs them when missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
sdist=1
case "${1:-}" in
    "") ;;
    --no-sdist) sdist=0 ;;
    *) echo "usage: $0 [--no-sdist]" >&2; exit 2 ;;
esac
step() { echo "wheel.sh: $*" >&2; }

GULP_DEPS_NO_NEXTEST=1 scripts/deps.sh
bin="$root/.venv/bin"
crate=crates/gulp-python/Cargo.toml
mkdir -p dist
rm -f dist/gulp_video-*.whl dist/gulp_video-*.tar.gz

start=$SECONDS
step "compiling the Rust core in release mode (about 4 min on 2 cores from an empty target directory)"
# --compatibility pypi: the lowest manylinux tag the binary satisfies, checked
# by maturin's own audit of the symbols it links (a wheel that needs more
# than a manylinux policy allows is an error, not a plain linux tag).
PATH="$bin:$PATH" "$bin/maturin" build --release --locked --compatibility pypi \
    --out dist -m "$crate" --quiet
wheel="$(ls dist/gulp_video-*.whl)"
step "built $wheel in $((SECONDS - start)) s"
if [ "$(uname -s)" = Linux ]; then
    # A second opinion on the tag: the policy auditwheel finds the wheel
    # consistent with, and that no shared library outside the policy is needed.
    "$bin/auditwheel" show "$wheel" | tr '\n' ' ' | sed 's/  */ /g' >&2
    echo >&2
    case "$wheel" in
        *manylinux*) ;;
        *) echo "wheel.sh: error: $wheel has no manylinux tag" >&2; exit 1 ;;
    esac
fi
if [ "$sdist" = 1 ]; then
    PATH="$bin:$PATH" "$bin/maturin" sdist --out dist -m "$crate" >/dev/null
fi
for f in dist/gulp_video-*; do
    step "$(basename "$f"): $(du -k "$f" | cut -f1) kB"
done
