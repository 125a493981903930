#!/usr/bin/env bash
# On demand: crates/gulp-python/tests/test_torch.py with PyTorch, in the
# venv of scripts/env/torch-env.sh (torch is never put into .venv).
#
#   scripts/torch-check.sh                 # create or update the venv, run the tests
#   scripts/torch-check.sh -- -k loader    # arguments after -- go to pytest
#   scripts/torch-check.sh --clean         # delete .venv-torch first
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
TEST="crates/gulp-python/tests/test_torch.py"
ENV_ARGS=()
PYTEST_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --clean) ENV_ARGS=(--clean) ;;
        --) shift; PYTEST_ARGS=("$@"); break ;;
        -h | --help) sed -n '2,8p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "torch-check.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
PY="$(scripts/env/torch-env.sh "${ENV_ARGS[@]}")"
exec "$PY" -m pytest -q "$TEST" "${PYTEST_ARGS[@]}"
