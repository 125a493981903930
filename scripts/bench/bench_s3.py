#!/usr/bin/env python3
"""The clip loader over a bucket against the same directory on local disk,
in one run: a real Garage on loopback (scripts/env/garage.sh) behind the counting
proxy (scripts/ci/s3_proxy.py), which counts the bytes and requests that reach
the server.

    .venv/bin/python scripts/bench/bench_s3.py --dir DIR [--copies K] [--json FILE]
        [--block-size BYTES] [--server-core] [--cache-root DIR]

DIR is a gulp directory (e.g. target/compare/real-8fps, which
scripts/compare.sh makes); the benchmark's directory is K copies of it
(hard links to its data files, ids renamed; default 4), uploaded to a fresh
bucket. Every run is gulp.ClipLoader with 2 threads, TSN 8 frames, short edge
128, random 112 crop, flip, batches of 8 (the loader benchmark's pipeline):

  local             the directory on disk, page cache warm (best of 2 epochs)
  no cache          from the bucket without a node cache (the frames' ranges
                    read by the decoding threads): epoch 1
  cold, warm        from the bucket through a fresh node cache holding the
                    dataset (cache_fetch="auto"): epoch 1 (the ranges of the
                    frames decoded, fetched ahead of the decoding threads),
                    epoch 2 (each chunk read again: made whole, its missing
                    bytes fetched), epochs 3 to 5 (from the cache)
  tenth, full       cache_limit = 10 % of the data objects, full shuffle
                    (ranges, the policy's choice): epochs 1 and 2
  quarter           cache_limit = 25 %, shuffle="chunks" (windows of 1
                    chunk), cache_fetch="chunks" (whole chunks): epoch 1
  2 ranks           ranks 0 and 1 of 2 in two processes sharing one cache
                    directory, epoch 1: the bytes the server sent
  straight          the cold epoch again with no proxy in the path (its
                    relaying costs CPU on the same cores); bytes not counted

--block-size sets Garage's block_size (default 1 MiB): Garage reads, checks
and copies a whole block for each range request, so it sets the server's
work per frame. --server-core runs Garage and the proxy on the last core and
this process (the local runs too) on the others: the server's CPU is then not
the loader's, as with a store on other machines; without it all share the
cores, and the server's work per request bounds the cold epochs.

--cache-root puts the node caches in DIR (default: the run's temporary
directory). Where the cache lives matters on ext4 without a journal: there
each file created looks past every inode deleted in the last minutes (ext4
does so only without a journal), which the earlier runs' caches leave many
of, and a cold epoch creates a file per clip. This machine's root file
system has no journal; a journaled ext4 in a file, mounted with -o loop, is
a node's usual local disk.

Bytes are the server's (proxy), headers included; data = the data objects'
size; decoded = the bytes of the records of the frames the epoch decoded. CPU seconds: the loader (this process, and the two ranks' processes),
Garage's and the proxy's, all on the same cores here; "the transfer alone"
fetches every chunk through a fresh cache without decoding anything.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from timing import logger

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = dict(frames=8, sampling="segments", resize=128, size=112, crop="random", flip=True,
                batch_size=8, threads=2, seed=0)


log = logger("bench_s3")


def copies(src: Path, out: Path, k: int) -> None:
    """`k` copies of `src` in `out`: chunk `c * n + m` is chunk `m` of copy
    `c`, its data file a hard link, its ids suffixed `_x<c>`."""
    metas = sorted(p for p in src.iterdir() if p.name.startswith("meta_"))
    numbers = [int(p.name[len("meta_"):-len(".gmeta")]) for p in metas]
    n = max(numbers) + 1
    out.mkdir(parents=True)
    for c in range(k):
        for number, meta in zip(numbers, metas):
            chunk = c * n + number
            os.link(src / f"data_{number}.gulp", out / f"data_{chunk}.gulp")
            items = json.loads(meta.read_text())
            renamed = {f"{i}_x{c}": item for i, item in items.items()}
            (out / f"meta_{chunk}.gmeta").write_text(json.dumps(renamed))
    labels = src / "label2idx.json"
    if labels.exists():
        shutil.copy(labels, out / "label2idx.json")


def start_garage(state: Path, block_size: int | None) -> int:
    """Starts Garage in `state` (scripts/env/garage.sh), sets this process's
    AWS_* variables and GULP_S3_BUCKET for it, and returns its pid."""
    env = dict(os.environ)
    if block_size:
        env["GULP_GARAGE_BLOCK_SIZE"] = str(block_size)
    env_text = subprocess.run(
        [str(ROOT / "scripts" / "env" / "garage.sh"), "start", str(state)],
        check=True, capture_output=True, text=True, env=env).stdout
    for line in env_text.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        os.environ[key] = value
    return int((state / "garage.pid").read_text())


def server_options(parser: argparse.ArgumentParser, server_core_help: str) -> None:
    """--block-size (Garage's) and --server-core."""
    parser.add_argument("--block-size", type=int,
                        help="Garage's block_size in bytes (default: Garage's, 1 MiB)")
    parser.add_argument("--server-core", action="store_true", help=server_core_help)


def server_cores(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """This process's cores, checked against --server-core."""
    cores = sorted(os.sched_getaffinity(0))
    if args.server_core and len(cores) < 2:
        parser.error("--server-core needs at least 2 cores")
    return cores


def pin_server(pids: list[int], cores: list[int]) -> None:
    """Every thread of `pids` on the last of `cores` (those they start later
    inherit it), then this process on the others, before it starts any."""
    for pid in pids:
        subprocess.run(["taskset", "-a", "-p", "-c", str(cores[-1]), str(pid)],
                       check=True, capture_output=True)
    os.sched_setaffinity(0, cores[:-1])


def upload(local: Path, url: str) -> None:
    """The files of `local` to the prefix `url` (the s3_put example)."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "gulp-store", "--example",
                    "s3_put"], check=True, cwd=ROOT)
    subprocess.run([str(ROOT / "target" / "release" / "examples" / "s3_put"), str(local), url],
                   check=True)


class Proxy:
    def __init__(self, upstream: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "scripts" / "ci" / "s3_proxy.py"), "--upstream", upstream],
            stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        port, control = self.process.stdout.readline().split()
        self.url, self.control = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{control}"

    def call(self, path: str, method: str = "POST") -> Any:
        with urllib.request.urlopen(urllib.request.Request(self.control + path, method=method),
                                    timeout=10) as r:
            return json.load(r)

    def stats(self) -> dict[str, Any]:
        return self.call("/stats", "GET")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


RECORDS: dict[str, list[int]] = {}


def epoch(loader: Any, number: int) -> tuple[float, int, int]:
    """Seconds, clips and bytes of the records decoded of epoch `number`."""
    loader.set_epoch(number)
    start = time.perf_counter()
    clips = decoded = 0
    for b in loader:
        clips += len(b)
        for i, row in zip(b.ids, b.indices.tolist()):
            decoded += sum(RECORDS[i][k] for k in row)
    return time.perf_counter() - start, clips, decoded


def report(args: argparse.Namespace, rows: list[dict[str, Any]], items: int, chunks: int,
           data: int, cores: list[int], caches: Path) -> None:
    """The table of `rows`, and the JSON file when asked for."""
    local_rate = rows[0]["clips_per_s"]
    print(f"# gulp.ClipLoader over a bucket (Garage on loopback) vs local disk\n")
    print(f"{items} items in {chunks} chunks, {data / 1e6:.0f} MB of data objects "
          f"({args.copies} copies of {args.dir}); {PIPELINE}; Garage's block size "
          f"{args.block_size or 'its default'}; "
          + (f"the server and the proxy on core {cores[-1]}, the loader on {cores[:-1]}"
             if args.server_core else f"everything on cores {cores}")
          + f"; the node caches in {caches.parent if args.cache_root else 'the temporary directory'}"
          + "\n")
    print("| run | s | clips/s | ÷ local | MB from the server | ÷ data | ÷ decoded | "
          "requests | CPU s: loader | Garage | proxy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        rate = (f"{r['clips_per_s']:.1f} | {r['clips_per_s'] / local_rate:.2f}"
                if r["clips"] else "- | -")
        per_decoded = f"{r['bytes'] / r['decoded']:.2f}" if r["decoded"] else "-"
        sent = (f"{r['bytes'] / 1e6:.1f} | {r['bytes'] / data:.3f} | {per_decoded} | "
                f"{r['requests']}" if r["bytes"] is not None else "- | - | - | -")
        print(f"| {r['run']} | {r['seconds']:.2f} | {rate} | {sent} | "
              f"{r['loader_cpu_s']:.1f} | {r['server_cpu_s']:.1f} | {r['proxy_cpu_s']:.1f} |")
    five = [r for r in rows if r["run"].startswith("bucket, cache holding the dataset")]
    total = sum(r["bytes"] for r in five)
    print(f"\nThe cache holding the dataset, {len(five)} epochs: {total / 1e6:.1f} MB from the "
          f"server, {total / data:.3f} × the data objects.")
    if args.json:
        args.json.write_text(json.dumps(dict(items=items, chunks=chunks, data=data,
                                             rows=rows), indent=1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=5,
                        help="epochs through the cache that holds the dataset (default 5)")
    parser.add_argument("--epochs-only", action="store_true",
                        help="only the local, no-cache and cache-holding-the-dataset runs")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--server-pid", type=int,
                        help="use the S3 server the AWS_* variables and GULP_S3_BUCKET name (its "
                             "process for the CPU column) instead of starting Garage")
    parser.add_argument("--cache-root", type=Path,
                        help="the node caches here (default: the run's temporary directory)")
    server_options(parser, "the server and the proxy on the last core, the loader on the others")
    args = parser.parse_args()
    cores = server_cores(parser, args)
    import gulp

    work = Path(tempfile.mkdtemp(prefix="gulp-bench-s3."))
    caches = Path(tempfile.mkdtemp(prefix="gulp-bench-s3-caches.", dir=args.cache_root)) \
        if args.cache_root else work
    garage_state = work / "garage"
    try:
        if args.server_pid is None:
            garage_pid = start_garage(garage_state, args.block_size)
        else:
            garage_pid = args.server_pid
        proxy = Proxy(os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1])
        if args.server_core:
            pin_server([garage_pid, proxy.process.pid], cores)
        local = work / "data"
        copies(args.dir, local, args.copies)
        data = sum(p.stat().st_size for p in local.glob("data_*.gulp"))
        meta = sum(p.stat().st_size for p in local.glob("meta_*.gmeta"))
        chunks = len(list(local.glob("data_*.gulp")))
        url = f"s3://{os.environ['GULP_S3_BUCKET']}/bench"
        upload(local, url)
        garage_url = os.environ["AWS_ENDPOINT_URL"]
        os.environ["AWS_ENDPOINT_URL"] = proxy.url
        here = gulp.GulpDirectory(str(local))
        items = len(here)
        RECORDS.update((i, [fi[2] for fi in m["frame_info"]])
                       for i, m in here.merged_meta_dict.items())
        log(f"{items} items in {chunks} chunks, {data / 1e6:.0f} MB of data objects; {url}")

        rows: list[dict[str, Any]] = []

        def cpu() -> dict[str, float]:
            """CPU seconds so far: the loader (this process and its waited-for
            children: decoding and fetching), Garage, the counting proxy."""
            own = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            return dict(loader=own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
                        server=cpu_ticks(garage_pid) / 100,
                        proxy=cpu_ticks(proxy.process.pid) / 100)

        def start() -> tuple[dict[str, Any], dict[str, float], float]:
            return proxy.stats(), cpu(), time.perf_counter()

        def row(name: str, clips: int, began: tuple[dict[str, Any], dict[str, float], float] | None,
                seconds: float | None = None, counted: bool = True, decoded: int = 0) -> None:
            """A row from `began` (start()) to now; `seconds` if timed apart."""
            after, now = proxy.stats(), cpu()
            before, c0, t0 = began or (after, now, time.perf_counter())
            if seconds is None:
                seconds = time.perf_counter() - t0
            down = after["bytes_down"] - before["bytes_down"]
            reqs = sum(after["requests"].values()) - sum(before["requests"].values())
            rows.append(dict(run=name, seconds=seconds, clips=clips, clips_per_s=clips / seconds,
                             bytes=down if counted else None, requests=reqs if counted else None,
                             decoded=decoded,
                             **{k + "_cpu_s": now[k] - c0[k] for k in now}))
            log(f"{name}: {clips / seconds:.1f} clips/s, {down / 1e6:.1f} MB through the proxy, "
                f"{reqs} requests")

        # Local: the page cache warm.
        for p in local.iterdir():
            p.read_bytes()
        loader = gulp.ClipLoader(str(local), **PIPELINE)
        runs = []
        for e in range(2):
            began = start()
            seconds, clips, decoded = epoch(loader, e)
            runs.append((seconds, clips, decoded, began))
        seconds, clips, _, began = min(runs, key=lambda r: r[0])
        # The CPU columns of this row are the slower epoch's at worst.
        row("local directory (best of 2 epochs)", clips, began, seconds)

        # The transfer alone: every data object fetched through a cache, no
        # decoding (one frame read per chunk).
        gd = gulp.GulpDirectory(url, cache_dir=str(caches / "cache-fetch"), cache_fetch="chunks")
        firsts = [gd._native.chunk_ids(i)[0] for i in range(gd.num_chunks)]
        began = start()
        for i in firsts:
            gd.raw(i, [0])
        row("the transfer alone: every chunk fetched, nothing decoded", 0, began)
        del gd

        def remote(name: str, cache: Path | None, epochs: int, **extra: Any) -> None:
            loader = gulp.ClipLoader(url, cache_dir=str(cache) if cache else False, **PIPELINE,
                                     **extra)
            for e in range(epochs):
                began = start()
                seconds, clips, decoded = epoch(loader, e)
                row(f"{name}, epoch {e + 1}", clips, began, seconds, decoded=decoded)

        remote("bucket, no cache", None, 1)
        remote("bucket, cache holding the dataset", caches / "cache-all", args.epochs)
        if args.epochs_only:
            report(args, rows, items, chunks, data, cores, caches)
            proxy.process.kill()
            return 0
        remote("bucket, cache limit 10 %, full shuffle", caches / "cache-tenth", 2,
               cache_limit=(data + meta) // 10)
        remote("bucket, cache limit 25 %, shuffle='chunks', cache_fetch='chunks'",
               caches / "cache-quarter", 1, cache_limit=(data + meta) // 4, shuffle="chunks",
               chunk_window=1, cache_fetch="chunks")

        code = ("import sys, time, gulp\n"
                f"loader = gulp.ClipLoader(sys.argv[1], cache_dir=sys.argv[2], rank=int(sys.argv[3]),"
                f" world_size=2, **{dict(PIPELINE, threads=1)!r})\n"
                "for batch in loader: pass\n")
        began = start()
        procs = [subprocess.Popen([sys.executable, "-c", code, url, str(caches / "cache-2"),
                                   str(r)])
                 for r in range(2)]
        assert all(p.wait() == 0 for p in procs)
        row("2 ranks in 2 processes, one cache, epoch 1", items, began)

        # Without the proxy in the path (its relaying costs CPU on these same
        # cores): the cold epoch straight from Garage, in a process of its
        # own (a process keeps its first endpoint), bytes not counted.
        code = ("import sys, time, gulp\n"
                f"loader = gulp.ClipLoader(sys.argv[1], cache_dir=sys.argv[2], **{PIPELINE!r})\n"
                "start = time.perf_counter()\n"
                "clips = sum(len(b) for b in loader)\n"
                "print(time.perf_counter() - start, clips)\n")
        began = start()
        out = subprocess.run([sys.executable, "-c", code, url, str(caches / "cache-direct")],
                             check=True, capture_output=True, text=True,
                             env=dict(os.environ, AWS_ENDPOINT_URL=garage_url)).stdout.split()
        row("straight from Garage (no proxy), cache holding the dataset, epoch 1", int(out[1]),
            began, float(out[0]), counted=False)

        report(args, rows, items, chunks, data, cores, caches)
        proxy.process.kill()
    finally:
        subprocess.run([str(ROOT / "scripts" / "env" / "garage.sh"), "stop", str(garage_state)],
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
        if caches != work:
            shutil.rmtree(caches, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
