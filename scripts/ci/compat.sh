#!/usr/bin/env bash
# The cross-compatibility suite: gulp against the real gulpio2 0.0.4, both
# ways (gulpio2 writes and gulp reads; gulp writes and gulpio2 reads), plus the
# committed GulpIO v1 chunk. One line per case and direction; exits non-zero
# if any case fails or if the Python environment cannot be made (no silent
# skip when the package registry is unreachable).
#
#   scripts/ci/compat.sh [-k NAME] [--keep DIR]   (options go to tests/compat/compat.py)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
scripts/env/python-env.sh
cargo build --release -q -p gulp-cli
cargo build --release -q -p gulp-io --example write_spec
target="${CARGO_TARGET_DIR:-$root/target}"
exec "$root/.venv/bin/python" tests/compat/compat.py \
    --gulp "$target/release/gulp" \
    --write-spec "$target/release/examples/write_spec" "$@"
