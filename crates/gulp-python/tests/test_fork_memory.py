"""Forked DataLoader workers share the directory's index (issue 41): each
worker reading items at random adds little private memory, because
`gd[id]` parses that item's meta alone instead of parsing and keeping the
meta of every chunk it touches. The full-size measurement is
scripts/bench/bench_fork.py."""

import os
import random
import subprocess

import pytest

import gulp
from gulp import _gulp
from proc_memory import anonymous_private_dirty

ITEMS = 20_000
FRAMES = 30
PER_CHUNK = 500
WORKERS = 2
READS = 4_000


def _jpeg(tmp_path):
    path = tmp_path / "f.jpg"
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=16x16:rate=1", "-frames:v", "1", "-q:v", "3", str(path)],
                   check=True)
    return path.read_bytes()


@pytest.fixture(scope="module", params=["json", "msgpack"])
def big_dir(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"fork-{request.param}")
    jpeg = _jpeg(tmp)
    directory = tmp / "d"
    directory.mkdir()
    for chunk in range(ITEMS // PER_CHUNK):
        writer = _gulp.Writer(str(directory), chunk, meta_format=request.param, fsync=False)
        for i in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK):
            writer.append_jpegs(f"{i:07d}", {"label": "pushing something", "idx": i,
                                             "tags": ["a", "b", "c"]}, [jpeg] * FRAMES)
        writer.commit()
    return str(directory)


def _worker(gd, seed, out):
    before = anonymous_private_dirty()
    rng = random.Random(seed)
    n = 0
    for _ in range(READS):
        i = rng.randrange(ITEMS)
        frames, meta = gd[f"{i:07d}"]
        assert meta["idx"] == i
        n += len(frames)
    os.write(out, f"{anonymous_private_dirty() - before} {n}\n".encode())


def test_forked_workers_add_little_private_memory(big_dir):
    gd = gulp.GulpDirectory(big_dir)
    frames, meta = gd["0000000"]
    assert len(frames) == FRAMES and meta["idx"] == 0
    results = []
    for w in range(WORKERS):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(r)
                _worker(gd, w, wfd)
                code = 0
            finally:
                os._exit(code)
        os.close(wfd)
        with os.fdopen(r) as f:
            results.append(f.read())
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    for line in results:
        added, n = map(int, line.split())
        assert n == READS * FRAMES
        # The bound, 64 MB for 200,000 items, scaled to this size.
        # Parsing and keeping every chunk's meta came to 1.2-1.8 KB an item
        # (24-35 MB here).
        bound = 64_000_000 * ITEMS // 200_000
        assert added < bound, f"a worker added {added / 1e6:.1f} MB of anonymous memory"
