#!/usr/bin/env bash
# Installs what gulp's tests and sample run need, when it is missing:
# ffmpeg (Debian package) and the Python environment with gulpio2 (.venv).
# Safe to run again: each step is skipped when already done.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v ffmpeg >/dev/null 2>&1; then
    echo "deps: installing ffmpeg with apt-get" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq ffmpeg >/dev/null
fi
command -v ffmpeg >/dev/null || { echo "deps: ffmpeg is still missing" >&2; exit 1; }

# libjpeg-turbo's TurboJPEG library, for the optional `turbojpeg` encoder.
if ! pkg-config --exists libturbojpeg 2>/dev/null; then
    echo "deps: installing libturbojpeg0-dev and pkg-config with apt-get" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libturbojpeg0-dev pkg-config >/dev/null
fi

# GULP_DEPS_NO_NEXTEST=1 skips it (scripts/compare.sh does not need it).
if [ -z "${GULP_DEPS_NO_NEXTEST:-}" ] && ! cargo nextest --version >/dev/null 2>&1; then
    echo "deps: installing cargo-nextest" >&2
    cargo install --locked cargo-nextest
fi

"$root/scripts/python-env.sh"
