#!/usr/bin/env python3
"""A gulp directory of a million items, and what opening, loading and
checking it costs.

    .venv/bin/python scripts/bench/million.py build OUT [--items 1000000] [--frames 30]
    .venv/bin/python scripts/bench/million.py measure OUT
    .venv/bin/python scripts/bench/million.py where OUT
    .venv/bin/python scripts/bench/million.py keys OUT

`build` writes OUT/json (JSON meta, as gulpio2 writes it) and OUT/msgpack
(the same data files, hard-linked, with msgpack meta from `gulp convert`):
`--items` items of `--frames` frames each, `--per-chunk` items per chunk
(10,000 by default), three
labels, and OUT/list.csv, the 20BN CSV list of the same ids. The frames
are 8 real 16x16 JPEG frames cut from the sample videos' first frames by
ffmpeg (an item's frames cycle through them): the figures are about the
index, not the codec, so the frames are as small as real frames get.

`measure` runs each step in a fresh interpreter and prints, per meta
format: the time `gulp index` takes to write the index file (removed
first) and its size, `GulpDirectory` open time, `ClipLoader()`
construction time and anonymous memory (one rank), its first batch, the
same loader with `GULP_INDEX=off` (read from the meta files), `--ranks`
ranks started together (the wall time until each has its first batch,
their anonymous memory added up), `gulp check` and `gulp info`. Memory is
RssAnon less that of the interpreter after importing gulp and numpy: the
pages of mapped files (the index, the data) are the node's page cache,
shared, and not counted.

`where` times `ClipLoader(where=...)` keeping two thirds of the items, as
a `gulp.col` predicate on the label (answered from the index file), on
another key (every meta parsed in Rust) and as a Python function.

`keys` times `ClipLoader(texts="caption")` and `ClipLoader(target="idx")`
(a key that is not the label: each sample's value read from its item's
meta when its batch is made, not at open) and their first batches.
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


def build(out, items, frames, per_chunk=PER_CHUNK):
    jpegs = frames_jpegs()
    json_dir = os.path.join(out, "json")
    os.makedirs(json_dir)
    labels = ["pushing", "pulling", "holding"]
    t = time.time()
    for chunk in range((items + per_chunk - 1) // per_chunk):
        writer = _gulp.Writer(json_dir, chunk, fsync=False)
        for i in range(chunk * per_chunk, min(items, (chunk + 1) * per_chunk)):
            clip = [jpegs[(i + k) % len(jpegs)] for k in range(frames)]
            meta = {"label": labels[i % 3], "idx": i % 3, "caption": f"a hand {labels[i % 3]} thing {i}"}
            writer.append_jpegs(f"{i:07d}", meta, clip)
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

def anon_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    return 0

base = anon_kb()
path, step, rank, world = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = time.time()
if step == "open":
    gd = gulp.GulpDirectory(path)
    n = len(gd)
    out = {"seconds": time.time() - t, "items": n}
else:
    # The subsets of --where: two thirds of the items, by the label (read
    # from the index file), by another key (read from the metas, in Rust),
    # or by a Python function.
    where = {"where-label": gulp.col("label") != "holding",
             "where-key": gulp.col("idx") < 2,
             "where-function": lambda meta: meta["label"] != "holding"}.get(step)
    # Texts and a target on a key other than the label (`keys`).
    keys = {"texts": {"texts": "caption"}, "target-key": {"target": "idx"}}.get(step, {})
    loader = gulp.ClipLoader(path, frames=1, resize=None, size=16, crop="center", batch_size=8,
                             shuffle=True, seed=0, threads=2, rank=rank, world_size=world,
                             where=where, **keys)
    out = {"seconds": time.time() - t, "items": loader.items, "batches": len(loader)}
    out["anon_mb_made"] = (anon_kb() - base) / 1024
    t = time.time()
    batches = iter(loader)
    batch = next(batches)
    out["first_batch"] = time.time() - t
    if step == "texts":
        assert all(text.startswith("a hand ") for text in batch.texts), batch.texts
# With the iterator alive (it holds the rank's plan of the epoch).
out["anon_mb"] = (anon_kb() - base) / 1024
print(json.dumps(out))
"""


