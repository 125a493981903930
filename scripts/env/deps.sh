#!/usr/bin/env bash
# Installs what gulp's tests and sample run need, when it is missing:
# ffmpeg, the build tools of the bundled libjpeg-turbo (cmake, nasm) and the
# Python environment with gulpio2 (.venv).
# Safe to run again: each step is skipped when already done.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

if ! command -v ffmpeg >/dev/null 2>&1; then
    echo "deps: installing ffmpeg with apt-get" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq ffmpeg >/dev/null
fi
command -v ffmpeg >/dev/null || { echo "deps: ffmpeg is still missing" >&2; exit 1; }

# cmake, nasm and a C compiler build the libjpeg-turbo that gulp compiles in
# (statically, with its SIMD code): no system JPEG library is used at run time.
missing=""
for tool in cmake nasm cc; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
    echo "deps: installing cmake, nasm and gcc with apt-get (missing:$missing)" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq cmake nasm gcc >/dev/null
fi
for tool in cmake nasm cc; do
    command -v "$tool" >/dev/null || { echo "deps: $tool is still missing" >&2; exit 1; }
done

# GULP_DEPS_NO_NEXTEST=1 skips it (scripts/compare.sh does not need it).
if [ -z "${GULP_DEPS_NO_NEXTEST:-}" ] && ! cargo nextest --version >/dev/null 2>&1; then
    echo "deps: installing cargo-nextest" >&2
    cargo install --locked cargo-nextest
fi

"$root/scripts/env/python-env.sh"
