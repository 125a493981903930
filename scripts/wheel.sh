#!/usr/bin/env bash
# Builds the Python distribution `gulp-video` from this checkout into dist/:
# abi3 wheels (every CPython >= 3.9) for Linux x86_64 and aarch64, tagged
# manylinux2014 (manylinux_2_17: glibc 2.17 and later, so CentOS 7, RHEL 8,
# Ubuntu 20.04 and newer), and the sdist. libjpeg-turbo is linked statically:
# no system JPEG library is needed at run time. Prints auditwheel's check of
# each wheel and the sizes.
#
#   scripts/wheel.sh          # dist/gulp_video-<version>-cp39-abi3-manylinux_2_17_{x86_64,aarch64}.*.whl + .tar.gz
#   scripts/wheel.sh --host   # this machine's wheel only (what the tests install)
#
# No container: zig (the registry's `ziglang` package, in .venv) links
# against glibc 2.17's symbols and compiles libjpeg-turbo for each target,
# through maturin's --zig (cargo-zigbuild's compiler wrappers and cmake
# toolchain file). The aarch64 wheel needs Rust's aarch64 standard library
# (`rustup target add aarch64-unknown-linux-gnu`, tried here when missing).
#
# The release workflow (.github/workflows/release.yml) runs this same
# script. Needs what scripts/env/deps.sh installs (cmake, nasm, the .venv with
# maturin, auditwheel and ziglang); it installs them when missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
host_only=0
case "${1:-}" in
    "") ;;
    --host) host_only=1 ;;
    *) echo "usage: $0 [--host]" >&2; exit 2 ;;
esac
step() { echo "wheel.sh: $*" >&2; }
fail() { echo "wheel.sh: error: $*" >&2; exit 1; }

[ "$(uname -s)" = Linux ] || fail "builds the Linux wheels (macOS: see .github/workflows/release.yml)"
GULP_DEPS_NO_NEXTEST=1 scripts/env/deps.sh
bin="$root/.venv/bin"
crate=crates/gulp-python/Cargo.toml
mkdir -p dist
rm -f dist/gulp_video-*.whl dist/gulp_video-*.tar.gz

host="$(uname -m)"
arches=("$host")
if [ "$host_only" = 0 ]; then
    for arch in x86_64 aarch64; do
        [ "$arch" = "$host" ] || arches+=("$arch")
    done
fi

for arch in "${arches[@]}"; do
    target="$arch-unknown-linux-gnu"
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
        step "adding Rust's standard library for $target"
        rustup target add "$target" >&2 ||
            fail "no Rust standard library for $target (rustup target add $target failed); scripts/wheel.sh --host builds this machine's wheel alone"
    fi
    start=$SECONDS
    step "compiling the Rust core and libjpeg-turbo for $target in release mode (about 4 min on 2 cores from an empty target directory)"
    # --zig with --compatibility manylinux2014: zig links against glibc
    # 2.17's symbols, and maturin's own audit refuses a binary that needs
    # more than the policy allows.
    PATH="$bin:$PATH" "$bin/maturin" build --release --locked --zig --compatibility manylinux2014 \
        --target "$target" --out dist -m "$crate" --quiet
    wheel="$(ls dist/gulp_video-*_"$arch".whl)"
    step "built $wheel in $((SECONDS - start)) s"
    # A second opinion on the tag: the policy auditwheel finds the wheel
    # consistent with, and that no shared library outside it is needed.
    "$bin/auditwheel" show "$wheel" | tr '\n' ' ' | sed 's/  */ /g' >&2
    echo >&2
    case "$wheel" in
        *manylinux_2_17_"$arch"*) ;;
        *) fail "$wheel is not tagged manylinux_2_17" ;;
    esac
done
if [ "$host_only" = 0 ]; then
    log="$(PATH="$bin:$PATH" "$bin/maturin" sdist --out dist -m "$crate" 2>&1)" || {
        echo "$log" >&2
        fail "maturin sdist failed"
    }
    # The registry's own checks of the metadata and the README's markup.
    "$bin/twine" check --strict dist/gulp_video-* >&2
fi
for f in dist/gulp_video-*; do
    step "$(basename "$f"): $(du -k "$f" | cut -f1) kB"
done
