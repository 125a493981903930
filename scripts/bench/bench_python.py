#!/usr/bin/env python3
"""gulp's Python package vs gulpio2 0.0.4, in one process, on the same
directories (docs/benchmarks.md, "The Python package").

    .venv/bin/python scripts/bench/bench_python.py --real DIR --open DIR [--mixed DIR] [--json]

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
* --mixed DIR: `gd[id]` read + decode, one thread, on each frame-size class
  of the mixed-shapes set (DIR/<class> for class in all, small, medium,
  large, made by scripts/bench/mixed_dirs.py: items of 68 to 795 frames), with
  each side's peak anonymous memory (resident minus file-backed pages, from
  /proc/self/statm after each call, the item's frames still held: the
  memory maps of the data files, shared page cache, are not counted).

Ratios are gulp / gulpio2 for rates and gulpio2 / gulp for times.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np

import gulp
import gulpio2

from timing import best_rate, ratio


def identity(b):
    return b


PAGE = os.sysconf("SC_PAGE_SIZE")
CLASSES = ("all", "small", "medium", "large")


def anon_bytes():
    """Resident memory that is not file-backed (the heap, anonymous maps)."""
    with open("/proc/self/statm") as f:
        _, resident, shared = map(int, f.read().split()[:3])
    return (resident - shared) * PAGE


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
        "gulp-half": lambda i: g.read(i, dct_scale="1/2"),
        "gulp-raw": lambda i: g.raw(i),
    }.get(task)
    if task == "gulp-getitem-2-threads":
        rate = best_rate(lambda: two_threads(ids, lambda i: g[i]), n, passes)
    else:
        peak = [0]

        def loop():
            for i in ids:  # each item's frames are dropped before the next (a training step)
                frames = get(i)
                peak[0] = max(peak[0], anon_bytes())
                del frames

        rate = best_rate(loop, n, passes * (3 if task.endswith("raw") else 1))
        return {"frames_per_s": rate, "items": len(ids), "frames": n, "peak_anon": peak[0]}
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
    p.add_argument("--mixed", help="the mixed-shapes directories (scripts/bench/mixed_dirs.py): per class")
    p.add_argument("--json", action="store_true", help="print the figures as JSON (last line)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--path", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.passes)))
        return
    if not (a.real and a.open) and not a.mixed:
        p.error("--real and --open are needed (or --mixed)")
    if a.mixed:
        for cls in CLASSES:
            if not os.path.isdir(os.path.join(a.mixed, cls)):
                p.error(f"{a.mixed}/{cls} is not a directory (scripts/bench/mixed_dirs.py makes it)")
    res = main_table(a) if a.real and a.open else {}
    if a.mixed:
        res["mixed"] = mixed_table(a)
    if a.json:
        print(json.dumps(res))


def mixed_table(a):
    """gd[id] and peak memory per frame-size class of the mixed-shapes set."""
    out = {}
    for cls in CLASSES:
        path = os.path.join(a.mixed, cls)
        subprocess.run(f"cat '{path}'/* > /dev/null", shell=True, check=True)
        gd = gulp.GulpDirectory(path)
        lengths = [gd.frame_count(i) for i in gd.ids()]
        del gd
        row = {"items": len(lengths), "frames": sum(lengths), "longest": max(lengths)}
        for side in ("gulpio2", "gulp"):
            # At least ~3,000 frames per process: a class of small frames
            # passes in 60 ms, within the noise of a shared machine.
            passes = max(a.passes, -(-3000 // row["frames"]))
            runs = [run_worker(f"{side}-getitem", path, passes) for _ in range(a.runs)]
            row[side] = max(r["frames_per_s"] for r in runs)
            row[side + "_peak_anon"] = max(r["peak_anon"] for r in runs)
        print(f"mixed {cls}: gulp {row['gulp']:,.0f}, gulpio2 {row['gulpio2']:,.0f} frames/s; peak anon "
              f"{row['gulp_peak_anon'] / 1e6:,.0f} / {row['gulpio2_peak_anon'] / 1e6:,.0f} MB", file=sys.stderr)
        out[cls] = row
    print(f"\n`gd[id]` read + decode on one thread, the mixed-shapes set ({a.mixed}), per frame-size class "
          f"(short edge: small <= 144, medium 145-383, large >= 384); best of {a.runs} processes; peak "
          "anonymous memory with one item's frames held\n")
    print("| class | items, frames (longest item) | gulp | gulpio2 | ratio | target | met? | peak memory, "
          "gulp | gulpio2 |\n|---|---|---|---|---|---|---|---|---|")
    for cls, r in out.items():
        speedup = ratio(r["gulp"], r["gulpio2"])
        mem_ok = r["gulp_peak_anon"] <= r["gulpio2_peak_anon"] * 1.01
        print(f"| {cls} | {r['items']}, {r['frames']:,} ({r['longest']}) | {r['gulp']:,.0f} frames/s | "
              f"{r['gulpio2']:,.0f} frames/s | {speedup:.2f}× | ≥ 1.2× | {'met' if speedup >= 1.2 else '**not met**'} | "
              f"{r['gulp_peak_anon'] / 1e6:,.0f} MB{'' if mem_ok else ' (**more**)'} | "
              f"{r['gulpio2_peak_anon'] / 1e6:,.0f} MB |")
    return out


def main_table(a):
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
         ratio(opened["open-gulp"], opened["open-gulpio2"], times=True), "≥ 50×", 50),
        ("  the same with gulp's merged_meta_dict (every item's meta as dicts)",
         f"{opened['open-gulp-merged'] * 1e3:,.0f} ms", f"{opened['open-gulpio2'] * 1e3:,.0f} ms",
         ratio(opened["open-gulp-merged"], opened["open-gulpio2"], times=True), "-", None),
        ("gd[id] read + decode, 1 thread, real frames", f"{res['gulp-getitem']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", ratio(res["gulp-getitem"], g2r), "≥ 1.2×", 1.2),
        ("gd.read(id) (frames only), 1 thread", f"{res['gulp-read']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", ratio(res["gulp-read"], g2r), "-", None),
        ("gd[id], 2 Python threads (gulpio2: 1; it holds the GIL)",
         f"{res['gulp-getitem-2-threads']:,.0f} frames/s", f"{g2r:,.0f} frames/s",
         ratio(res["gulp-getitem-2-threads"], g2r), "-", None),
        ("gd.read(id, dct_scale='1/2'), 1 thread (gulpio2: full size)", f"{res['gulp-half']:,.0f} frames/s",
         f"{g2r:,.0f} frames/s", ratio(res["gulp-half"], g2r), "-", None),
        (f"Raw frames, {res['mean_frame_bytes'] / 1e3:.0f} kB each (gulp: gd.raw(id), "
         "memoryviews of the map; gulpio2: gd[id] with an identity decoder)",
         f"{res['gulp-raw']:,.0f} frames/s", f"{res['gulpio2-raw']:,.0f} frames/s",
         ratio(res["gulp-raw"], res["gulpio2-raw"]), "≥ 20×", 20),
    ]
    print(f"\n{res['items']} items, {res['frames']} frames of real video (--real); "
          f"{n_open:,} items (--open); best of {a.runs} processes each\n")
    print("| task | gulp | gulpio2 | ratio | target | met? |\n|---|---|---|---|---|---|")
    for task, g, p2, speedup, target, need in rows:
        met = "" if need is None else ("met" if speedup >= need else "**not met**")
        shown = f"{speedup:.2f}×" if speedup < 10 else f"{speedup:,.0f}×"
        print(f"| {task} | {g} | {p2} | {shown} | {target} | {met} |")
    res["rows"] = [list(r) for r in rows]
    return res


if __name__ == "__main__":
    main()
