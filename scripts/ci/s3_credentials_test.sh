#!/usr/bin/env bash
# Credentials as the AWS tools find them, against the Garage that
# scripts/ci/s3-test.sh started (its variables exported):
#
#   scripts/ci/s3_credentials_test.sh GULP URL
#
# The keys only in a credentials file under a profile (HOME a temporary
# directory, no key variable set, the region from the config file) read the
# bucket; the environment's keys come before the file's; a profile that
# neither file has, and no credentials anywhere, are clear errors (exit 2)
# naming the files. AWS_EC2_METADATA_DISABLED=true throughout, and the
# metadata endpoint pointed at a listener on loopback that must see no
# connection: nothing here asks 169.254.169.254.
set -euo pipefail
gulp="${1:?gulp binary}" url="${2:?s3:// URL of a gulp directory}"
log() { echo "s3_credentials_test.sh: $*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
: "${AWS_ACCESS_KEY_ID:?} ${AWS_SECRET_ACCESS_KEY:?} ${AWS_REGION:?} ${AWS_ENDPOINT_URL:?}"

home="$(mktemp -d /tmp/gulp-creds.XXXXXX)"
trap '[ -n "${trap_pid:-}" ] && kill "$trap_pid" 2>/dev/null; rm -rf "$home"' EXIT

# The listener standing in for the metadata service: it counts connections.
python3 - "$home/metadata.port" "$home/metadata.hits" <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
__import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
hits = 0
while True:
    conn, _ = s.accept()
    hits += 1
    open(sys.argv[2], "w").write(str(hits))
    conn.close()
PY
trap_pid=$!
for _ in $(seq 50); do [ -f "$home/metadata.port" ] && break; sleep 0.1; done
metadata="http://127.0.0.1:$(cat "$home/metadata.port")"

mkdir -p "$home/.aws" "$home/elsewhere"
cat >"$home/elsewhere/credentials" <<INI
# Only the profile gulp-test holds Garage's keys.
[default]
aws_access_key_id = GKWRONGDEFAULT
aws_secret_access_key = wrong

[gulp-test]
aws_access_key_id = $AWS_ACCESS_KEY_ID
aws_secret_access_key = $AWS_SECRET_ACCESS_KEY
INI
cat >"$home/.aws/config" <<INI
[default]
region = us-east-1

[profile gulp-test]
region = $AWS_REGION
s3 =
    addressing_style = path
INI

# No credential or region variable; HOME the temporary directory.
files=(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN -u AWS_TOKEN
    -u AWS_REGION -u AWS_DEFAULT_REGION -u AWS_PROFILE -u AWS_DEFAULT_PROFILE -u AWS_CONFIG_FILE
    -u AWS_SHARED_CREDENTIALS_FILE -u AWS_WEB_IDENTITY_TOKEN_FILE -u AWS_ROLE_ARN
    -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI -u AWS_CONTAINER_CREDENTIALS_FULL_URI
    HOME="$home" AWS_EC2_METADATA_DISABLED=true AWS_METADATA_ENDPOINT="$metadata" GULP_S3_RETRIES=0)

expect_error() { # NAME PATTERN -- command...
    local name="$1" pattern="$2" err code
    shift 3
    set +e
    err="$("$@" 2>&1 >/dev/null)"
    code=$?
    set -e
    [ "$code" = 2 ] || fail "$name: exit $code, not 2: $err"
    grep -qF -- "$pattern" <<<"$err" || fail "$name: message lacks '$pattern': $err"
    grep -qi "panick" <<<"$err" && fail "$name: panicked: $err"
    log "$name: exit 2: $(head -c 400 <<<"$err" | tr '\n' ' ')"
}

# The profile's keys, from the file AWS_SHARED_CREDENTIALS_FILE names; the
# region from ~/.aws/config's [profile gulp-test].
"${files[@]}" AWS_SHARED_CREDENTIALS_FILE="$home/elsewhere/credentials" AWS_PROFILE=gulp-test \
    "$gulp" info "$url" | grep -q "labels      2" || fail "info with the profile's keys"
"${files[@]}" AWS_SHARED_CREDENTIALS_FILE="$home/elsewhere/credentials" AWS_PROFILE=gulp-test \
    "$gulp" check "$url" >/dev/null || fail "check with the profile's keys"
log "keys only in a credentials file under AWS_PROFILE=gulp-test, the region from ~/.aws/config: gulp info and gulp check read $url"

# At the default place, ~/.aws/credentials.
cp "$home/elsewhere/credentials" "$home/.aws/credentials"
"${files[@]}" AWS_PROFILE=gulp-test "$gulp" info "$url" >/dev/null || fail "info with ~/.aws/credentials"
log "the same from ~/.aws/credentials"

# The environment's keys before the profile's: the default profile's keys
# are wrong, the environment's right.
"${files[@]}" AWS_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" AWS_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
    AWS_REGION="$AWS_REGION" "$gulp" info "$url" >/dev/null || fail "the environment's keys were not used first"
expect_error "the default profile's wrong keys" "$url" -- "${files[@]}" AWS_REGION="$AWS_REGION" "$gulp" info "$url"
log "the environment's keys come before the file's"

expect_error "a profile in neither file" \
    "the profile \"nope\" (AWS_PROFILE) is in neither $home/.aws/credentials nor $home/.aws/config" -- \
    "${files[@]}" AWS_PROFILE=nope "$gulp" info "$url"

rm "$home/.aws/credentials"
expect_error "no credentials anywhere" "no credentials found" -- "${files[@]}" "$gulp" info "$url"
expect_error "no credentials anywhere, where gulp looked" \
    "$home/.aws/credentials (no such file)" -- "${files[@]}" "$gulp" info "$url"

hits="$(cat "$home/metadata.hits" 2>/dev/null || echo 0)"
[ "$hits" = 0 ] || fail "the metadata endpoint was asked $hits times with AWS_EC2_METADATA_DISABLED=true"
log "the metadata endpoint saw no connection"
log "passed"
