#!/usr/bin/env bash
# A real S3-compatible server on loopback for the tests: Garage, built from
# crates.io once (about 10 minutes on 2 idle cores) into $GULP_TOOLS (default
# ~/.cache/gulp-tools) and reused by every clone.
#
#   scripts/env/garage.sh install        # build it if missing; prints the binary's path
#   eval "$(scripts/env/garage.sh start STATE_DIR)"   # start it; exports AWS_* and GULP_S3_BUCKET
#   scripts/env/garage.sh stop STATE_DIR
#
# GULP_GARAGE_BLOCK_SIZE=BYTES sets Garage's block_size (its default: 1 MiB).
# Garage reads, checks and copies a whole block for each range request, so
# the block size sets its work per frame read (scripts/bench/bench_s3.py).
set -euo pipefail
tools="${GULP_TOOLS:-$HOME/.cache/gulp-tools}"
garage="$tools/garage/bin/garage"
log() { echo "garage.sh: $*" >&2; }

install() {
    if [ ! -x "$garage" ]; then
        log "building Garage from crates.io into $tools/garage (about 10 minutes on 2 idle cores, once)"
        cargo install garage --locked --no-default-features --features bundled-libs,sqlite \
            --root "$tools/garage" -q >&2
    fi
    echo "$garage"
}

case "${1:-}" in
install) install ;;
start)
    state="${2:?state directory}"
    install >/dev/null
    mkdir -p "$state/meta" "$state/data"
    # Free ports on loopback, so that several servers (test runs) can run.
    read -r s3 rpc admin < <(python3 -c 'import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in ss))')
    cat >"$state/garage.toml" <<CONF
metadata_dir = "$state/meta"
data_dir = "$state/data"
db_engine = "sqlite"
replication_factor = 1
${GULP_GARAGE_BLOCK_SIZE:+block_size = $GULP_GARAGE_BLOCK_SIZE}
rpc_bind_addr = "127.0.0.1:$rpc"
rpc_public_addr = "127.0.0.1:$rpc"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:$s3"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "127.0.0.1:$admin"
CONF
    RUST_LOG=warn "$garage" -c "$state/garage.toml" server >"$state/server.log" 2>&1 &
    echo $! >"$state/garage.pid"
    g() { RUST_LOG=warn "$garage" -c "$state/garage.toml" "$@"; }
    for _ in $(seq 50); do
        kill -0 "$(cat "$state/garage.pid")" 2>/dev/null || break
        g status >/dev/null 2>&1 && break
        sleep 0.2
    done
    node="$(g node id -q 2>/dev/null | cut -d@ -f1)"
    if [ -z "$node" ] || ! kill -0 "$(cat "$state/garage.pid")" 2>/dev/null; then
        log "Garage did not start:"
        tail -20 "$state/server.log" >&2
        exit 1
    fi
    g layout assign -z dc1 -c 1G "$node" >/dev/null
    g layout apply --version 1 >/dev/null
    g bucket create gulp-test >/dev/null
    keys="$(g key create gulp-test-key)"
    id="$(awk '/Key ID/ {print $NF}' <<<"$keys")"
    secret="$(awk '/Secret key/ {print $NF}' <<<"$keys")"
    g bucket allow --read --write --owner gulp-test --key gulp-test-key >/dev/null
    cat <<ENV
export AWS_ACCESS_KEY_ID=$id
export AWS_SECRET_ACCESS_KEY=$secret
export AWS_REGION=garage
export AWS_ENDPOINT_URL=http://127.0.0.1:$s3
export AWS_ALLOW_HTTP=true
export GULP_S3_BUCKET=gulp-test
ENV
    ;;
stop)
    state="${2:?state directory}"
    [ -f "$state/garage.pid" ] && kill "$(cat "$state/garage.pid")" 2>/dev/null || true
    ;;
*) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 2 ;;
esac
