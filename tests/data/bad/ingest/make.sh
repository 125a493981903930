#!/bin/sh
# Writes the binary and list cases of tests/data/bad/ingest/ (see
# ../README.md). Needs ffmpeg, head, dd and printf. The video bytes depend on
# the ffmpeg build, so rerunning it may change them; the expectations name
# only messages that do not.
set -eu
cd "$(dirname "$0")"
FF="ffmpeg -nostdin -hide_banner -loglevel error -y -bitexact"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf videos frames lists
mkdir -p videos frames lists

# --- videos/<case>/ : one video folder of a 20BN JSON dataset -------------
$FF -f lavfi -i testsrc=size=32x24:rate=25:duration=0.5 -pix_fmt yuv420p \
    -fflags +bitexact -flags:v +bitexact "$tmp/good.mp4"
size=$(wc -c < "$tmp/good.mp4")
# The moov atom is at the end: half the file has none.
mkdir videos/truncated_mp4
head -c $((size / 2)) "$tmp/good.mp4" > videos/truncated_mp4/video.mp4
mkdir videos/garbage_mp4
i=0
while [ $i -lt 20 ]; do printf 'this is not a video at all\n'; i=$((i + 1)); done \
    > videos/garbage_mp4/video.mp4
mkdir videos/audio_only_mp4
$FF -f lavfi -i sine=frequency=440:duration=0.2 -c:a aac -fflags +bitexact \
    -flags:a +bitexact videos/audio_only_mp4/video.mp4
mkdir videos/empty_webm
: > videos/empty_webm/video.webm

# --- frames/<case>/ : one JPEG frame folder of a 20BN CSV JPEG dataset ----
$FF -f lavfi -i testsrc=size=32x24:rate=25 -frames:v 1 -q:v 3 \
    -fflags +bitexact -flags:v +bitexact "$tmp/good.jpg"
size=$(wc -c < "$tmp/good.jpg")
mkdir frames/truncated_jpeg
head -c $((size - 100)) "$tmp/good.jpg" > frames/truncated_jpeg/00001.jpg
mkdir frames/garbage_jpg
printf '<html>not a jpeg</html>\n' > frames/garbage_jpg/00001.jpg
# SOI and the first bytes of the first segment kept, then 16 bytes of
# zeros where the headers go; the end-of-image marker is still there.
mkdir frames/corrupt_header_jpeg
cp "$tmp/good.jpg" frames/corrupt_header_jpeg/00001.jpg
dd if=/dev/zero of=frames/corrupt_header_jpeg/00001.jpg bs=1 seek=4 count=16 \
    conv=notrunc status=none

# --- lists/<adapter>_<case>.<ext> : a list for one constructor ------------
printf '{"id": "a", "template": "x"}\n' > lists/twenty_bn_json_not_a_list.json
printf '[{"id": "a", "template": "x"},\n {"template": "y"}]\n' \
    > lists/twenty_bn_json_entry_without_id.json
printf '[{"id": "a", "template": "x"},\n {"id": "b", "templ' \
    > lists/twenty_bn_json_truncated.json
printf '[{"id": "a", "template": "x"},\n {"id": [1, 2], "template": "y"}]\n' \
    > lists/twenty_bn_json_id_wrong_type.json
# A gzip header, then a deflate block of the reserved type 3.
printf '\037\213\010\000\000\000\000\000\000\003\377\377\377\377not deflate\n' \
    > lists/twenty_bn_json_bad_gzip.json.gz
printf 'a;x\nb;y\nc;y;z\n' > lists/twenty_bn_csv_too_many_fields.csv
printf 'cat/a.jpg,cat\ndog/b.jpg dog\n' > lists/image_list_no_comma.txt
printf 'label,time_start,time_end,split\nabseiling,0,10,train\n' \
    > lists/kinetics_no_youtube_id_column.csv
printf '{"version": "1.3", "taxonomy": []}\n' > lists/activitynet_no_database.json
