#!/usr/bin/env bash
# Makes <repo>/.venv-docs, the environment that builds the documentation site
# (MkDocs with the Material theme, mkdocstrings for the Python API reference),
# when it is missing or its requirement list changed; prints its python.
#
#   "$(scripts/env/docs-env.sh)" -m mkdocs build --strict
#
# Apart from .venv (scripts/env/python-env.sh) so that the site's packages never
# meet the test environment's. mkdocstrings reads the gulp package's
# docstrings from crates/gulp-python/python statically: no wheel is needed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/.venv-docs"
reqs=(
    "mkdocs==1.6.1"
    "mkdocs-material==9.8.2"
    "mkdocstrings==1.0.8"
    "mkdocstrings-python==2.0.11"
)
hash="$(printf '%s\n' "${reqs[@]}" | sha256sum | cut -d' ' -f1)"
marker="$venv/.gulp-docs-env-ok"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ] &&
    "$venv/bin/python" -c 'import mkdocs, material, mkdocstrings_handlers.python' 2>/dev/null; then
    echo "$venv/bin/python"
    exit 0
fi
echo "docs-env.sh: creating $venv" >&2
rm -rf "$venv"
python3 -m venv "$venv" >&2
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q "${reqs[@]}" >&2 ||
    { rm -rf "$venv"; echo "docs-env.sh: error: pip install ${reqs[*]} failed (is the package registry reachable?)" >&2; exit 1; }
printf '%s\n' "$hash" >"$marker"
echo "$venv/bin/python"
