#!/usr/bin/env python3
"""A gulp directory of a million items, and what opening, loading and
checking it costs.

    .venv/bin/python scripts/million.py build OUT [--items 1000000] [--frames 30]
    .venv/bin/python scripts/million.py measure OUT

`build` writes OUT/json (JSON meta, as gulpio2 writes it) and OUT/msgpack
(the same data files, hard-linked, with msgpack meta from `gulp convert`):
`--items` items of `--frames` frames each, 10,000 items per chunk, three
labels, and OUT/list.csv, the 20BN CSV list of the same ids. The frames
are 8 real 16x16 JPEG frames cut from the sample videos' first frames by
ffmpeg (an item's frames cycle through them): the figures are about the
index, not the codec, so the frames are as small as real frames get.

`measure` runs each step in a fresh interpreter and prints, per meta
format: `GulpDirectory` open time and RSS, `ClipLoader()` construction
time and RSS (the loader of one rank), the first batch, and `gulp check`;
and the planning time of `gulp ingest` re-run over the million-line list
(every item already present). RSS is the process's peak (ru_maxrss) less
that of an interpreter that imported gulp and numpy.
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import gulp
from gulp import _gulp

PER_CHUNK = 10_000


def frames_jpegs():
    """8 real 16x16 JPEG frames (ffmpeg's test sources, q 3)."""
    tmp = tempfile.mkdtemp()
    try:
        sources = ["testsrc2", "mandelbrot", "smptebars", "rgbtestsrc", "life", "cellauto",
                   "testsrc", "yuvtestsrc"]
        out = []
        for s in sources:
            path = os.path.join(tmp, f"{s}.jpg")
            subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                            f"{s}=size=160x120:rate=1", "-frames:v", "1", "-vf", "scale=16:16",
                            "-q:v", "3", path], check=True)
            out.append(open(path, "rb").read())
        return out
    finally:
        shutil.rmtree(tmp)


def build(out, items, frames):
    jpegs = frames_jpegs()
    json_dir = os.path.join(out, "json")
    os.makedirs(json_dir)
    labels = ["pushing", "pulling", "holding"]
    t = time.time()
    for chunk in range((items + PER_CHUNK - 1) // PER_CHUNK):
        writer = _gulp.Writer(json_dir, chunk, fsync=False)
        for i in range(chunk * PER_CHUNK, min(items, (chunk + 1) * PER_CHUNK)):
            clip = [jpegs[(i + k) % len(jpegs)] for k in range(frames)]
            writer.append_jpegs(f"{i:07d}", {"label": labels[i % 3], "idx": i % 3}, clip)
        writer.commit()
    with open(os.path.join(json_dir, "label2idx.json"), "w") as f:
        json.dump({label: k for k, label in enumerate(labels)}, f)
    print(f"million.py: {items} items x {frames} frames written in {time.time() - t:.0f} s "
          f"({du(json_dir) / 1e9:.1f} GB)")
    msgpack_dir = os.path.join(out, "msgpack")
    os.makedirs(msgpack_dir)
    for name in os.listdir(json_dir):
        src, dst = os.path.join(json_dir, name), os.path.join(msgpack_dir, name)
        if name.startswith("data_"):
            os.link(src, dst)
        else:
            shutil.copy(src, dst)
    t = time.time()
    subprocess.run([gulp_cmd(), "convert", msgpack_dir, "--to", "msgpack"], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"million.py: msgpack meta by gulp convert in {time.time() - t:.0f} s")
    with open(os.path.join(out, "list.csv"), "w") as f:
        for i in range(items):
            f.write(f"{i:07d};{labels[i % 3]}\n")


def du(path):
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))


def gulp_cmd():
    return os.path.join(os.path.dirname(sys.executable), "gulp")


STEP = r"""
import json, resource, sys, time
import numpy, gulp
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path, step = sys.argv[1], sys.argv[2]
t = time.time()
if step == "open":
    gd = gulp.GulpDirectory(path)
    n = len(gd)
    out = {"seconds": time.time() - t, "items": n}
else:
    loader = gulp.ClipLoader(path, frames=8, resize=None, size=16, crop="center", batch_size=8,
                             shuffle=True, seed=0, threads=2)
    out = {"seconds": time.time() - t, "items": loader.items, "batches": len(loader)}
    t = time.time()
    batch = next(iter(loader))
    out["first_batch"] = time.time() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out["rss_mb"] = (peak - base) / 1024
print(json.dumps(out))
"""


def step(path, what):
    out = subprocess.run([sys.executable, "-c", STEP, path, what], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def measure(out):
    for fmt in ("json", "msgpack"):
        path = os.path.join(out, fmt)
        opened = step(path, "open")
        loader = step(path, "loader")
        frames = loader["items"] * 30
        t = time.time()
        check = subprocess.run([gulp_cmd(), "check", path], capture_output=True, text=True)
        checked = time.time() - t
        print(f"million.py: {fmt:7} | open {opened['seconds']:.2f} s, {opened['rss_mb']:.0f} MB "
              f"| ClipLoader() {loader['seconds']:.2f} s, {loader['rss_mb']:.0f} MB "
              f"({loader['rss_mb'] * 2**20 / frames:.1f} B/frame), first batch "
              f"{loader['first_batch'] * 1e3:.0f} ms | gulp check {checked:.1f} s "
              f"(exit {check.returncode})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "measure"])
    parser.add_argument("out")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--frames", type=int, default=30)
    args = parser.parse_args()
    if args.what == "build":
        build(args.out, args.items, args.frames)
    else:
        measure(args.out)


if __name__ == "__main__":
    main()
