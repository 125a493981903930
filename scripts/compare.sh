#!/usr/bin/env bash
# gulp vs gulpio2 in one run, on the same files and with the same number of
# workers, and a table of the two with ratios and targets (docs/benchmarks.md,
# "Comparison: gulp vs gulpio2").
#
#   scripts/compare.sh
#
# Steps (each prints its wall time; the total is in the report):
#   1. scripts/env/deps.sh (ffmpeg, cmake and nasm, the .venv with gulpio2; not
#      cargo-nextest) and scripts/bench/bench-corpus.sh (real media, built once);
#   2. release builds of gulp, default (libjpeg-turbo built in) and pure Rust
#      (--no-default-features: zune-jpeg, jpeg-encoder), plus the
#      make_bench_dir, open_phases and bare_turbo examples, all in
#      target/compare (target/release is left alone); the two binaries are
#      copied to target/compare/bin/ as gulp-default and gulp-pure;
#   3. ingest (scripts/bench/bench_gulpio2_ingest.py, nproc workers, the same items
#      per chunk): JPEG folders, videos at 8 fps, at 8 fps and short edge 256,
#      an image folder; gulpio2 and the default build, then the pure-Rust
#      build alone; per task and side, timed runs without the memory sampler
#      (speed: the fastest), then one run with it (peak memory);
#   4a. decoding real frames: gulpio2 ingests the videos at 8 fps once
#      (target/compare/real-8fps, kept); on it, `gulp bench` on 1 thread
#      (full size, --dct-scale 1/2, --region 224,224, --codec zune), on 2 threads,
#      the bare_turbo example (a bare libjpeg-turbo loop over the frames in
#      memory, full and 1/2) and bench_gulpio2_io.py bench-real (gulpio2's
#      GulpDirectory[id] read + decode); the best of 3 runs each;
#   4b. reads on directories made by make_bench_dir (read-2000x8 and 200,000
#      items in JSON and msgpack meta, ~1.7 GB in all, kept in
#      target/compare/bench-dirs for the next run): `gulp bench` raw, decode
#      on 1 thread and on all, the open_phases example's GulpDirectory::open;
#      scripts/bench/bench_gulpio2_io.py bench on the same directories;
#   4c. the mixed-shapes set (bench-corpus/mixed: 10 real clips of 68-795
#      frames, 160x120 to 1280x720): gulpio2 ingests it once at 25 fps, one
#      item per chunk (target/compare/mixed-src, kept), and
#      scripts/bench/mixed_dirs.py links it into per-class directories
#      (target/compare/mixed/<class>, <class>-x);
#   4d. the Python package against gulpio2 from Python
#      (scripts/bench/bench_python.py: open of 200,000 items x 30 frames, gd[id]
#      on the real frames, raw frames, and gd[id] with peak memory per
#      class of the mixed set), each figure in a fresh interpreter;
#   4e. the clip loader (scripts/bench/bench_loader.py) against gulpio2 + PIL,
#      decord and the codec limits on the real frames, then per class of the
#      mixed set (--mixed);
#   5. the table (scripts/bench/compare_report.py), printed and written to
#      bench-corpus/results/compare-DATE.md; the raw figures are in
#      bench-corpus/results/compare-DATE/.
#
# Environment: COMPARE_WORKERS (default nproc), COMPARE_INGEST_REPEAT (2),
# COMPARE_SHORT_REPEAT (5: runs per side of the JPEG-folder and image-folder
# tasks, whose gulp runs take 0.1-0.4 s and move most with the load),
# COMPARE_SKIP_PURE_BUILD_INGEST=1 skips the pure-Rust build's ingest runs.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
case "${1:-}" in
    "") ;;
    -h | --help) sed -n '2,42p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "compare.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

WORKERS="${COMPARE_WORKERS:-$(nproc)}"
REPEAT="${COMPARE_INGEST_REPEAT:-2}"
SHORT_REPEAT="${COMPARE_SHORT_REPEAT:-5}"
CT="$REPO/target/compare"
BIN="$CT/bin"
DIRS="$CT/bench-dirs"
DATE="$(date +%F)"
RESULTS="$REPO/bench-corpus/results"
RES="$RESULTS/compare-$DATE"
PY="$REPO/.venv/bin/python"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
T_ALL=$SECONDS
declare -A PHASE
log() { echo "compare.sh: $*" >&2; }
phase_start() { T_PHASE=$SECONDS; log "== $1"; }
phase_end() { PHASE[$1]=$((SECONDS - T_PHASE)); log "== $1 took ${PHASE[$1]} s"; }

