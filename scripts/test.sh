#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the
# workspace (unit, integration, doc tests, and one pass of each benchmark),
# the cross-compatibility suite against the real gulpio2 (scripts/ci/compat.sh),
# and the Python package's pytest suite (against its wheel, built from this
# checkout and installed into a fresh venv, compared with the real gulpio2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/env/deps.sh
export GULP_PYTHON="$root/.venv/bin/python"
# Module imports form a DAG: in every crate and in the Python package.
python3 scripts/ci/check_imports.py
# Benchmarks run once each as a smoke test; timings come from `cargo bench`.
cargo test --workspace --benches --release -q
scripts/ci/compat.sh
# The Python package: its wheel (built once, installed into .venv), then the
# pytest suite against that wheel in a fresh venv without build tools.
scripts/python-package.sh
scripts/ci/wheel-test.sh
# Its types: mypy --strict over the package, stubtest against the wheel's
# native module.
scripts/ci/typecheck.sh
# The docs' examples, on every page: every Python example runs against the
# sample directory (scripts/sample.sh makes it), every gulp command line
# parses, and the README's quick start and docs/guide.md run as written
# (about 30 s in all).
scripts/sample.sh >/dev/null
"$root/.venv/bin/python" scripts/ci/check_docs.py sample/gulp
# The documentation site (MkDocs Material, the Python API from the
# docstrings), in its own venv: a broken link or reference fails (--strict;
# not --quiet, which hides the warnings --strict turns into a failure).
# A few seconds once .venv-docs exists. docs/reference/cli.md is checked
# against the clap definitions by gulp-cli's cli_reference test (below).
NO_MKDOCS_2_WARNING=1 "$(scripts/env/docs-env.sh)" -m mkdocs build --strict --site-dir "$root/site"
# `gulp serve` in headless Chromium over the sample (chromium, its driver
# and selenium installed when missing); writes docs/img/serve-*.png.
scripts/ci/serve-test.sh
cargo test --workspace --doc
# Sharded ingest on a real single-node Slurm (installed when missing).
scripts/ci/slurm-test.sh
# Directories in a real S3-compatible server (Garage, built once when
# missing: about 10 minutes on 2 idle cores, the difference between a
# first and a later run of .ci/run in CONTRIBUTING.md, Slurm's installation included).
scripts/ci/s3-test.sh
# Directories on a real static web server (nginx-light, installed when
# missing): read without a listing, behind a redirect, copied back.
scripts/ci/http-test.sh
# The reading and ingest tests once more in the pure-Rust build (zune-jpeg
# decoding and encoding, no libjpeg-turbo).
cargo nextest run -p gulp-codec -p gulp-store -p gulp-io -p gulp-ingest -p gulp-loader --no-default-features --no-fail-fast
cargo nextest run --workspace --no-fail-fast