def step(path, what, rank=0, world=1, env=None):
    out = subprocess.run([sys.executable, "-c", STEP, path, what, str(rank), str(world)],
                         check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def ranks_together(path, world):
    """`world` ranks started together, as torchrun starts them on a node:
    the wall time until every one has its first batch, and their anonymous
    memory added up."""
    t = time.time()
    procs = [subprocess.Popen([sys.executable, "-c", STEP, path, "loader", str(r), str(world)],
                              stdout=subprocess.PIPE, text=True) for r in range(world)]
    outs = [json.loads(p.communicate()[0]) for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("million.py: a rank failed")
    return time.time() - t, sum(o["anon_mb"] for o in outs)


def timed(cmd):
    t = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.time() - t, done.returncode


def indexed_dirs(out, formats):
    """(format, path) of each format's directory that exists, its index
    file written first when it has none."""
    for fmt in formats:
        path = os.path.join(out, fmt)
        if not os.path.isdir(path):
            continue
        if not os.path.exists(os.path.join(path, gulp.INDEX_FILE)):
            subprocess.run([gulp_cmd(), "index", path], check=True, stdout=subprocess.DEVNULL)
        yield fmt, path


def measure_where(out, formats):
    """`ClipLoader(where=...)` keeping two thirds of the items: a
    `gulp.col` predicate on the label (answered from the index file), one
    on another key (the metas parsed in Rust), and a Python function."""
    for fmt, path in indexed_dirs(out, formats):
        runs = {what: step(path, what) for what in ("where-label", "where-key", "where-function")}
        print(f"million.py: {fmt:7} where= | " + " | ".join(
            f"{what[6:]}: {r['items']} items in {r['seconds']:.2f} s, +{r['anon_mb_made']:.0f} MB"
            for what, r in runs.items()), flush=True)


def measure_keys(out, formats):
    """`ClipLoader(texts="caption")` and `ClipLoader(target="idx")`: open
    and first batch, with the index file."""
    for fmt, path in indexed_dirs(out, formats):
        runs = {what: step(path, what) for what in ("loader", "texts", "target-key")}
        print(f"million.py: {fmt:7} {runs['loader']['items']} items | " + " | ".join(
            f"{what}: {r['seconds']:.2f} s, +{r['anon_mb_made']:.0f} MB, first batch "
            f"{r['first_batch'] * 1e3:.0f} ms" for what, r in runs.items()), flush=True)


def measure(out, formats, world):
    for fmt in formats:
        path = os.path.join(out, fmt)
        if not os.path.isdir(path):
            continue
        index = os.path.join(path, gulp.INDEX_FILE)
        if os.path.exists(index):
            os.remove(index)
        # The first open of a directory without an index file writes it.
        built, rc = timed([gulp_cmd(), "index", path])
        opened = step(path, "open")
        loader = step(path, "loader")
        off = dict(os.environ, GULP_INDEX="off")
        plain = step(path, "loader", env=off)
        together, together_mb = ranks_together(path, world)
        checked, check_rc = timed([gulp_cmd(), "check", path])
        info, info_rc = timed([gulp_cmd(), "info", path])
        print(f"million.py: {fmt:7} {opened['items']} items | gulp index {built:.1f} s "
              f"({os.path.getsize(index) / 1e6:.0f} MB) | open {opened['seconds']:.2f} s "
              f"| ClipLoader() {loader['seconds']:.2f} s, +{loader['anon_mb_made']:.0f} MB anon "
              f"(first batch {loader['first_batch'] * 1e3:.0f} ms; {loader['anon_mb']:.0f} MB iterating) "
              f"| without the index {plain['seconds']:.2f} s, +{plain['anon_mb_made']:.0f} MB "
              f"| {world} ranks together {together:.1f} s, {together_mb:.0f} MB anon "
              f"| gulp check {checked:.1f} s (exit {check_rc}) | gulp info {info:.1f} s "
              f"(exit {info_rc})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["build", "measure", "where", "keys"])
    parser.add_argument("out")
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--per-chunk", type=int, default=PER_CHUNK,
                        help="build: items per chunk")
    parser.add_argument("--formats", default="json,msgpack",
                        help="measure: the meta formats to measure (json, msgpack)")
    parser.add_argument("--ranks", type=int, default=8,
                        help="measure: ranks started together")
    args = parser.parse_args()
    if args.what == "build":
        build(args.out, args.items, args.frames, args.per_chunk)
    elif args.what == "where":
        measure_where(args.out, args.formats.split(","))
    elif args.what == "keys":
        measure_keys(args.out, args.formats.split(","))
    else:
        measure(args.out, args.formats.split(","), args.ranks)


if __name__ == "__main__":
    main()
