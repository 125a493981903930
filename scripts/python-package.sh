#!/usr/bin/env bash
# Builds the `gulp` Python package from this checkout and installs it into
# .venv (`pip install ./crates/gulp-python`), when it is not installed from
# the current sources. Needs the environment of scripts/python-env.sh.
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
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] && "$py" -c 'import gulp' 2>/dev/null; then
    exit 0
fi
echo "python-package.sh: pip install ./crates/gulp-python (builds the Rust core in release mode)" >&2
# The build backend (maturin) is in the venv: no isolated build environment
# to fetch, and cargo's target directory is the workspace's.
PATH="$root/.venv/bin:$PATH" "$py" -m pip install --disable-pip-version-check --no-input -q --no-build-isolation \
    --force-reinstall --no-deps ./crates/gulp-python
"$py" -c 'import gulp; print("python-package.sh: gulp", gulp.__version__, "installed with", gulp.CODEC)' >&2
printf '%s\n' "$hash" >"$marker"
