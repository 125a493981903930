#!/usr/bin/env python3
"""gulp's Python package vs gulpio2 0.0.4, in one process, on the same
directories (docs/benchmarks.md, "The Python package").

    .venv/bin/python scripts/bench_python.py --real DIR --open DIR [--json]

scripts/compare.sh runs it on its directories: `--real` is gulpio2's own
8 fps ingest of the corpus videos (real frames), `--open` a directory of
200,000 items x 30 frames made by make_bench_dir (JSON meta). Figures:

* open: `GulpDirectory(path)` then one item's meta (gulpio2: from
  `merged_meta_dict`, built by its constructor; gulp: `gd.meta(id)`, which
  parses that item's chunk only); the fastest of --open-runs runs each, page
  cache warm. For information, gulp's `merged_meta_dict` of every item too.
* read + decode: `gd[id]` of every item of --real, one thread (gulpio2 has
  no threads), the best of --passes passes; and gulp with two threads,
  at 1/2 scale, and `gd.read(id)` (no meta).
* raw frames: every frame of every item of --real as JPEG bytes (gulpio2:
  `gd[id]` with an identity `jpeg_decoder`; gulp: `gd.raw(id)`, zero-copy
  memoryviews of the memory map).

Ratios are gulp / gulpio2 for rates and gulpio2 / gulp for times.
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

import gulp
import gulpio2


def best_rate(fn, count, passes):
    best = 0.0
    for _ in range(passes):
        gc.collect()
        t = time.perf_counter()
        fn()
        best = max(best, count / (time.perf_counter() - t))
    return best


def identity(b):
    return b


def two_threads(ids, get):
    halves = [ids[0::2], ids[1::2]]
    def loop(part):
        for i in part:
            get(i)

    ts = [threading.Thread(target=loop, args=(h,)) for h in halves]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def worker(task, path, passes):
    """One measurement, in a fresh interpreter (as a training script runs):
    the heap of an earlier measurement changes how fast the next allocates."""
    if task.startswith("open-"):
        some_id, path = path.split("@", 1)
        t = time.perf_counter()
        if task == "open-gulpio2":
            gd = gulpio2.GulpDirectory(path)
            meta = gd.merged_meta_dict[some_id]["meta_data"][0]
        elif task == "open-gulp":
            gd = gulp.GulpDirectory(path)
            meta = gd.meta(some_id)
        else:  # open-gulp-merged
            gd = gulp.GulpDirectory(path)
            meta = gd.merged_meta_dict[some_id]["meta_data"][0]
        return {"seconds": time.perf_counter() - t, "meta": meta}
    g = (gulpio2 if task.startswith("gulpio2") else gulp).GulpDirectory(
        path, jpeg_decoder=identity) if task.endswith("-raw") and task.startswith("gulpio2") \
        else (gulpio2 if task.startswith("gulpio2") else gulp).GulpDirectory(path)
    ids = list(g.ids()) if task.startswith("gulp-") else list(g.merged_meta_dict)
    n = sum(len(g.item(i)["frame_info"]) for i in ids) if task.startswith("gulp-") else \
        sum(len(g.merged_meta_dict[i]["frame_info"]) for i in ids)
    get = {
        "gulpio2-getitem": lambda i: g[i],
        "gulpio2-raw": lambda i: g[i],
        "gulp-getitem": lambda i: g[i],
        "gulp-read": lambda i: g.read(i),
        "gulp-half": lambda i: g.read(i, scale="1/2"),
        "gulp-raw": lambda i: g.raw(i),
    }.get(task)
    if task == "gulp-getitem-2-threads":
        rate = best_rate(lambda: two_threads(ids, lambda i: g[i]), n, passes)
    else:
        def loop():
            for i in ids:  # each item's frames are dropped before the next (a training step)
                get(i)

        rate = best_rate(loop, n, passes * (3 if task.endswith("raw") else 1))
    return {"frames_per_s": rate, "items": len(ids), "frames": n}


def run_worker(task, path, passes):
    out = subprocess.run([sys.executable, __file__, "--worker", task, "--path", path,
                          "--passes", str(passes)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def best_of(task, path, runs, passes, key, better=max):
    results = [run_worker(task, path, passes) for _ in range(runs)]
    return better(results, key=lambda r: r[key])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--real", help="a gulpio2-made directory of real frames")
    p.add_argument("--open", help="a directory of many items (200,000 x 30)")
    p.add_argument("--runs", type=int, default=3, help="processes per measurement; the best counts")
    p.add_argument("--passes", type=int, default=2, help="passes over --real per process")
    p.add_argument("--json", action="store_true", help="print the figures as JSON (last line)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.passes)))
        return
    if not (a.real and a.open):
        p.error("--real and --open are needed")

    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, gulp {gulp.__version__} "
          f"({gulp.CODEC}), gulpio2 {gulpio2.__version__}; load {os.getloadavg()}", file=sys.stderr)
    for d in (a.real, a.open):  # warm the page cache (outside the measured processes)
        subprocess.run(f"cat '{d}'/* > /dev/null", shell=True, check=True)
    # Same frames and meta from both.
    g2, gd = gulpio2.GulpDirectory(a.real), gulp.GulpDirectory(a.real)
    for i in list(g2.merged_meta_dict)[:3]:
        x, y = gd[i], g2[i]
        assert x[1] == y[1] and all(np.array_equal(u, v) for u, v in zip(x[0], y[0]))
    raw_bytes = [len(f) for i in gd.ids() for f in gd.raw(i)]
    del g2, gd
    res = {"mean_frame_bytes": sum(raw_bytes) / len(raw_bytes), "frames": len(raw_bytes)}
    for task in ("gulpio2-getitem", "gulp-getitem", "gulp-read", "gulp-getitem-2-threads",
                 "gulp-half", "gulpio2-raw", "gulp-raw"):
        r = best_of(task, a.real, a.runs, a.passes, "frames_per_s")
        res[task] = r["frames_per_s"]
        res["items"] = r["items"]
        print(f"{task}: {r['frames_per_s']:,.0f} frames/s", file=sys.stderr)
    od = gulp.GulpDirectory(a.open)
    some_id = od.ids()[-1]
    n_open, frames_open = len(od), od.frame_count(some_id)
    del od
    opened = {}
    for task in ("open-gulp", "open-gulpio2", "open-gulp-merged"):
        opened[task] = best_of(task, f"{some_id}@{a.open}", a.runs, 1, "seconds", min)["seconds"]
        print(f"{task}: {opened[task] * 1e3:,.1f} ms", file=sys.stderr)
    res.update({"open_items": n_open, "open_frames_per_item": frames_open,
                "open_gulp_s": opened["open-gulp"], "open_gulpio2_s": opened["open-gulpio2"],
                "open_gulp_merged_s": opened["open-gulp-merged"]})

    g2r = res["gulpio2-getitem"]
    rows = [
        (f"GulpDirectory(path) + one item's meta, {n_open:,} items x {frames_open} frames",
         f"{opened['open-gulp'] * 1e3:,.1f} ms", f"{opened['open-gulpio2'] * 1e3:,.0f} ms",
         opened["open-gulpio2"] / opened["open-gulp"], "≥ 50×", 50),
        ("  the same with gulp's merged_meta_dict (every item's meta as dicts)",
         f"{opened['open-gulp-merged'] * 1e3:,.0f} ms", f"{opened['open-gulpio2'] * 1e3:,.0f} ms",
         opened["open-gulpio2"] / opened["open-gulp-merged"], "-", None),
        ("gd[id] read + decode, 1 thread, real frames", f"{res['gulp-getitem']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", res["gulp-getitem"] / g2r, "≥ 1.2×", 1.2),
        ("gd.read(id) (frames only), 1 thread", f"{res['gulp-read']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", res["gulp-read"] / g2r, "-", None),
        ("gd[id], 2 Python threads (gulpio2: 1; it holds the GIL)",
         f"{res['gulp-getitem-2-threads']:,.0f} frames/s", f"{g2r:,.0f} frames/s",
         res["gulp-getitem-2-threads"] / g2r, "-", None),
        ("gd.read(id, scale='1/2'), 1 thread (gulpio2: full size)", f"{res['gulp-half']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", res["gulp-half"] / g2r, "-", None),
        (f"Raw frames, {res['mean_frame_bytes'] / 1e3:.0f} kB each (gulp: gd.raw(id), "
         "memoryviews of the map; gulpio2: gd[id] with an identity decoder)",
         f"{res['gulp-raw']:,.0f} frames/s", f"{res['gulpio2-raw']:,.0f} frames/s",
         res["gulp-raw"] / res["gulpio2-raw"], "≥ 20×", 20),
    ]
    print(f"\n{res['items']} items, {res['frames']} frames of real video (--real); "
          f"{n_open:,} items (--open); best of {a.runs} processes each\n")
    print("| task | gulp | gulpio2 | ratio | target | met? |\n|---|---|---|---|---|---|")
    for task, g, p2, ratio, target, need in rows:
        met = "" if need is None else ("met" if ratio >= need else "**not met**")
        shown = f"{ratio:.2f}×" if ratio < 10 else f"{ratio:,.0f}×"
        print(f"| {task} | {g} | {p2} | {shown} | {target} | {met} |")
    res["rows"] = [list(r) for r in rows]
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
