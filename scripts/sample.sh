#!/usr/bin/env bash
# Makes a small sample dataset with ffmpeg (clips as folders of JPEG frames),
# gulps it, reads and decodes it back with gulp, and opens the JSON-meta
# chunks with the real gulpio2 to show they are compatible.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/deps.sh
out="$root/sample"
rm -rf "$out"
mkdir -p "$out/frames"
patterns=(testsrc smptebars rgbtestsrc mandelbrot)
for i in 0 1 2 3 4 5; do
    clip="$out/frames/clip_$i"
    mkdir -p "$clip"
    ffmpeg -loglevel error -f lavfi -i "${patterns[$((i % 4))]}=size=160x120:rate=8" -t 2 -q:v 3 "$clip/%04d.jpg"
done
cargo run --release -q -p gulp-io --example sample -- "$out/frames" "$out/gulp"
# gulpio2 reads JSON meta only: show it the JSON chunks (even numbers).
mkdir -p "$out/gulpio2-view"
for meta in "$out"/gulp/meta_*.gmeta; do
    n="${meta##*meta_}"; n="${n%.gmeta}"
    if [ $((n % 2)) -eq 0 ]; then
        ln -sf "$out/gulp/data_$n.gulp" "$out/gulpio2-view/data_$n.gulp"
        ln -sf "$meta" "$out/gulpio2-view/meta_$n.gmeta"
    fi
done
"$root/.venv/bin/python" - "$out/gulpio2-view" <<'PY'
import sys
from gulpio2 import GulpDirectory
gd = GulpDirectory(sys.argv[1])
ids = sorted(gd.merged_meta_dict)
frames, meta = gd[ids[0]]
print(f"gulpio2 reads {len(ids)} items: {ids}; {ids[0]} has {len(frames)} frames of shape {frames[0].shape}, meta {meta}")
PY
echo "sample gulp directory: $out/gulp"
