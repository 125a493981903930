#!/usr/bin/env bash
# The main job on a small sample dataset: makes eight short videos with
# ffmpeg in the 20BN (Something-Something) layout, gulps them with
# `gulp ingest` (and once more as EPIC-Kitchens-style actions, sample/epic,
# the directory of the docs' segment examples), checks and describes the
# result, extracts a few frames, and
# reads the same directory with the real gulpio2 to show it is compatible,
# and from Python with the gulp package.
#
# One build: the wheel of the Python package (scripts/wheel.sh), installed
# into .venv, gives both `import gulp` and the `gulp` command used here.
# Prints one line per step, with the time it took.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
t0=$SECONDS
mark=$SECONDS
step() { echo "sample.sh: $* ($((SECONDS - mark)) s; $((SECONDS - t0)) s in all)"; mark=$SECONDS; }

echo "sample.sh: installing what is missing (ffmpeg, cmake, nasm with apt-get; a Python venv with gulpio2)"
GULP_DEPS_NO_NEXTEST=1 scripts/env/deps.sh
step "dependencies ready"
echo "sample.sh: building the gulp wheel (Rust core, libjpeg-turbo, the gulp command) and installing it into .venv"
scripts/python-package.sh --quick
step "gulp installed"
gulp="$root/.venv/bin/gulp"

out="$root/sample"
rm -rf "$out"
mkdir -p "$out/videos"
patterns=(testsrc2 smptebars mandelbrot rgbtestsrc life cellauto testsrc yuvtestsrc)
labels=("Pushing something" "Pulling something" "Holding something")
entries=()
for i in "${!patterns[@]}"; do
    id=$((1000 + i))
    mkdir -p "$out/videos/$id"
    ffmpeg -nostdin -loglevel error -f lavfi -i "${patterns[$i]}=size=320x240:rate=25" -t 3 \
        -pix_fmt yuv420p "$out/videos/$id/$id.webm"
    entries+=("{\"id\": \"$id\", \"template\": \"${labels[$((i % 3))]}\"}")
done
(IFS=,; echo "[${entries[*]}]") > "$out/videos.json"
step "8 sample videos made with ffmpeg in $out/videos"

echo "== gulp ingest 20bn-json (8 fps, short edge 128, 3 videos per chunk)"
"$gulp" ingest 20bn-json "$out/videos.json" "$out/videos" "$out/gulp" \
    --videos-per-chunk 3 --frame-size 128
echo "== gulp ingest epic-kitchens (the same videos as EPIC-Kitchens-style actions, two each, every frame)"
{
    echo "narration_id,participant_id,video_id,start_frame,stop_frame,verb,verb_class,noun,noun_class,all_noun_classes"
    for i in "${!patterns[@]}"; do
        id=$((1000 + i))
        echo "${id}_0,P01,$id,1,30,open,$((i % 3)),tap,$((10 + i % 4)),\"[$((10 + i % 4)), $((14 + i % 2))]\""
        echo "${id}_1,P01,$id,31,75,close,$(((i + 1) % 3)),cup,$((20 + i % 2)),\"[$((20 + i % 2))]\""
    done
} > "$out/epic.csv"
"$gulp" ingest epic-kitchens "$out/epic.csv" "$out/videos" "$out/epic" \
    --videos-per-chunk 4 --frame-size 128 --quiet
echo "== gulp check --decode"
"$gulp" check "$out/gulp" --decode
echo "== gulp info"
"$gulp" info "$out/gulp"
echo "== gulp dump-meta --id 1000 --no-frame-info"
"$gulp" dump-meta "$out/gulp" --id 1000 --no-frame-info
echo
echo "== gulp extract --id 1000 --frames ::8"
"$gulp" extract "$out/gulp" --id 1000 --frames ::8 --out "$out/extract"
ls "$out/extract/1000"
echo "== gulp bench"
"$gulp" bench "$out/gulp"
echo "== gulpio2 reads the same directory"
"$root/.venv/bin/python" - "$out/gulp" <<'PY'
import sys
from gulpio2 import GulpDirectory
gd = GulpDirectory(sys.argv[1])
ids = sorted(gd.merged_meta_dict)
frames, meta = gd["1000", ::8]
print(f"gulpio2 reads {len(ids)} items in {len(gd.all_meta_dicts)} chunks; "
      f"item 1000 has {len(gd.merged_meta_dict['1000']['frame_info'])} frames, "
      f"every 8th: {len(frames)} arrays of shape {frames[0].shape}; meta {meta}")
PY
echo "== the gulp Python package reads it"
"$root/.venv/bin/python" - "$out/gulp" <<'PY'
import sys
import gulp
gd = gulp.GulpDirectory(sys.argv[1])
frames, meta = gd["1000", ::8]
small = gd.read("1000", [0], scale="1/2")[0]
raw = gd.raw("1000")
print(f"gulp (Python) reads {len(gd)} items in {gd.num_chunks} chunks; item 1000: "
      f"every 8th frame: {len(frames)} arrays of shape {frames[0].shape}, at 1/2 scale "
      f"{small.shape}, {len(raw)} raw JPEGs ({sum(map(len, raw)) / 1e3:.0f} kB, zero-copy); "
      f"meta {meta}; check: {gulp.check(sys.argv[1])}")
loader = gulp.ClipLoader(sys.argv[1], frames=8, resize=112, size=96, batch_size=4, seed=0)
batch = next(iter(loader))
print(f"gulp.ClipLoader: batches of {tuple(batch.frames.shape)} uint8 frames, labels {batch.labels.tolist()}")
PY
step "sample directory gulped, checked and read: $out/gulp"
