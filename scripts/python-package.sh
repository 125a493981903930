#!/usr/bin/env bash
# Builds the `gulp` Python package's wheel from this checkout and installs it
# into .venv, when it is not installed from the current sources. Needs the
# environment of scripts/env/python-env.sh.
#
#   scripts/python-package.sh           # the wheel users install: manylinux2014 (scripts/wheel.sh --host)
#   scripts/python-package.sh --quick   # any wheel of the current sources, else this machine's own
#
# The test command installs the first, so that the tests run against the
# wheel users get. scripts/sample.sh asks for the second: a release build
# for this machine alone, without zig and glibc 2.17's symbols, and without
# what the sample does not use (`gulp serve` and s3:// directories, which
# then say that this build lacks them): 174 s on 2 idle cores from an empty
# cargo home and target directory. A later full call replaces it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
kind=manylinux
case "${1:-}" in
    "") ;;
    --quick) kind=quick ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
esac
py="$root/.venv/bin/python"
marker="$root/.venv/.gulp-package-ok"
# What the wheel is built from: the workspace's crates and lock file.
sources_hash() {
    find Cargo.toml Cargo.lock crates -type f \
        \( -name '*.rs' -o -name '*.toml' -o -name '*.py' -o -name '*.pyi' -o -name 'py.typed' -o -name 'README.md' \) \
        -not -path '*/tests/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}
hash="$(sources_hash)"
arch="$(uname -m)"
# The marker holds the sources' hash and the kind of wheel installed.
if [ -f "$marker" ] && compgen -G "dist/gulp_video-*_$arch.whl" >/dev/null && "$py" -c 'import gulp' 2>/dev/null; then
    read -r built built_kind <"$marker" || true
    if [ "$built" = "$hash" ] && { [ "$kind" = quick ] || [ "${built_kind:-manylinux}" = manylinux ]; }; then
        exit 0
    fi
fi
if [ "$kind" = manylinux ]; then
    # One build: the wheel users install (scripts/wheel.sh), installed here as
    # they install it. The pytest suite runs against the same wheel in a fresh
    # venv without the build tools (scripts/ci/wheel-test.sh).
    scripts/wheel.sh --host
else
    GULP_DEPS_NO_NEXTEST=1 scripts/env/deps.sh
    mkdir -p dist
    rm -f dist/gulp_video-*_"$arch".whl
    start=$SECONDS
    echo "python-package.sh: compiling the Rust core and libjpeg-turbo for this machine in release mode, without gulp serve and s3:// (about 3 min on 2 cores from an empty target directory)" >&2
    PATH="$root/.venv/bin:$PATH" "$root/.venv/bin/maturin" build --release --locked --compatibility linux \
        --no-default-features --features turbojpeg --out dist -m crates/gulp-python/Cargo.toml --quiet
    echo "python-package.sh: built $(ls dist/gulp_video-*_"$arch".whl) in $((SECONDS - start)) s" >&2
fi
wheel="$(ls dist/gulp_video-*_"$arch".whl)"
"$py" -m pip install --disable-pip-version-check --no-input -q --force-reinstall --no-deps "$wheel"
"$py" -c 'import gulp; print("python-package.sh: gulp", gulp.__version__, "installed with", gulp.CODEC)' >&2
printf '%s %s\n' "$hash" "$kind" >"$marker"
