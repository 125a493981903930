#!/usr/bin/env bash
# The aarch64 Linux wheel run on this x86_64 machine under qemu-user: an
# arm64 Python 3.11 from Debian's arm64 packages (downloaded and unpacked
# into a directory, nothing installed on the host), numpy's and gulp's
# aarch64 wheels beside it, then `import gulp` (the version, the codec and
# the platform machine, which must be aarch64), every frame of every item
# of a gulp directory read with `GulpDirectory(...)[id]` and compared with
# what this machine's gulp reads there (sha256 of each frame's bytes), and
# one batch of a `ClipLoader` compared the same way.
#
#   scripts/wheel-qemu.sh [path/to/gulp_video-*_aarch64.whl [gulp-directory]]
#
# An on-demand release check, not part of scripts/test.sh. The wheel is the
# first argument, else the one aarch64 wheel in dist/ (scripts/wheel.sh).
# The gulp directory is the second argument, else sample/gulp when
# scripts/sample.sh made it, else a small one written here (3 items of 2
# JPEG frames); the host's gulp is .venv's (scripts/python-package.sh), or
# HOST_PYTHON's.
# The arm64 root is built once and kept in ~/.cache/gulp-tools/arm64-root;
# the first run needs root (`dpkg --add-architecture arm64` and
# `apt-get update`, which add an index only) and qemu-user-static.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { echo "wheel-qemu.sh: $*" >&2; }
fail() { echo "wheel-qemu.sh: error: $*" >&2; exit 1; }

if [ $# -ge 1 ]; then
    wheel="$(realpath "$1")"
else
    wheels=(dist/gulp_video-*_aarch64.whl)
    [ -f "${wheels[0]}" ] || fail "no aarch64 wheel in dist/ (scripts/wheel.sh builds it), and none given"
    [ "${#wheels[@]}" = 1 ] || fail "expected one aarch64 wheel in dist/, found: ${wheels[*]}"
    wheel="$root/${wheels[0]}"
fi
case "$wheel" in *_aarch64.whl) ;; *) fail "$wheel is not an aarch64 wheel" ;; esac
[ -f "$wheel" ] || fail "$wheel: no such file"
host_py="${HOST_PYTHON:-$root/.venv/bin/python}"
[ -x "$host_py" ] || fail "$host_py: no host Python with gulp (scripts/python-package.sh makes .venv)"

qemu=/usr/bin/qemu-aarch64-static
if [ ! -x "$qemu" ]; then
    step "apt-get install qemu-user-static"
    apt-get install -y -q qemu-user-static >/dev/null
fi

# The arm64 root: Python 3.11 and the libraries it and the two wheels load
# at run time, each Debian package unpacked with `dpkg -x`.
arm="${XDG_CACHE_HOME:-$HOME/.cache}/gulp-tools/arm64-root"
packages=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3.11
    libc6 libgcc-s1 gcc-12-base libstdc++6 zlib1g libexpat1 libffi8 libssl3 libbz2-1.0
    liblzma5 libsqlite3-0 libcrypt1 libdb5.3 libncursesw6 libtinfo6 libreadline8 libuuid1
    libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2
    libkeyutils1)
if [ ! -x "$arm/usr/bin/python3.11" ]; then
    start=$(date +%s)
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        step "dpkg --add-architecture arm64 and apt-get update (an index only; nothing is installed)"
        dpkg --add-architecture arm64
        apt-get update -q >/dev/null
    fi
    building="$arm.building"
    rm -rf "$building"
    mkdir -p "$building/debs"
    step "apt-get download of ${#packages[@]} arm64 packages into $arm"
    (cd "$building/debs" && apt-get download -q "${packages[@]/%/:arm64}" >../download.log 2>&1) ||
        fail "apt-get download of the arm64 packages failed: $(grep '^E:' "$building/download.log")"
    for deb in "$building"/debs/*.deb; do
        dpkg -x "$deb" "$building/root"
    done
    # numpy, gulp's one dependency, for Python 3.11 on aarch64, with the
    # host's pip; it stays in the cached root.
    "${PYTHON:-python3}" -m pip --disable-pip-version-check --no-input -q install \
        --target "$building/root/site-packages" --platform manylinux2014_aarch64 \
        --only-binary=:all: --python-version 3.11 --implementation cp numpy
    rm -rf "$arm"
    mv "$building/root" "$arm"
    rm -rf "$building"
    step "arm64 root made in $(($(date +%s) - start)) s"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step "pip install --no-deps $(basename "$wheel") for aarch64"
"${PYTHON:-python3}" -m pip --disable-pip-version-check --no-input -q install --no-deps \
    --target "$work/site" --platform manylinux2014_aarch64 --only-binary=:all: \
    --python-version 3.11 --implementation cp "$wheel"
ext=("$work"/site/gulp/_gulp.*so)
[ -f "${ext[0]}" ] || fail "the wheel holds no gulp/_gulp extension"
# ELF e_machine 183 is EM_AARCH64.
machine="$("${PYTHON:-python3}" -c 'import sys; print(int.from_bytes(open(sys.argv[1], "rb").read(20)[18:20], "little"))' "${ext[0]}")"
[ "$machine" = 183 ] || fail "${ext[0]##*/site/} is not an aarch64 library (ELF machine $machine)"

