#!/usr/bin/env python3
"""gulp's HTTP client for plain-HTTP endpoints against object_store's own
(reqwest, `GULP_S3_HTTP=reqwest`), straight from a real Garage on loopback,
in one run:

    .venv/bin/python scripts/bench/bench_s3_client.py --dir DIR [--copies K]
        [--rounds R] [--block-size BYTES] [--server-core]

Garage (2.5) writes a response's head and body apart on sockets that keep
Nagle's algorithm on, so a client that delays its acknowledgements (as the
kernel does once a connection carries request after response) gets each body
40 ms late. gulp's client acknowledges each read at once (TCP_QUICKACK). The
directory is K copies of DIR (default 4, as bench_s3.py makes them),
uploaded to a fresh bucket; each client runs in processes of its own (a
process keeps its first client), the two in turn, R rounds (default 3), and
each row gives the median:

  gd[id, 0:4]    every item's first 4 frames (one range request), mean ms a read
  gd[id, ::6]    every 6th frame of every item (a request each, 8 at once)
  gd[id]         every item whole (one request)
  whole chunks   every data object fetched whole into a fresh node cache
                 (cache_fetch="chunks", 8 MiB parts, 4 at once), seconds
  loader         gulp.ClipLoader's cold epoch (bench_s3.py's pipeline, a cache
                 holding the dataset), clips/s

--server-core runs Garage on the last core and the readers on the others.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_s3 import (PIPELINE, ROOT, copies, pin_server, server_cores, server_options,
                      start_garage, upload)
from timing import logger

log = logger("bench_s3_client")

# One process's measurements, printed as JSON: argv = url, cache directory.
PROBE = f"""
import json, sys, tempfile, time, gulp
url, cache = sys.argv[1], sys.argv[2]
out = {{}}
gd = gulp.GulpDirectory(url)
ids = sorted(gd.merged_meta_dict)
for name, sel in (("gd[id, 0:4]", slice(0, 4)), ("gd[id, ::6]", slice(None, None, 6)),
                  ("gd[id]", None)):
    start = time.perf_counter()
    for i in ids:
        gd[i] if sel is None else gd[i, sel]
    out[name] = (time.perf_counter() - start) / len(ids) * 1000
gd = gulp.GulpDirectory(url, cache_dir=cache + "/chunks", cache_fetch="chunks")
start = time.perf_counter()
for c in range(gd.num_chunks):
    gd.raw(gd._native.chunk_ids(c)[0], [0])
out["whole chunks"] = time.perf_counter() - start
loader = gulp.ClipLoader(url, cache_dir=cache + "/loader", **{PIPELINE!r})
start = time.perf_counter()
clips = sum(len(b) for b in loader)
out["loader"] = clips / (time.perf_counter() - start)
print(json.dumps(out))
"""

ROWS = [("gd[id, 0:4]", "ms a read"), ("gd[id, ::6]", "ms a read"), ("gd[id]", "ms a read"),
        ("whole chunks", "s"), ("loader", "clips/s")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    server_options(parser, "Garage on the last core, the readers on the others")
    args = parser.parse_args()
    cores = server_cores(parser, args)
    work = Path(tempfile.mkdtemp(prefix="gulp-bench-s3-client."))
    try:
        garage_pid = start_garage(work / "garage", args.block_size)
        if args.server_core:
            pin_server([garage_pid], cores)
        local = work / "data"
        copies(args.dir, local, args.copies)
        url = f"s3://{os.environ['GULP_S3_BUCKET']}/bench"
        upload(local, url)
        clients = {"gulp's (TCP_QUICKACK)": {}, "object_store's (reqwest)": {"GULP_S3_HTTP": "reqwest"}}
        got: dict[str, list[dict[str, float]]] = {c: [] for c in clients}
        for r in range(args.rounds):
            for name, extra in clients.items():
                cache = work / f"cache-{r}-{len(got[name])}-{extra.get('GULP_S3_HTTP', 'gulp')}"
                out = subprocess.run([sys.executable, "-c", PROBE, url, str(cache)], check=True,
                                     capture_output=True, text=True,
                                     env=dict(os.environ, **extra)).stdout
                got[name].append(json.loads(out.splitlines()[-1]))
                shutil.rmtree(cache, ignore_errors=True)
                log(f"round {r + 1}, {name}: {got[name][-1]}")
        items = len(list(local.glob("meta_*.gmeta")))
        print("# gulp's HTTP client against object_store's, straight from Garage\n")
        print(f"{args.copies} copies of {args.dir} ({items} chunks); Garage's block size "
              f"{args.block_size or 'its default'}; "
              + (f"Garage on core {cores[-1]}, the readers on {cores[:-1]}" if args.server_core
                 else f"everything on cores {cores}")
              + f"; the median of {args.rounds} rounds\n")
        names = list(clients)
        print(f"| run | unit | {names[0]} | {names[1]} | ratio |")
        print("|---|---|---|---|---|")
        for row, unit in ROWS:
            a, b = (statistics.median(g[row] for g in got[n]) for n in names)
            better = a / b if unit == "clips/s" else b / a
            print(f"| {row} | {unit} | {a:.2f} | {b:.2f} | {better:.2f} × |")
        print("\nratio: how many times faster gulp's client is (above 1: faster).")
        return 0
    finally:
        subprocess.run([str(ROOT / "scripts" / "env" / "garage.sh"), "stop", str(work / "garage")],
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