phase_start setup
GULP_DEPS_NO_NEXTEST=1 scripts/env/deps.sh
scripts/bench/bench-corpus.sh
phase_end setup

phase_start build
mkdir -p "$BIN"
cargo build --release -q -p gulp-cli --no-default-features --target-dir "$CT"
cp "$CT/release/gulp" "$BIN/gulp-pure"
cargo build --release -q -p gulp-cli --target-dir "$CT"
cp "$CT/release/gulp" "$BIN/gulp-default"
cargo build --release -q -p gulp-io --example make_bench_dir --example open_phases \
    --example bare_turbo --target-dir "$CT"
phase_end build

rm -rf "$RES"
mkdir -p "$RES"

phase_start ingest
ingest() {
    "$PY" scripts/bench/bench_gulpio2_ingest.py --num-workers "$WORKERS" --repeat "$REPEAT" --repeat-short "$SHORT_REPEAT" \
        --tasks csv-jpeg,json-8fps,json-8fps-256,image-folder \
        --gulp-chunk-option=--videos-per-chunk --work-dir "$CT/ingest-out" "$@"
}
ingest --gulp-bin "$BIN/gulp-default" --json-out "$RES/ingest-default.jsonl" >"$RES/ingest-default.out" ||
    log "some ingest runs FAILED (see $RES/ingest-default.out); the table leaves them out"
tail -n 20 "$RES/ingest-default.out" >&2
if [ -z "${COMPARE_SKIP_PURE_BUILD_INGEST:-}" ]; then
    ingest --skip-gulpio2 --gulp-bin "$BIN/gulp-pure" --json-out "$RES/ingest-pure.jsonl" \
        >"$RES/ingest-pure.out" ||
        log "some ingest runs FAILED (see $RES/ingest-pure.out); the table leaves them out"
    tail -n 8 "$RES/ingest-pure.out" >&2
fi
phase_end ingest

phase_start decode-real
REAL="$CT/real-8fps"
if [ ! -f "$REAL.done" ]; then
    rm -rf "$REAL" "$CT/real-work"
    "$PY" scripts/bench/bench_gulpio2_ingest.py --num-workers "$WORKERS" --repeat 1 --memory-runs 0 \
        --tasks json-8fps --keep --work-dir "$CT/real-work" >"$RES/real-ingest.out"
    mv "$CT/real-work/gulpio2-json-8fps" "$REAL"
    rm -rf "$CT/real-work"
    touch "$REAL.done"