# The gulp directory, and what the host's gulp reads in it.
gulp_dir="${2:-$root/sample/gulp}"
gulp_dir="$(realpath -m "$gulp_dir")"
if [ $# -ge 2 ]; then
    [ -d "$gulp_dir" ] || fail "$gulp_dir: no such gulp directory"
elif [ ! -f "$gulp_dir/label2idx.json" ]; then
    gulp_dir="$work/gulp"
    step "writing a small gulp directory with the host's gulp (no sample/gulp)"
    mkdir "$gulp_dir"
    "$host_py" - "$gulp_dir" <<'PY'
import sys
import numpy as np
from gulp import _gulp
# 3 items of 2 JPEG frames each, a gradient and noise, so that decoding
# differences would show.
rng = np.random.default_rng(0)
w = _gulp.Writer(sys.argv[1], 2)
for i in range(3):
    frames = []
    for f in range(2):
        img = np.zeros((48 + 8 * i, 64, 3), np.uint8)
        img[..., 0] = np.arange(64, dtype=np.uint8)[None, :] * 4
        img[..., 1] = (np.arange(img.shape[0], dtype=np.uint8)[:, None] * 5 + f * 40)
        img[..., 2] = rng.integers(0, 256, img.shape[:2], dtype=np.uint8)
        frames.append(_gulp.encode_jpeg(img, 90))
    w.append_jpegs(f"item-{i}", {"label": i % 2}, frames)
w.commit()
PY
fi

# Each check, as one program run on both sides: the host writes its
# answer as JSON, the aarch64 Python compares with it.
cat >"$work/check.py" <<'PY'
import hashlib, json, platform, sys
import numpy as np
import gulp

path, expected = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
sha = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
got = {"items": {}, "machine": platform.machine()}
directory = gulp.GulpDirectory(path)
for id_ in sorted(directory.ids()):
    frames, meta = directory[id_]
    got["items"][id_] = [[list(f.shape), sha(f)] for f in frames]
loader = gulp.ClipLoader(path, frames=2, sampling="uniform", resize=None, size=32,
                         crop="center", flip=False, batch_size=2, shuffle=False,
                         threads=1, train=False)
batch = next(iter(loader))
got["batch"] = {"shape": list(batch.frames.shape), "ids": list(batch.ids),
                "targets": np.asarray(batch.targets).tolist(), "frames": sha(batch.frames)}
if expected is None:
    json.dump(got, sys.stdout, indent=1, sort_keys=True)
    sys.exit()
want = json.load(open(expected))
print(f"wheel-qemu.sh: import gulp: {gulp.__version__}, codec {gulp.CODEC}, machine {platform.machine()}, "
      f"python {platform.python_version()}", file=sys.stderr)
bad = []
if platform.machine() != "aarch64":
    bad.append(f"platform.machine() is {platform.machine()}, not aarch64")
if sorted(got["items"]) != sorted(want["items"]):
    bad.append(f"ids {sorted(got['items'])} != {sorted(want['items'])}")
for id_, frames in want["items"].items():
    if got["items"].get(id_) != frames:
        bad.append(f"{id_}: frames {got['items'].get(id_)} != host's {frames}")
if got["batch"] != want["batch"]:
    bad.append(f"ClipLoader batch {got['batch']} != host's {want['batch']}")
frames = sum(len(f) for f in got["items"].values())
for line in bad:
    print(f"mismatch: {line}", file=sys.stderr)
print(f"{len(got['items'])} items, {frames} frames and a ClipLoader batch "
      f"{'x'.join(map(str, got['batch']['shape']))} read on {platform.machine()}: "
      f"{'all equal to' if not bad else f'{len(bad)} mismatches with'} the host's reading")
sys.exit(1 if bad else 0)
PY
(cd "$work" && "$host_py" check.py "$gulp_dir") >"$work/expected.json" ||
    fail "the host's gulp could not read $gulp_dir"

step "reading $gulp_dir with gulp under $(basename "$qemu") -L $arm"
start=$(date +%s)
cd "$work"
status=0
env -i "HOME=$HOME" "PATH=/usr/bin:/bin" "PYTHONPATH=$work/site:$arm/site-packages" \
    "$qemu" -L "$arm" "$arm/usr/bin/python3.11" -s check.py "$gulp_dir" "$work/expected.json" \
    >"$work/summary" || status=$?
summary="$(cat "$work/summary")"
[ "$status" = 0 ] || fail "${summary:-the aarch64 Python failed (exit $status)}"
echo "wheel-qemu.sh: $(basename "$wheel"): $summary ($(($(date +%s) - start)) s under qemu)"
