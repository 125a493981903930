"""What training loops rely on: fork and spawn workers, the GIL released
while decoding, no memory growth over many reads."""

import multiprocessing
import os
import pickle
import threading
import time

import numpy as np
import pytest

import gulp
from conftest import ffmpeg_frames, write_chunks


def checksums(gd, ids):
    return {i: [int(f.sum()) for f in gd[i][0]] for i in ids}


_PARENT = None


def _child_sums(ids):
    # Runs in a forked child, with the parent's open directory.
    return checksums(_PARENT, ids), [bytes(m) for m in _PARENT.raw(ids[0])]


def test_directory_opened_before_fork_works_in_children(any_dir):
    global _PARENT
    _PARENT = gulp.GulpDirectory(any_dir)
    ids = _PARENT.ids()
    expected = checksums(_PARENT, ids)  # maps and views exist before the fork
    raw = [bytes(m) for m in _PARENT.raw(ids[0])]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map(_child_sums, [ids[:4], ids[4:], ids[::-1]])
    merged = {}
    for sums, child_raw in results:
        merged.update(sums)
        assert child_raw in ([bytes(m) for m in _PARENT.raw(i)] for i in ids)
    assert merged == expected
    assert results[0][1] == raw


def _spawned_sums(gd):
    return checksums(gd, gd.ids())


def test_directory_pickles_for_spawned_workers(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    clone = pickle.loads(pickle.dumps(gd))
    assert checksums(clone, gd.ids()) == checksums(gd, gd.ids())
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_spawned_sums, (gd,)) == checksums(gd, gd.ids())


@pytest.fixture(scope="module")
def large_dir(tmp_path_factory):
    """Items of 640x480 frames: enough decoding per call to time threads."""
    frames = ffmpeg_frames("testsrc2", (640, 480), 12)
    items = [{"id": f"v{i}", "meta": {"i": i}, "frames": frames} for i in range(4)]
    return write_chunks(gulp.fileio, str(tmp_path_factory.mktemp("large") / "d"), items, 2)


def _read_intervals(gd, reads):
    """Each thread's (start, end) of every gd[id] call."""
    ids = gd.ids()
    intervals = [[], []]

    def work(mine):
        for k in range(reads):
            start = time.perf_counter()
            gd[ids[k % len(ids)]]
            mine.append((start, time.perf_counter()))

    workers = [threading.Thread(target=work, args=(mine,)) for mine in intervals]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return intervals


def _overlap(a, b):
    return sum(max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in a for s2, e2 in b)


def test_two_threads_decode_at_the_same_time(large_dir):
    """Decoding releases the GIL: two threads' calls overlap in time. With
    the GIL held through a call, one thread's calls would fit between the
    other's and overlap only at their edges. (Whether that makes two
    threads twice as fast depends on free cores: scripts/bench/bench_python.py
    measures it.)"""
    gd = gulp.GulpDirectory(large_dir)
    gd[gd.ids()[0]]  # warm up: maps, meta
    a, b = _read_intervals(gd, 8)
    busy = sum(e - s for s, e in a) + sum(e - s for s, e in b)
    shared = _overlap(a, b)
    print(f"time both threads were inside a call: {2 * shared / busy:.0%} of the calls' time")
    assert 2 * shared / busy > 0.5


def test_other_threads_run_during_a_decode(large_dir):
    """While one call decodes 48 frames, a pure-Python thread keeps running."""
    gd = gulp.GulpDirectory(large_dir)
    ids = gd.ids()
    gd[ids[0]]
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    before = counter[0]
    start = time.perf_counter()
    for i in ids:
        gd[i]
    elapsed = time.perf_counter() - start
    during = counter[0] - before
    stop.set()
    t.join()
    assert elapsed > 0.02
    # With the GIL held by the decoding, the spinner would advance only at
    # the 5 ms switch interval between calls: a few hundred steps at most.
    assert during > 10_000, during


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_memory_growth_over_100k_reads(any_dir):
    gd = gulp.GulpDirectory(any_dir)
    for _ in range(2000):
        gd["single"]
        gd.raw("101", [0, -1])
    before = _rss_bytes()
    for _ in range(100_000):
        frames, meta = gd["single", ::1]
        raw = gd.raw("101", [0, -1])
    assert frames[0].shape == (32, 48, 3) and len(raw) == 2 and meta["idx"] == 6
    grown = _rss_bytes() - before
    print(f"RSS growth over 100k reads: {grown / 1e6:.2f} MB")
    # 10 bytes per call would be 2 MB.
    assert grown < 2e6


