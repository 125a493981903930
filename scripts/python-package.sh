#!/usr/bin/env bash
# Builds the `gulp` Python package's wheel from this checkout and installs it
# into .venv, when it is not installed from the current sources. Needs the
# environment of scripts/env/python-env.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
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
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] && compgen -G "dist/gulp_video-*_$arch.whl" >/dev/null &&
    "$py" -c 'import gulp' 2>/dev/null; then
    exit 0
fi
# One build: the wheel users install (scripts/wheel.sh), installed here as
# they install it. The pytest suite runs against the same wheel in a fresh
# venv without the build tools (scripts/ci/wheel-test.sh).
scripts/wheel.sh --host
wheel="$(ls dist/gulp_video-*_"$arch".whl)"
"$py" -m pip install --disable-pip-version-check --no-input -q --force-reinstall --no-deps "$wheel"
"$py" -c 'import gulp; print("python-package.sh: gulp", gulp.__version__, "installed with", gulp.CODEC)' >&2
printf '%s\n' "$hash" >"$marker"
