#!/usr/bin/env bash
# The wheel as a user gets it: a fresh venv on a PATH where cargo, rustc,
# cmake, nasm and the C compilers are hidden, `pip install` of this
# machine's wheel in dist/ (timed), `gulp --help` and `python -m gulp --help`,
# the metadata `pip show` gives and the version; then video ingest with no
# ffmpeg on the PATH: without the `[ffmpeg]` extra the one-line error, with
# it a real video ingested by the extra's static ffmpeg; and then the whole
# pytest suite against the installed wheel (with the real gulpio2 beside
# it for the compatibility tests, and the system's ffmpeg on the PATH).
#
#   scripts/ci/wheel-test.sh [pytest args...]
#
# Uses the wheel scripts/python-package.sh built (scripts/wheel.sh --host),
# so the workspace is not compiled again; builds it when dist/ has none.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
step() { echo "wheel-test.sh: $*" >&2; }
fail() { echo "wheel-test.sh: error: $*" >&2; exit 1; }

arch="$(uname -m)"
wheels=(dist/gulp_video-*_"$arch".whl)
[ -f "${wheels[0]}" ] || scripts/python-package.sh
wheels=(dist/gulp_video-*_"$arch".whl)
[ "${#wheels[@]}" = 1 ] || fail "expected one $arch wheel in dist/, found: ${wheels[*]}"
wheel="$root/${wheels[0]}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="$work/venv"
"${PYTHON:-python3}" -m venv "$venv"

# A real video for the ingest without ffmpeg, made while ffmpeg is at hand.
mkdir -p "$work/videos/clips"
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=160x120:rate=25 -t 2 \
    -pix_fmt yuv420p "$work/videos/clips/test.mp4"
# And one with sound, for a manifest's clip: a timed decode, whose options
# differ between ffmpeg versions (the extra's static build is newer than
# the PATH's).
mkdir -p "$work/sound"
ffmpeg -nostdin -loglevel error -f lavfi -i testsrc2=size=160x120:rate=25:duration=2 \
    -f lavfi -i sine=frequency=440:duration=2 -c:v libx264 -pix_fmt yuv420p -c:a aac \
    -shortest "$work/sound/talk.mp4"
printf 'path,start,end,caption\ntalk.mp4,0.5,1.5,a tone\n' >"$work/sound/clips.csv"

# A PATH with every command of this one but the build tools: symlinks in one
# directory, first match wins, as the shell would find them. ffmpeg and
# ffprobe go to a directory of their own, on the PATH of the pytest suite
# only.
hidden=" cargo rustc rustup rustdoc cmake nasm yasm cc gcc c++ g++ clang maturin zig "
shadow="$work/bin"
media="$work/ffmpeg-bin"
mkdir "$shadow" "$media"
IFS=: read -r -a dirs <<<"$PATH"
for dir in "${dirs[@]}"; do
    [ -d "$dir" ] || continue
    for exe in "$dir"/*; do
        name="${exe##*/}"
        [ -x "$exe" ] && [ ! -d "$exe" ] || continue
        case "$hidden" in *" $name "*) continue ;; esac
        case "$name" in *-gcc | *-gcc-[0-9]* | gcc-[0-9]* | cc-* | rust-*) continue ;; esac
        into="$shadow"
        case "$name" in ffmpeg | ffprobe) into="$media" ;; esac
        [ -e "$into/$name" ] || ln -s "$exe" "$into/$name"
    done
done
user_env=(env -u GULP_FFMPEG -u IMAGEIO_FFMPEG_EXE "PATH=$venv/bin:$shadow" "HOME=$HOME" "VIRTUAL_ENV=$venv")
for tool in cargo rustc cmake nasm cc gcc ffmpeg; do
    if "${user_env[@]}" sh -c "command -v $tool" >/dev/null 2>&1; then
        fail "$tool is still on the test's PATH"
    fi
done
py=("${user_env[@]}" "$venv/bin/python")
pip=("${py[@]}" -m pip --disable-pip-version-check --no-input -q)

step "pip install $(basename "$wheel") into a fresh venv (no cargo, rustc, cmake, nasm or C compiler on PATH)"
start=$(date +%s.%N)
# --only-binary: a wheel that needed building would fail here, not build.
"${pip[@]}" install --only-binary=:all: "$wheel"
step "installed in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"

# numpy is the only dependency.
deps="$("${py[@]}" -m pip --disable-pip-version-check list --format=freeze | cut -d= -f1 |
    tr 'A-Z_' 'a-z-' | { grep -vxE 'pip|setuptools|wheel' || true; } | sort | tr '\n' ' ')"
[ "$deps" = "gulp-video numpy " ] || fail "installed packages: $deps (expected gulp-video and numpy)"
"${user_env[@]}" "$venv/bin/gulp" --help | grep -q "ingest" || fail "gulp --help"
(cd "$work" && "${py[@]}" -m gulp --help) | grep -q "ingest" || fail "python -m gulp --help"
(cd "$work" && "${py[@]}" -c 'import gulp, sys; print("wheel-test.sh: import gulp:", gulp.__version__, gulp.CODEC, gulp.__file__, file=sys.stderr)')
"${py[@]}" -m pip --disable-pip-version-check show gulp-video | sed 's/^/wheel-test.sh: pip show: /' >&2

# One version: the wheel's metadata, `gulp --version` and gulp.__version__.
version="$("${py[@]}" -c 'import importlib.metadata as m; print(m.version("gulp-video"))')"
[ "$("${user_env[@]}" "$venv/bin/gulp" --version)" = "gulp $version" ] || fail "gulp --version is not gulp $version"
[ "$(cd "$work" && "${py[@]}" -c 'import gulp; print(gulp.__version__)')" = "$version" ] ||
    fail "gulp.__version__ is not $version"

