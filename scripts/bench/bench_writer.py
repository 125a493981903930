#!/usr/bin/env python3
"""gulp.Writer against gulpio2 0.0.4's GulpIngestor and webdataset's
ShardWriter, writing the same frames in one run (docs/benchmarks.md, "The
Python writer").

    .venv-bench/bin/python scripts/bench/bench_writer.py [--items 240] [--frames 8]
        [--size 240x320] [--video FILE] [--passes 3] [--json]

The venv needs the gulp package, gulpio2 0.0.4 (with simplejpeg) and
webdataset; the benchmark's own, never CI's (docs/benchmarks.md says how it
was made). The frames: `--video FILE` decoded by ffmpeg to `--size`, else
ffmpeg's `testsrc2` and `mandelbrot` sources, 64 distinct frames of
`--size` (H x W) RGB; item k holds `--frames` of them from position k.
Each contender writes `--items` items of `--frames` frames into a fresh
directory, 100 items a chunk, on every core:

* gulp: `with gulp.Writer(out, items_per_chunk=100) as w: w.add(id, frames,
  meta)`, the frames as one `[T, H, W, 3]` array, encoded at quality 90
  4:4:4 (gulpio2's settings and bytes), fsync on (its default); once more
  at webdataset's settings (Pillow's quality 75, 4:2:0), and once on one
  encoding thread (`threads=1`);
* gulpio2: `GulpIngestor(adapter, out, 100, cores)()`, an adapter whose
  `iter_data` yields the same arrays as a list of frames (its processes
  encode with simplejpeg at quality 90 4:4:4);
* webdataset: `ShardWriter(pattern, maxcount=100)` and `sink.write({"__key__":
  id, "json": meta, f"{k:03d}.jpg": frame, ...})`, its default encoder for
  `.jpg` (Pillow, quality 75 4:2:0) on the calling thread;
* a bare loop: every frame through `gulp._gulp.encode_jpeg` (libjpeg-turbo,
  quality 90 4:4:4) on one thread, the encoder's own speed: gulp on one
  thread against it is the writer's overhead, which the load of a shared
  machine does not blur as it blurs the use of every core.

Figures are frames per second, by the rule of timing.py (the best of
--passes passes, each into a fresh directory); ratios are gulp / other.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# gulpio2's progress bar (tqdm) off: stdout holds the results.
os.environ.setdefault("TQDM_DISABLE", "1")

import gulp  # noqa: E402
import gulpio2  # noqa: E402
import gulpio2.adapters  # noqa: E402
import webdataset as wds  # noqa: E402

from timing import best_rate, logger, ratio  # noqa: E402

log = logger("bench_writer")


def ffmpeg_frames(source, height, width, count):
    """`count` RGB frames [count, H, W, 3] of a file or a lavfi source."""
    if os.path.exists(source):
        inputs = ["-i", source, "-vf", f"scale={width}:{height}"]
    else:
        inputs = ["-f", "lavfi", "-i", f"{source}=size={width}x{height}:rate=25"]
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", *inputs, "-frames:v", str(count),
         "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)


class ArrayAdapter(gulpio2.adapters.AbstractDatasetAdapter):
    """gulpio2's adapter protocol over the benchmark's items."""

    def __init__(self, pool, items, frames):
        self.pool, self.items, self.frames = pool, items, frames

    def __len__(self):
        return self.items

    def iter_data(self, slice_element=None):
        for k in range(self.items)[slice_element or slice(None)]:
            yield {"id": f"item-{k:05d}", "meta": {"label": f"class-{k % 10}"},
                   "frames": list(item_frames(self.pool, k, self.frames))}


def item_frames(pool, k, frames):
    """Item k's frames: `frames` consecutive frames of the pool from k."""
    idx = [(k + t) % len(pool) for t in range(frames)]
    return pool[idx]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=240)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--size", default="240x320", help="H x W of the frames")
    parser.add_argument("--video", help="decode the frames from this file")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    height, width = map(int, args.size.lower().split("x"))
    cores = os.cpu_count() or 1
    if args.video:
        pool = ffmpeg_frames(args.video, height, width, 64)
    else:
        pool = np.concatenate([ffmpeg_frames("testsrc2", height, width, 32),
                               ffmpeg_frames("mandelbrot", height, width, 32)])
    items = [(f"item-{k:05d}", np.ascontiguousarray(item_frames(pool, k, args.frames)),
              {"label": f"class-{k % 10}"}) for k in range(args.items)]
    total = args.items * args.frames
    work = tempfile.mkdtemp(prefix="bench-writer.")
    counter = [0]

    def fresh():
        counter[0] += 1
        return os.path.join(work, str(counter[0]))

    def run_gulp(**options):
        def run():
            with gulp.Writer(fresh(), items_per_chunk=100, **options) as w:
                for id_, frames, meta in items:
                    w.add(id_, frames, meta)
        return run

    def run_gulpio2():
        gulpio2.GulpIngestor(ArrayAdapter(pool, args.items, args.frames), fresh(), 100, cores)()

    def run_webdataset():
        out = fresh()
        os.makedirs(out)
        with wds.ShardWriter(os.path.join(out, "shard-%06d.tar"), maxcount=100, verbose=0) as sink:
            for id_, frames, meta in items:
                sample = {"__key__": id_, "json": meta}
                for t, frame in enumerate(frames):
                    sample[f"{t:03d}.jpg"] = frame
                sink.write(sample)

    def run_bare():
        for _, frames, _ in items:
            for frame in frames:
                gulp._gulp.encode_jpeg(frame, 90)

    contenders = [
        ("gulp.Writer (q90 4:4:4)", run_gulp()),
        ("gulp.Writer (q75 4:2:0)", run_gulp(quality=75, subsampling="420")),
        ("gulp.Writer, 1 thread (q90 4:4:4)", run_gulp(threads=1)),
        ("gulpio2 GulpIngestor (q90 4:4:4)", run_gulpio2),
        ("webdataset ShardWriter (Pillow q75 4:2:0)", run_webdataset),
        ("bare encode loop, 1 thread (q90 4:4:4)", run_bare),
    ]
    rates = {}
    try:
        for name, run in contenders:
            log(f"{name}: {args.passes} passes")
            rates[name] = best_rate(run, total, passes=args.passes, warmup=1)
            shutil.rmtree(work)
            os.makedirs(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sizes = {"items": args.items, "frames": args.frames, "size": [height, width], "cores": cores,
             "gulp": gulp.__version__, "gulpio2": "0.0.4", "webdataset": wds.__version__}
    gulp_rate = rates["gulp.Writer (q90 4:4:4)"]
    gulp_fast = rates["gulp.Writer (q75 4:2:0)"]
    ratios = {
        "gulp / gulpio2": ratio(gulp_rate, rates["gulpio2 GulpIngestor (q90 4:4:4)"]),
        "gulp / webdataset": ratio(gulp_rate, rates["webdataset ShardWriter (Pillow q75 4:2:0)"]),
        "gulp / webdataset, same settings": ratio(
            gulp_fast, rates["webdataset ShardWriter (Pillow q75 4:2:0)"]),
        "gulp, 1 thread / bare loop": ratio(
            rates["gulp.Writer, 1 thread (q90 4:4:4)"], rates["bare encode loop, 1 thread (q90 4:4:4)"]),
        "gulp / (cores x bare loop)": gulp_rate / (
            cores * rates["bare encode loop, 1 thread (q90 4:4:4)"]),
    }
    if args.json:
        print(json.dumps({"setup": sizes, "frames_per_second": rates, "ratios": ratios}, indent=2))
        return 0
    print(f"{args.items} items x {args.frames} frames of {height}x{width}, {cores} cores, "
          f"gulp {gulp.__version__}, gulpio2 0.0.4, webdataset {wds.__version__}")
    for name, rate in rates.items():
        print(f"  {name:44s} {rate:9,.0f} frames/s")
    for name, value in ratios.items():
        print(f"  {name:44s} {value:9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
