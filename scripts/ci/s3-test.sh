#!/usr/bin/env bash
# Gulp directories in a real S3-compatible server (Garage on loopback, built
# once by scripts/env/garage.sh): a directory uploaded to a bucket reads as the
# local copy does (`gulp dump-meta`, `extract`, `bench`, the loader, Python's
# GulpDirectory, gulp serve), the loader needs at most 2 requests per clip of
# consecutive frames, keys in a credentials file under AWS_PROFILE work
# (scripts/ci/s3_credentials_test.sh), and wrong credentials, a missing bucket, an
# unreachable endpoint, a plain-HTTP endpoint without AWS_ALLOW_HTTP and a
# truncated object are clear errors naming the
# URL (exit 2, no panic). Part of scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
log() { echo "s3-test.sh: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

cargo build --release -q -p gulp-cli
cargo build --release -q -p gulp-store --example s3_put
target="${CARGO_TARGET_DIR:-$root/target}"
GULP="$target/release/gulp"
PUT="$target/release/examples/s3_put"

state="$(mktemp -d /tmp/gulp-s3.XXXXXX)"
trap 'scripts/env/garage.sh stop "$state/garage"; rm -rf "$state"' EXIT
env_text="$(scripts/env/garage.sh start "$state/garage")" || fail "Garage did not start"
eval "$env_text"
log "Garage up on $AWS_ENDPOINT_URL, bucket $GULP_S3_BUCKET"

# A directory of real frames: 8 items of 6 frames in 3 chunks.
data="$state/data"
mkdir -p "$data/frames"
: >"$data/list.csv"
: >"$data/list16.csv"
for i in $(seq 0 15); do
    mkdir -p "$data/frames/v$i"
    ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=160x120:rate=10,hue=h=$((i * 20))" \
        -frames:v 6 -q:v 3 "$data/frames/v$i/%03d.jpg"
    [ "$i" -lt 8 ] && echo "v$i;label$((i % 2))" >>"$data/list.csv"
    echo "v$i;label$((i % 2))" >>"$data/list16.csv"
done
local_dir="$state/local"
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$local_dir" --videos-per-chunk 3 --quiet 2>/dev/null
url="s3://$GULP_S3_BUCKET/datasets/small"
"$PUT" "$local_dir" "$url"

# Same results as the local copy.
cmp <("$GULP" dump-meta "$local_dir") <("$GULP" dump-meta "$url") || fail "dump-meta differs"
"$GULP" extract "$local_dir" --id v4 --out "$state/x-local" >/dev/null
"$GULP" extract "$url" --id v4 --out "$state/x-remote" >/dev/null
diff -r "$state/x-local" "$state/x-remote" >/dev/null || fail "extract differs"
"$GULP" extract "$url" --id v7 --frames ::2 --decode png --out "$state/x-png" >/dev/null
[ "$(ls "$state/x-png/v7" | wc -l)" = 3 ] || fail "extract --frames ::2 --decode png"
counts='import json,sys; r=json.load(sys.stdin); print(r["chunks"], r["items"], r["frames"], r["bytes"], r["decoded"], len(r["problems"]))'
here="$("$GULP" check --decode --json "$local_dir" | "$root/.venv/bin/python" -c "$counts")"
there="$("$GULP" check --decode --json "$url" | "$root/.venv/bin/python" -c "$counts")"
[ "$here" = "$there" ] || fail "check --decode: $there, locally $here"
"$GULP" info "$url" | grep -q "labels      2 (label2idx.json)" || fail "info does not read the bucket's labels"
log "dump-meta, extract and check --decode ($there: chunks items frames bytes decoded problems): identical to the local copy"

# gulp copy: the folder to the bucket and back, byte for byte, checked by
# the objects' MD5 tags; a second run copies nothing. A chunk of 21 MB goes
# up in parts (its multipart tag is matched too). A copy to the bucket killed
# after its first file finishes when run again: every id once.
copy_url="s3://$GULP_S3_BUCKET/datasets/copied"
"$GULP" copy -q "$local_dir" "$copy_url" >/dev/null
"$GULP" copy -q "$copy_url" "$state/back" >/dev/null
for f in "$local_dir"/*; do
    case "$(basename "$f")" in .gulp-tmp.* | *.lock) continue ;; esac
    cmp "$f" "$state/back/$(basename "$f")" || fail "gulp copy: $(basename "$f") differs after the round trip"
done
n_files="$(ls "$local_dir" | grep -vc '\.lock$')"
"$GULP" copy -q "$local_dir" "$copy_url" | grep -q "0 file(s) copied (0 B), $n_files already there" \
    || fail "gulp copy to the bucket again copied something"
"$GULP" copy -q "$copy_url" "$state/back" | grep -q "0 file(s) copied (0 B), $n_files already there" \
    || fail "gulp copy from the bucket again copied something"
cargo build --release -q -p gulp-io --example make_bench_dir
"$target/release/examples/make_bench_dir" "$state/big" --items 3000 --chunks 1 --frames-per-item 1 >/dev/null
big_url="s3://$GULP_S3_BUCKET/datasets/big"
"$GULP" copy -q "$state/big" "$big_url" | grep -q "2 file(s) copied" || fail "gulp copy of a 21 MB chunk"
"$GULP" copy -q "$state/big" "$big_url" | grep -q "0 file(s) copied (0 B), 2 already there" \
    || fail "the multipart tag of a 21 MB chunk did not match"
"$GULP" ingest 20bn-csv-jpeg "$data/list16.csv" "$data/frames" "$state/many" --videos-per-chunk 1 --quiet 2>/dev/null
many_url="s3://$GULP_S3_BUCKET/datasets/many"
"$root/.venv/bin/python" - "$GULP" "$state/many" "$many_url" <<'PY'
import subprocess, sys

gulp, src, dst = sys.argv[1:]
copy = subprocess.Popen([gulp, "copy", src, dst], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
first = copy.stderr.readline()
assert "data_0.gulp" in first, first
copy.kill()
assert copy.wait() == -9, "the copy ended before it was killed"
PY
"$GULP" copy -q "$state/many" "$many_url" | grep -q "already there" || fail "the rerun found nothing of the killed copy"
"$GULP" check --decode "$many_url" >/dev/null || fail "gulp check --decode after a killed copy finished"
[ "$("$GULP" info --json "$many_url" | "$root/.venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["items"])')" = 16 ] \
    || fail "the finished copy has not every id once"
log "gulp copy: to the bucket and back byte for byte, nothing copied twice, a 21 MB multipart chunk matched by its tag, a killed copy finished"

# Credentials as the AWS tools find them: a profile in ~/.aws/credentials.
scripts/ci/s3_credentials_test.sh "$GULP" "$url"

# gulp serve with the bucket and the local copy side by side: the same
# numbers, the same thumbnails and frames, the item linked across.
"$root/.venv/bin/python" - "$GULP" "$url" "$local_dir" v4 6 8 <<'PY'
import re, subprocess, sys, urllib.request

gulp, remote, local, item, frames, items = sys.argv[1:]
server = subprocess.Popen([gulp, "serve", remote, local, "--port", "0"], stdout=subprocess.PIPE, text=True)
try:
    base = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline()).group(0)

    def get(path):
        with urllib.request.urlopen(base + path, timeout=60) as answer:
            return answer.read()

    counts = re.findall(r'data-k="items" data-v="(\d+)"', get("").decode())
    assert counts == [items, items], counts
    assert f'href="/d/1/item?id={item}"' in get(f"d/0/item?id={item}").decode()
    for k in range(int(frames)):
        for kind in ("thumb", "frame"):
            there, here = get(f"d/0/{kind}?id={item}&frame={k}"), get(f"d/1/{kind}?id={item}&frame={k}")
            assert there == here, (kind, k)
    assert len(re.findall(r'class="item"', get("d/0/items?per=3&page=2").decode())) == 3
finally:
    server.terminate()
    server.wait()
print("s3-test.sh: gulp serve over S3: overview, item page, thumbnails and frames equal the local copy's")
PY

frames="$("$GULP" bench "$url" --json --threads 2 | "$root/.venv/bin/python" -c 'import json,sys; f=json.load(sys.stdin); print(f["frames"], f["failed"], round(f["frames_per_s"]))')"
read -r n failed fps <<<"$frames"
[ "$n" = 48 ] && [ "$failed" = 0 ] || fail "bench read $n frames, $failed failed"
log "gulp bench $url: $n frames, $fps frames/s"

loader="$("$GULP" bench "$url" --loader --json --threads 2 --frames 4 --sampling window --resize none \
    --size 96 --crop random --drop-last false --batch-size 4 --epochs 10)"
read -r clips rpc cps <<<"$("$root/.venv/bin/python" -c 'import json,sys; f=json.loads(sys.argv[1]); print(f["clips"], f["requests_per_clip"], round(f["clips_per_s"], 1))' "$loader")"
[ "$clips" = 80 ] || fail "the loader made $clips clips"
"$root/.venv/bin/python" -c "import sys; sys.exit(0 if $rpc <= 2 else 1)" || fail "$rpc requests per clip"
log "gulp bench --loader $url: $clips clips of 4 consecutive frames, $rpc requests per clip (listing and meta included), $cps clips/s"

"$root/scripts/python-package.sh"
"$root/.venv/bin/python" - "$local_dir" "$url" <<'PY'
import sys
import numpy as np
import gulp
here, there = gulp.GulpDirectory(sys.argv[1]), gulp.GulpDirectory(sys.argv[2])
assert there.merged_meta_dict == here.merged_meta_dict
for i in here.merged_meta_dict:
    a, ma = here[i]
    b, mb = there[i, 1:5]
    assert ma == mb and all(np.array_equal(x, y) for x, y in zip(a[1:5], b)), i
    assert [bytes(m) for m in there.raw(i)] == [bytes(m) for m in here.raw(i)], i
loader = gulp.ClipLoader(sys.argv[2], frames=4, sampling="window", resize=None, size=96,
                         crop="center", flip=False, batch_size=4, shuffle=False, threads=2)
local = gulp.ClipLoader(sys.argv[1], frames=4, sampling="window", resize=None, size=96,
                        crop="center", flip=False, batch_size=4, shuffle=False, threads=2)
for x, y in zip(loader, local):
    assert x.ids == y.ids and np.array_equal(x.frames, y.frames)
print("s3-test.sh: Python GulpDirectory and ClipLoader over S3 equal the local copy")
PY

# The node cache, one request per read, GulpChunk on a bucket, and faults
# (reset connections, slow responses, a stopped server), through a
# counting proxy.
# The loader's checks take 16 items, one per chunk.
"$GULP" ingest 20bn-csv-jpeg "$data/list16.csv" "$data/frames" "$state/one-per-chunk" --videos-per-chunk 1 --quiet 2>/dev/null
"$PUT" "$state/one-per-chunk" "s3://$GULP_S3_BUCKET/datasets/one-per-chunk"
"$root/.venv/bin/python" scripts/ci/s3_cache_test.py "$local_dir" "$url" "$GULP" "$PUT" \
    "$state/one-per-chunk" "s3://$GULP_S3_BUCKET/datasets/one-per-chunk"

# convert rewrites the meta objects; converting back gives the original bytes.
"$PUT" "$local_dir" "s3://$GULP_S3_BUCKET/datasets/convert"
"$GULP" convert "s3://$GULP_S3_BUCKET/datasets/convert" --to msgpack >/dev/null
cmp <("$GULP" dump-meta "$local_dir") <("$GULP" dump-meta "s3://$GULP_S3_BUCKET/datasets/convert") ||
    fail "dump-meta differs after convert --to msgpack"
"$GULP" check "s3://$GULP_S3_BUCKET/datasets/convert" >/dev/null || fail "check after convert"
"$GULP" convert "s3://$GULP_S3_BUCKET/datasets/convert" --to json >/dev/null
"$PUT" --get "s3://$GULP_S3_BUCKET/datasets/convert" "$state/converted"
diff -r "$local_dir" "$state/converted" >/dev/null || fail "convert to msgpack and back changed the objects"
log "convert over S3: to msgpack (dump-meta the same, check clean) and back to the original bytes"

# Ingest straight into the bucket: the same objects as a local ingest
# (with an item that fails); a re-run adds nothing.
echo "missing;label0" >>"$data/list.csv"
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/local2" --videos-per-chunk 3 --quiet 2>/dev/null
ingested="s3://$GULP_S3_BUCKET/datasets/ingested"
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$ingested" --videos-per-chunk 3 --quiet 2>/dev/null
"$PUT" --get "$ingested" "$state/fetched"
diff -r "$state/local2" "$state/fetched" >/dev/null || fail "ingest into the bucket differs from a local ingest"
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$ingested" --videos-per-chunk 3 --quiet 2>/dev/null
"$PUT" --get "$ingested" "$state/fetched2"
diff -r "$state/local2" "$state/fetched2" >/dev/null || fail "re-run changed the bucket"
log "gulp ingest into $ingested: objects byte-identical to a local ingest ($(ls "$state/fetched" | wc -l) objects)"

# Three --shard tasks at once into one prefix give the same objects.
sharded="s3://$GULP_S3_BUCKET/datasets/sharded"
for i in 0 1 2; do
    "$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$sharded" --videos-per-chunk 3 \
        --quiet --shard "$i/3" 2>/dev/null &
done
wait
"$PUT" --get "$sharded" "$state/sharded"
diff -r "$state/local2" "$state/sharded" >/dev/null || fail "3 shard tasks into the bucket differ from one run"
"$GULP" preview "$sharded" --id v2 --out "$state/remote.png" >/dev/null
"$GULP" preview "$state/local2" --id v2 --out "$state/local.png" >/dev/null
cmp -s "$state/remote.png" "$state/local.png" || fail "preview differs"
log "3 --shard tasks into $sharded: identical to one run; preview identical to the local copy's"

# gulp status on a sharded run in a bucket: task 1 of 3 never ran.
pending="s3://$GULP_S3_BUCKET/datasets/pending"
for i in 0 2; do
    "$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$pending" --videos-per-chunk 3 \
        --quiet --shard "$i/3" 2>/dev/null
done
set +e
status_out="$("$GULP" status "$pending")"
status_code=$?
set -e
[ "$status_code" = 1 ] || fail "gulp status of an unfinished run in a bucket exited $status_code"
grep -q "task 1/3: not started" <<<"$status_out" && grep -q "sbatch --array=1 " <<<"$status_out" ||
    { printf '%s\n' "$status_out" >&2; fail "gulp status does not name task 1 in the bucket"; }
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$pending" --videos-per-chunk 3 \
    --quiet --shard 1/3 2>/dev/null
"$GULP" status "$pending" --shards 3 >/dev/null || fail "gulp status after the last task"
"$PUT" --get "$pending" "$state/pending"
diff -r "$state/local2" "$state/pending" >/dev/null || fail "the completed run in the bucket differs from one run"
log "gulp status $pending: task 1/3 not started, sbatch --array=1 given; after it ran: complete, identical to one run"

# gulp merge within the bucket: two shard prefixes into one, copied on the server.
for i in 0 1; do
    "$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "s3://$GULP_S3_BUCKET/datasets/m/shard-$i" \
        --videos-per-chunk 3 --quiet --shard "$i/2" 2>/dev/null
done
merged="s3://$GULP_S3_BUCKET/datasets/m/out"
"$GULP" merge "$merged" "s3://$GULP_S3_BUCKET/datasets/m/shard-0" "s3://$GULP_S3_BUCKET/datasets/m/shard-1" >/dev/null
"$PUT" --get "$merged" "$state/merged"
diff -r "$state/local2" "$state/merged" >/dev/null || fail "merge in the bucket differs from one run"
left="$("$GULP" dump-meta "s3://$GULP_S3_BUCKET/datasets/m/shard-0" --no-frame-info 2>/dev/null || true)"
[ -z "$left" ] || [ "$left" = "{}" ] || fail "merge left chunks in a shard: $left"
expect_merge_error="$("$GULP" merge "$merged" "$state/local2" 2>&1 >/dev/null || true)"
grep -q "within one filesystem or within one bucket" <<<"$expect_merge_error" || fail "merge across a bucket and a disk: $expect_merge_error"
log "gulp merge of 2 shard prefixes in the bucket: identical to one run, the shards emptied; a bucket and a disk are refused"

# Killed while ingesting into the bucket: no half chunk is visible, and the
# re-run completes it. Frames are resized so that the run takes a while.
killed="s3://$GULP_S3_BUCKET/datasets/killed"
opts=(--videos-per-chunk 1 --frame-size 100 --num-workers 1 --quiet)
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/local3" "${opts[@]}" 2>/dev/null
start=$(date +%s%N)
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$state/timing" "${opts[@]}" 2>/dev/null
full=$(( ($(date +%s%N) - start) / 1000000 ))
# The runs stage chunks in their own temporary directory, to see what a
# killed run leaves there and that the re-run removes it.
staging_dirs() { find "$state/tmp" -mindepth 1 -maxdepth 1 -name 'gulp-staging.*' | wc -l; }
mkdir -p "$state/tmp"
for trial in 1 2 3; do
    TMPDIR="$state/tmp" "$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$killed-$trial" "${opts[@]}" 2>/dev/null &
    pid=$!
    sleep "$(awk -v ms="$full" -v t="$trial" 'BEGIN { printf "%.3f", ms * (0.2 + 0.25 * t) / 1000 }')"
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    left="$(staging_dirs)"
    visible="$("$GULP" dump-meta "$killed-$trial" --no-frame-info 2>/dev/null | "$root/.venv/bin/python" -c 'import json,sys; t=sys.stdin.read(); print(len(json.loads(t)) if t.strip() else 0)')"
    "$PUT" --get "$killed-$trial" "$state/k$trial"
    for meta in "$state/k$trial"/meta_*.gmeta; do
        [ -e "$meta" ] || continue
        name="$(basename "$meta")"
        data_name="data_${name#meta_}"; data_name="${data_name%.gmeta}.gulp"
        cmp -s "$meta" "$state/local3/$name" && cmp -s "$state/k$trial/$data_name" "$state/local3/$data_name" ||
            fail "trial $trial: committed chunk $name differs from a local ingest"
    done
    TMPDIR="$state/tmp" "$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$killed-$trial" "${opts[@]}" 2>/dev/null
    "$PUT" --get "$killed-$trial" "$state/k$trial-done"
    diff -r "$state/local3" "$state/k$trial-done" >/dev/null || fail "trial $trial: the re-run did not complete the ingest"
    [ "$(staging_dirs)" = 0 ] || fail "trial $trial: staging directories left after the re-run: $(ls -A "$state/tmp")"
    log "killed ingest into the bucket, trial $trial: $visible items visible after the kill (whole chunks only), $left staging directory left by it; the re-run completed the ingest and removed it"
    stranded=$((${stranded:-0} + left))
done
[ "$stranded" -ge 1 ] || fail "no killed run left a staging directory: the kills came too early or too late to test its removal"

# Errors: exit 2, the URL named, no panic.
expect_error() { # NAME PATTERN -- command...
    local name="$1" pattern="$2"
    shift 3
    local err
    if err="$("$@" 2>&1 >/dev/null)"; then fail "$name: succeeded"; fi
    local code=$?
    grep -q -- "$pattern" <<<"$err" || fail "$name: message lacks '$pattern': $err"
    grep -qi "panick" <<<"$err" && fail "$name: panicked: $err"
    log "$name: $(head -c 300 <<<"$err" | tr '\n' ' ')"
}
status_of() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
export GULP_S3_RETRIES=1
expect_error "wrong credentials" "$url" -- env AWS_SECRET_ACCESS_KEY=wrong "$GULP" dump-meta "$url"
[ "$(status_of env AWS_SECRET_ACCESS_KEY=wrong "$GULP" dump-meta "$url")" = 2 ] || fail "exit status"
expect_error "missing bucket" "s3://no-such-bucket/x" -- "$GULP" dump-meta "s3://no-such-bucket/x"
[ "$(status_of "$GULP" dump-meta "s3://no-such-bucket/x")" = 2 ] || fail "exit status"
expect_error "unreachable endpoint" "$url" -- env AWS_ENDPOINT_URL=http://127.0.0.1:9 "$GULP" dump-meta "$url"
# Plain HTTP only where AWS_ALLOW_HTTP allows it, whichever HTTP client.
expect_error "plain HTTP not allowed" "URL scheme is not allowed" -- env AWS_ALLOW_HTTP= "$GULP" dump-meta "$url"
expect_error "plain HTTP not allowed (reqwest)" "URL scheme is not allowed" -- \
    env AWS_ALLOW_HTTP= GULP_S3_HTTP=reqwest "$GULP" dump-meta "$url"
[ "$(status_of env AWS_ENDPOINT_URL=http://127.0.0.1:9 "$GULP" dump-meta "$url")" = 2 ] || fail "exit status"
"$PUT" "$local_dir" "s3://$GULP_S3_BUCKET/datasets/truncated" --truncate data_1.gulp:3000
expect_error "truncated object" "s3://$GULP_S3_BUCKET/datasets/truncated/data_1.gulp" -- \
    "$GULP" extract "s3://$GULP_S3_BUCKET/datasets/truncated" --id v4 --out "$state/x-trunc"
[ "$(status_of "$GULP" extract "s3://$GULP_S3_BUCKET/datasets/truncated" --id v4 --out "$state/x-t2")" = 2 ] || fail "exit status"
trunc_report="$("$GULP" check "s3://$GULP_S3_BUCKET/datasets/truncated" 2>&1)" && fail "check of a truncated object exited 0"
grep -q "s3://$GULP_S3_BUCKET/datasets/truncated/data_1.gulp" <<<"$trunc_report" || fail "check does not name the object: $trunc_report"
log "gulp check of the truncated object: exit 1, names it"
echo "s3-test.sh: passed"