# Video ingest with no ffmpeg anywhere: the one line naming the three ways
# to get one, from the command and from Python.
ways='set GULP_FFMPEG to an ffmpeg binary, put `ffmpeg` on the PATH (e.g. `apt-get install ffmpeg`), or `pip install "gulp-video[ffmpeg]"` for a static build'
if "${user_env[@]}" "$venv/bin/gulp" ingest video-folder "$work/videos" "$work/out-none" --quiet 2>"$work/err"; then
    fail "gulp ingest succeeded without any ffmpeg"
fi
[ "$(wc -l <"$work/err")" = 1 ] && grep -qF "ffmpeg not found (videos are decoded with ffmpeg): $ways" "$work/err" ||
    fail "gulp ingest without ffmpeg printed: $(cat "$work/err")"
(cd "$work" && "${py[@]}" - "$work/videos" "$work/out-none" "$ways" <<'PY') || fail "gulp.ingest without ffmpeg"
import sys, gulp
try:
    gulp.ingest("video-folder", sys.argv[1], output=sys.argv[2])
except gulp.GulpError as e:
    assert str(e).endswith(sys.argv[3]) and "\n" not in str(e), str(e)
else:
    raise SystemExit("no error")
PY
step "without ffmpeg: $(cat "$work/err")"

# The [ffmpeg] extra: imageio-ffmpeg's static binary, still no ffmpeg on the PATH.
step "pip install the [ffmpeg] extra (imageio-ffmpeg)"
"${pip[@]}" install --only-binary=:all: "$wheel[ffmpeg]"
"${user_env[@]}" "$venv/bin/gulp" ingest video-folder "$work/videos" "$work/out-cli" --quiet
(cd "$work" && "${py[@]}" - "$work/videos" "$work/out-cli" "$work/out-py" <<'PY') || fail "ingest with the [ffmpeg] extra"
import sys, gulp, imageio_ffmpeg
ffmpeg = gulp._ffmpeg.path()
assert ffmpeg == imageio_ffmpeg.get_ffmpeg_exe(), ffmpeg
report = gulp.ingest("video-folder", sys.argv[1], output=sys.argv[3])
for out in sys.argv[2:]:
    frames, meta = gulp.GulpDirectory(out)["clips-test.mp4"]
    assert len(frames) == 50 and frames[0].shape == (120, 160, 3), (out, len(frames), frames[0].shape)
print(f"wheel-test.sh: with the [ffmpeg] extra ({ffmpeg}): 50 frames of 160x120 from the CLI and gulp.ingest", file=sys.stderr)
PY
"${user_env[@]}" "$venv/bin/gulp" ingest manifest "$work/sound/clips.csv" "$work/out-clip" --audio --quiet
"${user_env[@]}" "$venv/bin/gulp" check "$work/out-clip" --decode >/dev/null
"${user_env[@]}" "$venv/bin/gulp" dump-meta "$work/out-clip" >"$work/clip.json"
"${py[@]}" - "$work/clip.json" <<'PY' || fail "a manifest's clip with sound with the [ffmpeg] extra"
import json, sys
(item,) = json.load(open(sys.argv[1])).values()
times, audio = item["frame_times"], item["audio"]
# 25 fps: the frames shown in [0.5, 1.5) are those at 0.52 ... 1.48 s.
assert len(item["frame_info"]) == 25, len(item["frame_info"])
assert abs(times["start"] - 0.52) < 1e-6 and abs(times["step"] - 0.04) < 1e-6, times
assert audio["sample_rate"] == 16000 and audio["samples"] == 16000 and audio["start"] == 0.5, audio
print(f"wheel-test.sh: a manifest's clip with the [ffmpeg] extra: 25 frames from 0.52 s, {audio['samples']} samples", file=sys.stderr)
PY
# An ffmpeg older than 4.0 first on the PATH gives way to the extra's.
mkdir -p "$work/old-ffmpeg"
printf '%s\n' '#!/bin/sh' \
    "echo 'ffmpeg version 3.4.8-0ubuntu0.2 Copyright (c) 2000-2020 the FFmpeg developers'" \
    "echo 'libavformat    57. 83.100 / 57. 83.100'" >"$work/old-ffmpeg/ffmpeg"
chmod +x "$work/old-ffmpeg/ffmpeg"
env -u GULP_FFMPEG -u IMAGEIO_FFMPEG_EXE "PATH=$work/old-ffmpeg:$venv/bin:$shadow" "HOME=$HOME" \
    "VIRTUAL_ENV=$venv" "$venv/bin/gulp" ingest video-folder "$work/videos" "$work/out-old" --quiet ||
    fail "the [ffmpeg] extra did not take the place of an ffmpeg 3.4 on the PATH"
[ "$("${user_env[@]}" "$venv/bin/gulp" info "$work/out-old" | awk '$1 == "frames" {print $2}')" = 50 ] ||
    fail "the ingest with an ffmpeg 3.4 on the PATH and the [ffmpeg] extra did not give 50 frames"
step "an ffmpeg 3.4 on the PATH gave way to the [ffmpeg] extra's"

step "installing the test requirements (gulpio2 0.0.4, pytest, ...)"
"${pip[@]}" install -r crates/gulp-python/tests/requirements.txt
"${pip[@]}" install --no-deps gulpio2==0.0.4
step "pytest against the installed wheel"
# From a directory outside the checkout, so that `import gulp` can only be
# the installed wheel.
cd "$work"
env -u GULP_FFMPEG -u IMAGEIO_FFMPEG_EXE "PATH=$venv/bin:$shadow:$media" "HOME=$HOME" "VIRTUAL_ENV=$venv" \
    "$venv/bin/python" -m pytest "$root/crates/gulp-python/tests" -q -ra -p no:cacheprovider "$@"
