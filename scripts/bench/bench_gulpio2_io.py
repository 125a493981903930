#!/usr/bin/env python3
"""gulpio2's side of the gulp-io reading benchmarks (docs/benchmarks.md).

Run with the reference environment made by scripts/env/python-env.sh:

    .venv/bin/python scripts/bench/bench_gulpio2_io.py bench
    .venv/bin/python scripts/bench/bench_gulpio2_io.py make-jpeg crates/gulp-io/benches/data/photo-176x100.jpg

`bench` times, on the directories that `cargo bench -p gulp-io --bench read`
made (default target/bench-dirs/):

* opening `open-200k-json` with `GulpDirectory(dir)` (min of 3 runs; gulpio2
  cannot read msgpack meta, so there is no msgpack figure);
* raw frame reads of every frame of `read-2000x8`: gulpio2 has no raw API, so
  `GulpChunk.read_frames` with an identity `jpeg_decoder` (it returns the
  JPEG bytes), and, as a lower bound, the seek + read loop `read_frames` runs
  internally on `frame_info`;
* decoding on one process with gulpio2's default decoder `jpeg_bytes_to_img`
  (simplejpeg, fastdct + fastupsample), on the same 512 frames the Rust bench
  decodes, and read + decode of every frame through `read_frames`.

`bench-real --dir D` times, on a gulpio2-made directory of real video frames
(scripts/compare.sh makes one), `GulpDirectory[id]` read + decode of every
item and `jpeg_bytes_to_img` on the same frames held in memory.

Each throughput figure is the best of several passes (the machine may be
shared), by the rule of timing.py: `bench` at least 3 passes and 2 s per
figure (2 passes for read + decode), `bench-real` --passes passes. With `--json` the figures are also printed as one JSON object on the
last line (what scripts/compare.sh reads). `make-jpeg` writes the photo-like 176x100 JPEG the Rust benches use
(noise, gradients and blurred shapes, encoded by gulpio2's writer at quality
90); it is deterministic for a given numpy and Pillow.
"""

import argparse
import gc
import os
import sys
import time

import numpy as np

from gulpio2 import GulpDirectory
from gulpio2.utils import img_to_jpeg_bytes, jpeg_bytes_to_img

from timing import best_rate

DECODE_BATCH = 512


def photo_like(width, height, seed=7):
    import PIL.Image
    import PIL.ImageDraw
    import PIL.ImageFilter

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    img = np.zeros((height, width, 3), np.float32)
    img[..., 0] = 90 + 80 * (y / height) + 20 * np.sin(x / width * 3)
    img[..., 1] = 110 + 40 * (x / width)
    img[..., 2] = 160 - 70 * (y / height)
    pil = PIL.Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    draw = PIL.ImageDraw.Draw(pil)
    for _ in range(14):
        x0, y0 = rng.integers(0, width), rng.integers(0, height)
        x1, y1 = x0 + rng.integers(8, width // 2), y0 + rng.integers(6, height // 2)
        colour = tuple(int(v) for v in rng.integers(20, 240, 3))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape([x0, y0, x1, y1], fill=colour)
    pil = pil.filter(PIL.ImageFilter.GaussianBlur(1.2))
    arr = np.asarray(pil).astype(np.float32)
    noise = (rng.random((height, width)) * 255).astype(np.uint8)
    low = np.asarray(
        PIL.Image.fromarray(noise).filter(PIL.ImageFilter.GaussianBlur(2))
    ).astype(np.float32)
    arr += (low[..., None] - 128) * 0.5 + rng.normal(0, 4, (height, width, 1))
    return np.clip(arr, 0, 255).astype(np.uint8)


def make_jpeg(args):
    width, height = (int(v) for v in args.size.split("x"))
    data = img_to_jpeg_bytes(photo_like(width, height))
    with open(args.out, "wb") as f:
        f.write(data)
    print(f"{args.out}: {width}x{height}, {len(data)} bytes")


def identity(jpeg_bytes):
    return jpeg_bytes


def bench_open(path, runs):
    times = []
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        gulp = GulpDirectory(path)
        times.append(time.perf_counter() - t)
        n = len(gulp.merged_meta_dict)
        del gulp
    return min(times), times, n


def bench(args):
    root = args.dirs
    read_dir = os.path.join(root, "read-2000x8")
    open_dir = os.path.join(root, "open-200k-json")
    for d in (read_dir, open_dir):
        if not os.path.isdir(d):
            sys.exit(f"{d} is missing: run `cargo bench -p gulp-io --bench read` first")

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}")
    print(f"load average before: {os.getloadavg()}")

    # Raw reads.
    gulp = GulpDirectory(read_dir, jpeg_decoder=identity)
    chunks = list(gulp.chunks())
    n_frames = sum(len(v["frame_info"]) for c in chunks for v in c.meta_dict.values())
    n_bytes = 0

    def read_all():
        nonlocal n_bytes
        total = 0
        for chunk in chunks:
            with chunk.open("rb"):
                for id_ in chunk.meta_dict:
                    frames, _ = chunk.read_frames(id_)
                    for f in frames:
                        total += len(f)
        n_bytes = total

    def seek_read_all():
        for chunk in chunks:
            with open(chunk.data_file_path, "rb") as fp:
                for item in chunk.meta_dict.values():
                    for loc, pad, length in item["frame_info"]:
                        fp.seek(loc)
                        record = fp.read(length)
                        record[: len(record) - pad]

    raw = best_rate(read_all, n_frames, min_seconds=2.0)
    raw_direct = best_rate(seek_read_all, n_frames, min_seconds=2.0)
    mean_bytes = n_bytes / n_frames
    res = {"frames": n_frames, "mean_frame_bytes": mean_bytes,
           "raw_read_frames_per_s": raw, "raw_seek_read_frames_per_s": raw_direct}
    print(f"raw reads (read_frames, identity decoder): {raw:,.0f} frames/s, "
          f"{raw * mean_bytes / 1e6:,.1f} MB/s ({n_frames} frames of {mean_bytes:.0f} B)")
    print(f"raw reads (seek + read on frame_info):     {raw_direct:,.0f} frames/s, "
          f"{raw_direct * mean_bytes / 1e6:,.1f} MB/s")

    # Decode on one process: the same first 512 frames as the Rust bench.
    batch = []
    for chunk in chunks:
        with chunk.open("rb"):
            for id_ in chunk.meta_dict:
                frames, _ = chunk.read_frames(id_)
                batch.extend(frames)
                if len(batch) >= DECODE_BATCH:
                    break
        if len(batch) >= DECODE_BATCH:
            break
    batch = batch[:DECODE_BATCH]
    first = jpeg_bytes_to_img(batch[0])
    height, width = first.shape[:2]
    dec = best_rate(lambda: [jpeg_bytes_to_img(b) for b in batch], len(batch), min_seconds=2.0)
    res.update(decode_1_frames_per_s=dec, frame_width=width, frame_height=height)
    print(f"decode 1 process (jpeg_bytes_to_img): {dec:,.0f} frames/s, "
          f"{dec * width * height / 1e6:,.1f} MP/s ({width}x{height})")

    gulp_dec = GulpDirectory(read_dir)
    dec_chunks = list(gulp_dec.chunks())

    def read_decode_all():
        for chunk in dec_chunks:
            with chunk.open("rb"):
                for id_ in chunk.meta_dict:
                    chunk.read_frames(id_)

    rd = best_rate(read_decode_all, n_frames, passes=2)
    res["read_decode_1_frames_per_s"] = rd
    print(f"read + decode 1 process (read_frames, default decoder): {rd:,.0f} frames/s")

    # Directory open.
    best, times, n = bench_open(open_dir, args.open_runs)
    res.update(open_json_items=n, open_json_min_s=best, open_json_runs_s=times)
    print(f"GulpDirectory() open of {n} items: min {best * 1e3:,.0f} ms "
          f"(runs: {', '.join(f'{t * 1e3:,.0f}' for t in times)} ms)")
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        import json

        print(json.dumps(res))