def test_no_memory_growth_in_the_other_calls(any_dir, tmp_path):
    gd = gulp.GulpDirectory(any_dir)
    frame = gd["single"][0][0]
    jpeg = bytes(gd.raw("single")[0])
    calls = [
        lambda: gd.read("gray-clip", [0], dct_scale="1/2", region=(0, 0, 8, 8)),
        lambda: gd.meta("100"), lambda: gd.item("single"), lambda: gd.shapes("single"),
        lambda: gd.frame_count("101"), lambda: "100" in gd,
        lambda: gulp.utils.img_to_jpeg_bytes(frame), lambda: gulp.utils.jpeg_bytes_to_img(jpeg),
        lambda: gulp.utils.resize_by_short_edge(frame, 16),
    ]
    for call in calls:
        for _ in range(500):
            call()
    before = _rss_bytes()
    for _ in range(20_000):
        for call in calls:
            call()
    grown = _rss_bytes() - before
    print(f"RSS growth over 20k rounds of {len(calls)} calls: {grown / 1e6:.2f} MB")
    assert grown < 2e6


@pytest.fixture(scope="module")
def long_dir(tmp_path_factory):
    """Items above the one-mapping threshold (8 MB decoded): 12 frames of
    640x480 (11 MB) and 20 (18 MB), and one of 640x480 frames with a
    320x240 frame among them (several sizes: one buffer per frame)."""
    big = ffmpeg_frames("testsrc2", (640, 480), 20)
    small = ffmpeg_frames("mandelbrot", (320, 240), 1)
    items = [
        {"id": "a", "meta": {}, "frames": big[:12]},
        {"id": "b", "meta": {}, "frames": big},
        {"id": "mixed", "meta": {}, "frames": big[:10] + small + big[10:14]},
    ]
    return write_chunks(gulp.fileio, str(tmp_path_factory.mktemp("long") / "d"), items, 3)


def _anon_bytes():
    with open("/proc/self/statm") as f:
        _, resident, shared = map(int, f.read().split()[:3])
    return (resident - shared) * os.sysconf("SC_PAGE_SIZE")


def test_long_items_decode_as_frame_by_frame(long_dir):
    """An item decoded into one mapping gives the pixels, shapes and flags
    of single-frame reads (each in its own buffer), also with several frame
    sizes in the item."""
    gd = gulp.GulpDirectory(long_dir)
    for id_ in ("a", "b", "mixed"):
        frames, _ = gd[id_]
        singles = [gd.read(id_, [k])[0] for k in range(len(frames))]
        assert [f.shape for f in frames] == [s.shape for s in singles]
        assert all(np.array_equal(f, s) for f, s in zip(frames, singles))
        assert all(f.flags.writeable and f.flags.c_contiguous for f in frames)
    shapes = [f.shape for f in gd["mixed"][0]]
    assert shapes[10] == (240, 320, 3) and shapes[0] == shapes[-1] == (480, 640, 3)


def test_arrays_of_a_long_item_outlive_later_reads(long_dir):
    """The mapping is reused only once no array (or view of one) of the
    item it held is alive: later reads never write into live frames."""
    gd = gulp.GulpDirectory(long_dir)
    kept, _ = gd["a"]
    expected = [f.copy() for f in kept]
    view = gd["b"][0][19][100:200, 50:60]  # a view keeps its item's mapping
    view_copy = view.copy()
    for _ in range(3):
        for id_ in ("b", "a", "mixed"):
            frames, _ = gd[id_]
            frames[0][:] = 7  # writing into the current item's frames
            del frames
    assert all(np.array_equal(k, e) for k, e in zip(kept, expected))
    assert np.array_equal(view, view_copy)


def test_long_items_reuse_their_memory(long_dir):
    """A loop over long items holds the items it keeps alive (here the
    last while the next decodes, as `frames = gd[id]` in a loop does) plus
    one spare, not one more per call."""
    gd = gulp.GulpDirectory(long_dir)
    for _ in range(3):
        for id_ in ("a", "b", "mixed"):
            frames, _ = gd[id_]
    before = _anon_bytes()
    for _ in range(100):
        for id_ in ("a", "b", "mixed"):
            frames, _ = gd[id_]
    grown = _anon_bytes() - before
    print(f"anonymous memory growth over 300 reads of long items: {grown / 1e6:.2f} MB")
    assert grown < 2e6
