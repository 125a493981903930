#!/usr/bin/env bash
# `gulp serve` in a real browser: headless Chromium (Debian's chromium and
# chromium-driver, installed with apt-get when missing) driven by Selenium
# (in .venv-browser, made when missing), over the sample directory that
# scripts/sample.sh makes, and a directory with sound made here (a video
# with beeps and one without sound, gulped with --audio). Writes the docs'
# screenshots (docs/img/serve-*.png).
#
#   scripts/ci/serve-test.sh [GULP]     (default: .venv/bin/gulp, the wheel's)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
gulp="${1:-$root/.venv/bin/gulp}"

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "serve-test: installing chromium and chromium-driver with apt-get" >&2
    sudo_cmd=""
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium chromium-driver >/dev/null
fi
venv="$root/.venv-browser"
if ! "$venv/bin/python" -c "import selenium, PIL" >/dev/null 2>&1; then
    echo "serve-test: making $venv with selenium and pillow" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q selenium pillow
fi
[ -d sample/gulp ] || { echo "serve-test: no sample/gulp (run scripts/sample.sh first)" >&2; exit 1; }
sound="$(mktemp -d)"
trap 'rm -rf "$sound"' EXIT
mkdir -p "$sound/videos/beeps"
# 4 s at 25 fps; a 1 kHz beep of 0.1 s every second (AAC).
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=25:duration=4 \
    -f lavfi -i "aevalsrc='0.6*sin(2*PI*1000*t)*lt(mod(t,1),0.1)':s=48000:d=4" \
    -pix_fmt yuv420p -c:v libx264 -preset ultrafast -c:a aac -shortest "$sound/videos/beeps/beep.mp4"
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=320x240:rate=25:duration=2 \
    -pix_fmt yuv420p -c:v libx264 -preset ultrafast "$sound/videos/beeps/mute.mp4"
"$gulp" ingest video-folder "$sound/videos" "$sound/gulp" --frame-rate 10 --frame-size 128 --audio --quiet
mkdir -p docs/img
# Selenium finds the driver on PATH, never on the network.
SE_OFFLINE=true "$venv/bin/python" scripts/ci/serve_browser.py "$gulp" sample/gulp sample/epic \
    --sound "$sound/gulp" --sound-fps 10 --shots docs/img
