"""How fast `gulp serve` answers: start-up, first grid page, thumbnails.

    python3 scripts/bench/serve_bench.py GULP DIR [--thumbs 4000] [--threads 8]

Starts `GULP serve DIR --port 0` and prints: the time until it listens
(the directory's index read), the first grid page's time (the server just
started, nothing cached), a few more pages (sorted by id: the sort is made
on first use), then thumbnails of distinct items (decoded, none cached) and
the same thumbnails again (from the cache), per second, from `--threads`
clients with keep-alive connections. Run on demand (docs/serve.md), not in
the test command: timings on a shared machine are figures, not checks.
"""

import argparse
import http.client
import re
import subprocess
import threading
import time


def fetch(conn, path):
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    if answer.status != 200:
        raise RuntimeError(f"{path}: {answer.status} {body[:200]!r}")
    return body


def timed(host, port, path):
    conn = http.client.HTTPConnection(host, port)
    t = time.perf_counter()
    body = fetch(conn, path)
    return time.perf_counter() - t, body


def thumbs_per_second(host, port, paths, threads):
    errors = []

    def work(part):
        conn = http.client.HTTPConnection(host, port)
        try:
            for p in part:
                fetch(conn, p)
        except Exception as e:  # reported below
            errors.append(e)

    parts = [paths[k::threads] for k in range(threads)]
    workers = [threading.Thread(target=work, args=(p,)) for p in parts]
    t = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - t
    if errors:
        raise errors[0]
    return len(paths) / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("gulp")
    parser.add_argument("dir")
    parser.add_argument("--thumbs", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args()
    t0 = time.perf_counter()
    server = subprocess.Popen([args.gulp, "serve", args.dir, "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        listening = time.perf_counter() - t0
        host, port = re.search(r"http://([\d.]+):(\d+)/", line).groups()
        port = int(port)
        first, page = timed(host, port, "/d/0/items")
        total = int(re.search(rb'id="total" data-v="(\d+)"', page).group(1))
        print(f"{args.dir}: {total} items; listening after {listening:.2f} s; first grid page {first * 1000:.0f} ms")
        for path in ("/d/0/items?page=1000", "/d/0/items?prefix=1", "/d/0/items?sort=-id", "/d/0/items?sort=-id&page=2", "/"):
            t, _ = timed(host, port, path)
            print(f"  {path}: {t * 1000:.0f} ms")
        # Distinct items from across the directory, a page's worth at a time.
        per = 500
        ids = []
        for page in range(1, total // per + 2):
            if len(ids) >= args.thumbs:
                break
            _, body = timed(host, port, f"/d/0/items?per={per}&page={1 + (page * 97) % max(1, total // per)}")
            ids += re.findall(rb'data-id="([^"]*)"', body)
        ids = list(dict.fromkeys(ids))[: args.thumbs]
        paths = [f"/d/0/thumb?id={i.decode()}" for i in ids]
        cold = thumbs_per_second(host, port, paths, args.threads)
        warm = thumbs_per_second(host, port, paths, args.threads)
        print(f"  thumbnails: {cold:.0f}/s decoded ({len(paths)} distinct items, {args.threads} clients), {warm:.0f}/s from the cache")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
