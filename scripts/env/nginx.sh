#!/usr/bin/env bash
# A real static web server on loopback for the tests: Debian's nginx-light
# (installed with apt-get when missing), run in the foreground by this
# script, never as the system's service.
#
#   eval "$(scripts/env/nginx.sh start STATE_DIR)"   # serves STATE_DIR/www; exports GULP_HTTP_URL
#   scripts/env/nginx.sh stop STATE_DIR
#
# Like a CDN or the Hugging Face hub it lists no folder (autoindex off:
# 403), answers range requests with 206, and `/resolve/main/PATH` answers
# 302 to `/cdn/PATH` (the hub's redirect to its CDN). `/broken/` answers 503
# to everything. The access log is STATE_DIR/access.log.
set -euo pipefail
log() { echo "nginx.sh: $*" >&2; }

install() {
    if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
        log "installing nginx-light with apt-get"
        sudo_cmd=""
        if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
        $sudo_cmd apt-get update -qq
        # The package's own service is not used (and may fail to start).
        DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq nginx-light >/dev/null || true
    fi
    local bin
    bin="$(command -v nginx || echo /usr/sbin/nginx)"
    [ -x "$bin" ] || { log "nginx is still missing"; exit 1; }
    echo "$bin"
}

case "${1:-}" in
start)
    state="${2:?state directory}"
    nginx="$(install)"
    mkdir -p "$state/www" "$state/tmp"
    # nginx's workers run as an unprivileged user when started by root: the
    # served tree must be readable by others (mktemp -d makes it 0700).
    chmod a+rx "$state" "$state/www"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    cat >"$state/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $state/nginx.pid;
error_log $state/error.log;
events {}
http {
    access_log $state/access.log;
    client_body_temp_path $state/tmp/body;
    proxy_temp_path $state/tmp/proxy;
    fastcgi_temp_path $state/tmp/fastcgi;
    uwsgi_temp_path $state/tmp/uwsgi;
    scgi_temp_path $state/tmp/scgi;
    types { application/octet-stream gulp gmeta bin; application/json json; }
    server {
        listen 127.0.0.1:$port;
        root $state/www;
        autoindex off;
        location /resolve/main/ { rewrite ^/resolve/main/(.*)\$ /cdn/\$1 redirect; }
        location /broken/ { return 503; }
    }
}
CONF
    "$nginx" -c "$state/nginx.conf" >"$state/server.log" 2>&1 &
    echo $! >"$state/server.pid"
    for _ in $(seq 50); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
            echo "export GULP_HTTP_URL=http://127.0.0.1:$port"
            exit 0
        fi
        kill -0 "$(cat "$state/server.pid")" 2>/dev/null || break
        sleep 0.1
    done
    log "nginx did not start: $(cat "$state/error.log" "$state/server.log" 2>/dev/null)"
    exit 1
    ;;
stop)
    state="${2:?state directory}"
    if [ -f "$state/server.pid" ]; then
        kill "$(cat "$state/server.pid")" 2>/dev/null || true
        rm -f "$state/server.pid"
    fi
    ;;
*)
    echo "usage: $0 start|stop STATE_DIR" >&2
    exit 2
    ;;
esac
