#!/usr/bin/env bash
# Runs the fuzz targets of gulp-format and gulp-io on stable Rust
# (docs/fuzzing.md).
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]
#
# TARGET is json_meta, msgpack_meta, msgpack_meta_sealed, chunk_read or
# random_ops; `all` (the
# default) runs them one after the other. SECONDS (default 600) is each
# target's run time. Installs cargo-fuzz if it is missing. Extra libFuzzer
# options can be given in FUZZ_ARGS, e.g. FUZZ_ARGS="-seed=1 -max_len=8192".
#
# New corpus entries go to fuzz/corpus/TARGET (git-ignored); the committed
# seeds in fuzz/seeds/TARGET are read, never written. A crash is saved under
# fuzz/artifacts/TARGET/ and the script exits non-zero.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

all=(json_meta msgpack_meta msgpack_meta_sealed chunk_read random_ops)
target="${1:-all}"
seconds="${2:-600}"
case "$target" in
  all) targets=("${all[@]}") ;;
  json_meta | msgpack_meta | msgpack_meta_sealed | chunk_read | random_ops) targets=("$target") ;;
  *)
    echo "usage: $0 [json_meta|msgpack_meta|msgpack_meta_sealed|chunk_read|random_ops|all] [seconds]" >&2
    exit 2
    ;;
esac
if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
  echo "seconds must be a whole number, got '$seconds'" >&2
  exit 2
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi

for t in "${targets[@]}"; do
  case "$t" in
    json_meta | chunk_read) dict=(-dict=fuzz/dicts/json_meta.dict) ;;
    random_ops) dict=() ;;
    *) dict=(-dict=fuzz/dicts/msgpack_meta.dict) ;;
  esac
  mkdir -p "fuzz/corpus/$t"
  echo "== $t for ${seconds}s" >&2
  # --sanitizer none: no -Zsanitizer, so this builds on stable Rust. The
  # crate forbids unsafe code, so the sanitizers would add little; libFuzzer's
  # coverage feedback, debug assertions and overflow checks are still on.
  # shellcheck disable=SC2086
  cargo fuzz run --sanitizer none --debug-assertions "$t" \
    "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" "${dict[@]}" -print_final_stats=1 ${FUZZ_ARGS:-}
done
