#!/usr/bin/env python3
"""Forked DataLoader workers over one directory (issue 41, point 1): the
parent opens a directory of ITEMS items (FRAMES frames each, 16x16 JPEGs,
chunks of 1,000) and reads one item, then WORKERS forked workers each read
READS random items with `gd[id]`; prints the private dirty memory of anonymous
mappings each worker added (/proc/PID/smaps), for JSON and msgpack meta, and for
gulpio2 over the JSON directory.

    .venv/bin/python scripts/bench/bench_fork.py [OUT_DIR] [--items N]

The directories are written under OUT_DIR (default /tmp/bench-fork) once and
reused."""

import argparse
import os
import random
import subprocess
import sys
import time

from gulp import _gulp

# The reader of a process's own memory that the test suite's bound uses.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "crates", "gulp-python", "tests"))
from proc_memory import anonymous_private_dirty  # noqa: E402

FRAMES = 30
PER_CHUNK = 1000


def jpeg(out):
    path = os.path.join(out, "f.jpg")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=16x16:rate=1", "-frames:v", "1", "-q:v", "3", path],
                   check=True)
    return open(path, "rb").read()


def build(directory, items, meta_format, frame):
    if os.path.isdir(directory):
        return
    tmp = directory + ".tmp"
    os.makedirs(tmp, exist_ok=True)
    t = time.time()
    for chunk in range((items + PER_CHUNK - 1) // PER_CHUNK):
        writer = _gulp.Writer(tmp, chunk, meta_format=meta_format, fsync=False)
        for i in range(chunk * PER_CHUNK, min(items, (chunk + 1) * PER_CHUNK)):
            writer.append_jpegs(f"{i:07d}", {"label": "pushing something", "idx": i},
                                [frame] * FRAMES)
        writer.commit()
    os.rename(tmp, directory)
    print(f"bench_fork.py: {directory} written in {time.time() - t:.0f} s", file=sys.stderr)


def measure(gd, items, workers, reads):
    gd[f"{0:07d}"]
    added = []
    for w in range(workers):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                before = anonymous_private_dirty()
                rng = random.Random(w)
                for _ in range(reads):
                    gd[f"{rng.randrange(items):07d}"]
                os.write(wfd, str(anonymous_private_dirty() - before).encode())
            finally:
                os._exit(0)
        os.close(wfd)
        with os.fdopen(r) as f:
            added.append(int(f.read() or 0))
        os.waitpid(pid, 0)
    return added


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="/tmp/bench-fork")
    ap.add_argument("--items", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--reads", type=int, default=20_000)
    ap.add_argument("--no-gulpio2", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    frame = jpeg(args.out)
    runs = []
    for fmt in ["json", "msgpack"]:
        d = os.path.join(args.out, f"{fmt}-{args.items}")
        build(d, args.items, fmt, frame)
        runs.append((f"gulp, {fmt} meta", "gulp", d))
    if not args.no_gulpio2:
        runs.append(("gulpio2, json meta", "gulpio2", runs[0][2]))
    for name, module, d in runs:
        if module == "gulp":
            import gulp
            gd = gulp.GulpDirectory(d)
        else:
            import gulpio2
            gd = gulpio2.GulpDirectory(d)
        added = measure(gd, args.items, args.workers, args.reads)
        mb = ", ".join(f"{a / 1e6:.0f}" for a in added)
        print(f"{name}: private dirty anonymous memory added per worker: {mb} MB "
              f"({args.workers} workers x {args.reads} random gd[id] of {args.items} items)")
        del gd


if __name__ == "__main__":
    main()