def bench_real(args):
    """gulpio2 on a directory of real frames (what compare.sh's decode rows
    compare with): `GulpDirectory[id]` read + decode of every item on one
    process, and its decoder alone on the same frames held in memory."""
    gulp = GulpDirectory(args.dir)
    ids = list(gulp.merged_meta_dict)
    raw = GulpDirectory(args.dir, jpeg_decoder=identity)
    frames = [f for id_ in ids for f in raw[id_][0]]
    n = len(frames)
    pixels = sum(img.shape[0] * img.shape[1] for img in map(jpeg_bytes_to_img, frames))

    def read_decode():
        for id_ in ids:
            gulp[id_]

    rd = best_rate(read_decode, n, passes=args.passes)
    dec = best_rate(lambda: [jpeg_bytes_to_img(f) for f in frames], n, passes=args.passes)
    res = {"dir": args.dir, "items": len(ids), "frames": n,
           "mean_frame_bytes": sum(map(len, frames)) / n, "mean_megapixels": pixels / n / 1e6,
           "read_decode_1_frames_per_s": rd, "decode_1_frames_per_s": dec}
    print(f"{len(ids)} items, {n} frames, mean {pixels / n / 1e6:.2f} MP, "
          f"{res['mean_frame_bytes'] / 1e3:.1f} kB")
    print(f"read + decode 1 process (GulpDirectory[id]): {rd:,.1f} frames/s")
    print(f"decode 1 process, frames in memory (jpeg_bytes_to_img): {dec:,.1f} frames/s")
    if args.json:
        import json

        print(json.dumps(res))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time gulpio2 on the bench directories")
    b.add_argument("--dirs", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "target", "bench-dirs"),
        help="directory holding read-2000x8 and open-200k-json")
    b.add_argument("--open-runs", type=int, default=3)
    b.add_argument("--json", action="store_true",
                   help="also print the figures as one JSON object (last line)")
    b.set_defaults(fn=bench)
    r = sub.add_parser("bench-real", help="time gulpio2's read + decode on one directory")
    r.add_argument("--dir", required=True)
    r.add_argument("--passes", type=int, default=3, help="the best pass counts")
    r.add_argument("--json", action="store_true",
                   help="also print the figures as one JSON object (last line)")
    r.set_defaults(fn=bench_real)
    m = sub.add_parser("make-jpeg", help="write the photo-like bench JPEG")
    m.add_argument("out")
    m.add_argument("--size", default="176x100", help="WIDTHxHEIGHT")
    m.set_defaults(fn=make_jpeg)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
