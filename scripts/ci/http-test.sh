#!/usr/bin/env bash
# Gulp directories on a real static web server (nginx on loopback,
# scripts/env/nginx.sh), which lists no folder, as a CDN or the Hugging Face
# hub does not: a directory at http://HOST/PATH reads as the local copy does
# (dump-meta, check --decode, extract, Python's GulpDirectory and ClipLoader:
# the same bytes and the same pixels), found by asking for its chunks in
# turn or from its index file, also behind the hub's redirect to another
# path; `gulp copy` brings it back; changing it is refused; a server
# answering 503 is retried and then named; plain http off loopback is
# refused. Part of scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
log() { echo "http-test.sh: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }

cargo build --release -q -p gulp-cli
target="${CARGO_TARGET_DIR:-$root/target}"
GULP="$target/release/gulp"
PY="$root/.venv/bin/python"

state="$(mktemp -d /tmp/gulp-http.XXXXXX)"
# nginx's workers (an unprivileged user) read under it.
chmod a+rx "$state"
trap 'scripts/env/nginx.sh stop "$state/nginx"; rm -rf "$state"' EXIT
env_text="$(scripts/env/nginx.sh start "$state/nginx")" || fail "nginx did not start"
eval "$env_text"
www="$state/nginx/www"
log "nginx up on $GULP_HTTP_URL"

# 8 items of 6 real frames in 3 chunks, served as they are (no index file)
# and, with an index file, under /cdn/, reached by /resolve/main/.
data="$state/data"
mkdir -p "$data/frames"
: >"$data/list.csv"
for i in $(seq 0 7); do
    mkdir -p "$data/frames/v$i"
    ffmpeg -nostdin -loglevel error -f lavfi -i "testsrc2=size=160x120:rate=10,hue=h=$((i * 40))" \
        -frames:v 6 -q:v 3 "$data/frames/v$i/%03d.jpg"
    echo "v$i;label$((i % 2))" >>"$data/list.csv"
done
local_dir="$state/local"
"$GULP" ingest 20bn-csv-jpeg "$data/list.csv" "$data/frames" "$local_dir" --videos-per-chunk 3 --quiet 2>/dev/null
"$GULP" copy -q "$local_dir" "$www/datasets/small" >/dev/null
"$GULP" copy -q "$local_dir" "$www/cdn/indexed" >/dev/null
"$GULP" index "$www/cdn/indexed" >/dev/null
chmod -R a+rX "$www"
plain="$GULP_HTTP_URL/datasets/small"
hub="$GULP_HTTP_URL/resolve/main/indexed"

requests() { wc -l <"$state/nginx/access.log"; }
for url in "$plain" "$hub"; do
    before="$(requests)"
    cmp <("$GULP" dump-meta "$local_dir") <("$GULP" dump-meta "$url") || fail "dump-meta of $url differs"
    log "dump-meta $url: identical to the local copy ($(($(requests) - before)) requests)"
done
grep -q '"GET /resolve/main/indexed/meta_0.gmeta HTTP/1.1" 302' "$state/nginx/access.log" \
    || fail "the hub's URLs were not redirected"
counts='import json,sys; r=json.load(sys.stdin); print(r["chunks"], r["items"], r["frames"], r["bytes"], r["decoded"], len(r["problems"]))'
here="$("$GULP" check --decode --json "$local_dir" | "$PY" -c "$counts")"
for url in "$plain" "$hub"; do
    there="$("$GULP" check --decode --json "$url" | "$PY" -c "$counts")"
    [ "$here" = "$there" ] || fail "check --decode $url: $there, locally $here"
done
"$GULP" extract "$local_dir" --id v4 --out "$state/x-local" >/dev/null
"$GULP" extract "$hub" --id v4 --out "$state/x-web" >/dev/null
diff -r "$state/x-local" "$state/x-web" >/dev/null || fail "extract differs"
log "check --decode ($here: chunks items frames bytes decoded problems) and extract: as the local copy"

# Python: the same frames by id, and the same batches of pixels from the
# loader (same seed), as from the local copy.
"$PY" - "$local_dir" "$plain" "$hub" <<'PY'
import sys

import numpy as np

import gulp

local, *urls = sys.argv[1:]
here = gulp.GulpDirectory(local)
for url in urls:
    there = gulp.GulpDirectory(url)
    assert sorted(there.merged_meta_dict) == sorted(here.merged_meta_dict), url
    for id in ["v0", "v5", "v7"]:
        a, meta_a = here[id]
        b, meta_b = there[id]
        assert meta_a == meta_b and len(a) == len(b), id
        assert all(np.array_equal(x, y) for x, y in zip(a, b)), id
    options = dict(frames=4, batch_size=4, size=64, resize=80, seed=3, threads=2)
    for x, y in zip(gulp.ClipLoader(local, **options), gulp.ClipLoader(url, **options)):
        assert list(x.ids) == list(y.ids) and np.array_equal(x.frames, y.frames), url
print("python: GulpDirectory and ClipLoader give the local copy's pixels", file=sys.stderr)
PY

# Back to a folder, byte for byte (checked by size: nginx's tags are no MD5).
"$GULP" copy -q "$hub" "$state/back" >/dev/null
for f in "$www/cdn/indexed"/*; do
    case "$f" in *.lock) continue ;; esac
    cmp "$f" "$state/back/$(basename "$f")" || fail "gulp copy from the web: $(basename "$f") differs"
done
"$GULP" check --decode "$state/back" >/dev/null || fail "the copy from the web does not check clean"
log "gulp copy from the web: every file byte for byte, checks clean"

# Changing a directory on a web server is refused, naming the URL.
if out="$("$GULP" convert "$plain" --to msgpack 2>&1)"; then fail "convert of a web directory succeeded"; fi
grep -q "datasets/small/meta_0.gmeta: a directory on a web server is read only" <<<"$out" || fail "convert: $out"
# A server answering 503 is retried, then named with the URL (exit 2).
set +e
out="$(GULP_S3_RETRIES=2 "$GULP" info "$GULP_HTTP_URL/broken/small" 2>&1)"
code=$?
set -e
[ "$code" = 2 ] || fail "a 503 server: exit $code"
grep -q "/broken/small/.*503 Service Unavailable" <<<"$out" && grep -q "after 2 retries" <<<"$out" \
    || fail "a 503 server: $out"
# A chunk gone from the server mid-epoch: the loader stops, naming its URL.
"$PY" - "$plain" "$www/datasets/small" <<'PY'
import os, sys

import gulp

url, folder = sys.argv[1:]
loader = gulp.ClipLoader(url, frames=2, batch_size=2, size=32, resize=40, threads=1, shuffle=False)
batches = iter(loader)
next(batches)
os.rename(os.path.join(folder, "data_2.gulp"), os.path.join(folder, "gone.gulp"))
try:
    for _ in batches:
        pass
except OSError as e:
    assert "/datasets/small/data_2.gulp" in str(e), e
else:
    raise AssertionError("the loader went on without chunk 2's data")
finally:
    os.rename(os.path.join(folder, "gone.gulp"), os.path.join(folder, "data_2.gulp"))
PY
# Plain http off loopback is refused before connecting.
if out="$("$GULP" info http://gulp-test.invalid/data 2>&1)"; then fail "plain http off loopback was read"; fi
grep -q "plain http:// is refused off loopback" <<<"$out" || fail "plain http: $out"
log "read only, a 503 retried then named, a chunk gone mid-epoch named, plain http off loopback refused"