fi
cat "$REAL"/* >/dev/null # warm the page cache
for i in 1 2 3; do
    "$BIN/gulp-default" bench "$REAL" --threads 1 --json >>"$RES/real-gulp-1.json"
    "$BIN/gulp-default" bench "$REAL" --threads 1 --dct-scale 1/2 --json >>"$RES/real-gulp-1-half.json"
    "$BIN/gulp-default" bench "$REAL" --threads 1 --region 224,224 --json >>"$RES/real-gulp-1-crop.json"
    "$BIN/gulp-default" bench "$REAL" --threads 1 --codec zune --json >>"$RES/real-gulp-1-zune.json"
    "$BIN/gulp-default" bench "$REAL" --threads 2 --json >>"$RES/real-gulp-2.json"
    "$BIN/gulp-default" bench "$REAL" --threads 2 --dct-scale 1/2 --json >>"$RES/real-gulp-2-half.json"
done
"$CT/release/examples/bare_turbo" "$REAL" --passes 3 --json | tee "$RES/real-bare.json" >&2
"$CT/release/examples/bare_turbo" "$REAL" --passes 3 --scale 1/2 --json | tee "$RES/real-bare-half.json" >&2
"$PY" scripts/bench/bench_gulpio2_io.py bench-real --dir "$REAL" --json | tee "$RES/real-gulpio2.json" >&2
phase_end decode-real

phase_start bench-dirs
make_dir() { # name, make_bench_dir arguments...
    local name="$1"
    shift
    [ -f "$DIRS/$name.done" ] && return 0
    rm -rf "${DIRS:?}/$name"
    mkdir -p "$DIRS"
    "$CT/release/examples/make_bench_dir" "$DIRS/$name" "$@"
    touch "$DIRS/$name.done"
}
make_dir read-2000x8 --items 2000 --chunks 4 --frames-per-item 8 --meta-format json
# For the Python package's open figure: 200,000 items x 30 frames (2.1 GB).
make_dir open-200k-30-json --items 200000 --chunks 200 --frames-per-item 30 --meta-format json \
    --jpeg crates/gulp-io/tests/data/black-gray-8x8.jpg
for f in json msgpack; do
    make_dir "open-200k-$f" --items 200000 --chunks 200 --frames-per-item 4 --meta-format "$f" \
        --jpeg crates/gulp-io/tests/data/noise-24x16.jpg
done
phase_end bench-dirs

phase_start reads
cat "$DIRS"/read-2000x8/* >/dev/null # warm the page cache
for i in 1 2 3; do
    "$BIN/gulp-default" bench "$DIRS/read-2000x8" --raw --json >>"$RES/gulp-raw.json"
    "$BIN/gulp-default" bench "$DIRS/read-2000x8" --threads 1 --json >>"$RES/gulp-decode-1.json"
    "$BIN/gulp-default" bench "$DIRS/read-2000x8" --json >>"$RES/gulp-decode-all.json"
done
for f in json msgpack; do
    cat "$DIRS/open-200k-$f"/*.gmeta >/dev/null
    "$CT/release/examples/open_phases" "$DIRS/open-200k-$f" --runs 5 | tee "$RES/open-$f.txt" >&2
done
"$PY" scripts/bench/bench_gulpio2_io.py bench --dirs "$DIRS" --json | tee "$RES/gulpio2-io.json" >&2
phase_end reads

phase_start mixed
MIXED_SRC="$CT/mixed-src"
if [ ! -f "$MIXED_SRC.done" ]; then
    rm -rf "$MIXED_SRC"
    "$REPO/.venv/bin/gulp2_20bn_json_videos" bench-corpus/mixed/videos.json bench-corpus/mixed/videos/ \
        "$MIXED_SRC" --frame_rate 25 --num_workers "$WORKERS" --videos_per_chunk 1 >"$RES/mixed-ingest.out" 2>&1
    touch "$MIXED_SRC.done"
fi
"$PY" scripts/bench/mixed_dirs.py "$MIXED_SRC" "$CT/mixed" --classes bench-corpus/mixed >&2
phase_end mixed

phase_start python
scripts/python-package.sh
"$PY" scripts/bench/bench_python.py --real "$REAL" --open "$DIRS/open-200k-30-json" --mixed "$CT/mixed" --json |
    tee "$RES/python.json" >&2
phase_end python

phase_start loader
"$PY" scripts/bench/bench_loader.py --real "$REAL" --json "$RES/loader.json" | tee "$RES/loader.md" >&2
"$PY" scripts/bench/bench_loader.py --mixed "$CT/mixed" --json "$RES/loader-mixed.json" | tee "$RES/loader-mixed.md" >&2
phase_end loader

LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
TOTAL=$((SECONDS - T_ALL))
phases_json="$(for k in setup build ingest decode-real bench-dirs reads mixed python loader; do printf '"%s": %s,' "$k" "${PHASE[$k]}"; done)"
"$PY" - "$RES/meta.json" <<EOF
import json, os, platform, subprocess, sys
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
from importlib.metadata import version
json.dump({
    "date": "$DATE", "nproc": os.cpu_count(), "cpu": cpu,
    "mem_gib": round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30, 1),
    "kernel": "Linux " + platform.release(), "gulpio2": version("gulpio2"),
    "commit": subprocess.run(["git", "-C", "$REPO", "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "?",
    "workers": $WORKERS, "ingest_repeat": $REPEAT, "short_repeat": $SHORT_REPEAT, "load_start": "$LOAD_START", "load_end": "$LOAD_END",
    "total_s": $TOTAL, "phases": {${phases_json%,}},
}, open(sys.argv[1], "w"), indent=1)
EOF
"$PY" scripts/bench/compare_report.py "$RES" "$RESULTS/compare-$DATE.md"
log "report: $RESULTS/compare-$DATE.md (raw figures in $RES/); total $TOTAL s"
