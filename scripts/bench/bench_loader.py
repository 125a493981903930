#!/usr/bin/env python3
"""Training clips per second: gulp.ClipLoader vs gulpio2 and decord in
DataLoader-style worker processes, and the codec's limit, on the same items
in one run.

    .venv/bin/python scripts/bench/bench_loader.py [--quick] [--json FILE]
    .venv/bin/python scripts/bench/bench_loader.py --sources [--real DIR] [--rounds 2]

Every pipeline makes the same batches: 8 clips of 8 frames, TSN "segments"
sampling in training mode (one random frame in each of 8 equal segments of
the item), the short edge resized to 128, one random 112x112 crop and one
random horizontal flip per clip; uint8 [8, 8, 112, 112, 3] per batch, the
items in the same shuffled order for (a) and (b) (gulp shuffles with its own
seeded generator), the last incomplete batch dropped. The main process
receives every batch in order and reads a byte of each clip.

  (a) gulpio2   gulpio2.GulpDirectory(--real); per clip `gd[id, indices]`
                (simplejpeg, fast DCT, full size), PIL resize (bilinear),
                numpy crop and flip, np.stack; 2 worker processes (fork), as
                torch's DataLoader(num_workers=2, prefetch_factor=2,
                persistent_workers=True) runs them, without torch: each
                worker collates whole batches into shared memory and the main
                process gets them in order.
  (b) decord    decord 0.6.0 on the source mp4 of each item
                (--videos/<id>/<id>.mp4, opened per clip, one decoding thread
                per process), the same sampling on the frames the ingest
                took: frame i of the item is the source frame that the
                ingest's `ffmpeg -r 8` wrote as frame i (found before timing
                by matching frame MD5s of `ffmpeg -f framemd5` with and
                without `-r 8 -fps_mode cfr`, cached in the temporary
                directory; the source frame nearest to i/8 s when that
                fails), `get_batch` of those frames resized by decord
                (width/height) to the size (a) gets, numpy crop and flip;
                the same 2 worker processes. Installed into the running venv
                with pip when missing (--no-decord skips it; if it cannot be
                installed or imported the row is left out, with the reason).
  (c) codec     the bare_turbo example of gulp-io: 2 threads of libjpeg-turbo
                (fast DCT) decoding frames of --real held in memory, each at
                the smallest DCT scale n/8 whose short edge is still >= 128;
                frames/s / 8. No reading, resizing or cropping: the decoding
                a clip needs, at most. Three loops: `codec`, 8 frames of
                each item (the centres of 8 segments: frames weighted as
                clips weight them, by item, whatever the item's length: the
                codec limit); `codec_resample`, the same plus the resample a
                clip needs, bare (the centred crop of side 112/128 of the
                short edge to 112x112 with the loader's filter): the limit
                when the resample is work the decode-only loop leaves out,
                as on frames of short edge <= 144; `codec_frames`, every
                frame once (frames weighted by item length: the long items
                of a mixed set count hundreds of times). Built with
                `cargo build --release -p gulp-io --example bare_turbo`.
  (d) gulp      gulp.ClipLoader(--real, frames=8, sampling="segments",
                resize=128, size=112, crop="random", flip=True, batch_size=8,
                shuffle=True, seed=0, drop_last=True, threads=2), iterated;
                the row is left out while the package has no ClipLoader.

--real is a gulp (gulpio2-compatible) directory of video frames, by default
target/compare/real-8fps: scripts/compare.sh makes it with gulpio2's
gulp2_20bn_json_videos at --frame_rate 8, no resize, from the corpus of
scripts/bench/bench-corpus.sh (--videos/<id>/<id>.mp4).

--sources runs gulp alone in three configurations of the data, alternated for
--rounds rounds (default 2), and prints each run and its ratio to the first:
`single` (--real as it is), `mixture` (two directories made of --real's
chunks by hard links, even and odd chunks, each its own gulp.Source with a
weight of its size and samples_per_epoch the items: an epoch of the same
size) and `where` (--real with where= keeping the 9 items in 10 whose meta
does not hash to 0 mod 10, evaluated once when the loader is made). The
timed epochs are the same as (d)'s; what differs is the composition of the
epoch and the per-batch work of several sources.

--mixed DIR runs gulpio2, the codec loops and gulp (not decord) on each
frame-size class of the mixed-shapes set, DIR/<class>-x for class in all,
small, medium, large (scripts/bench/mixed_dirs.py; the clips repeated to 160
items or more, so that an epoch holds 20 batches, as a real dataset's many),
and prints one row per class.

Each pipeline runs in a fresh interpreter (`--worker NAME`; the heap of one
measurement changes the speed of the next). Each loader first makes one
warm-up batch (a one-batch epoch; gulp: the first batch of an iteration,
which is then dropped) and checks its shape; then the clock runs from the
start of the first timed epoch, its workers idle and nothing prefetched, to
the last batch: --epochs epochs, or by default as many whole epochs as it
takes to pass --seconds (10 s; 2 s with --quick), each started afresh as
`for batch in loader` does. The codec loop runs --passes passes after one
warm-up pass and counts the best. The machine should be quiet: every
pipeline uses 2 cores. Ratios are gulp / each other pipeline.
"""

import argparse
import hashlib
import json
import math
import mmap
import multiprocessing as mp
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from timing import log, ratio as same_run_ratio

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECORD_REQ = "decord==0.6.0"
PIPELINES = ("gulpio2", "decord", "codec", "gulp")
DESCRIPTIONS = {
    "gulpio2": "gulpio2 GulpDirectory + PIL, 2 processes",
    "decord": "decord VideoReader on the mp4, 2 processes",
    "codec": "bare libjpeg-turbo, 2 threads, DCT-scaled, 8 frames per item (codec limit)",
    "codec_resample": "the same + the loader's resample of a centred crop, bare",
    "codec_frames": "bare libjpeg-turbo, 2 threads, DCT-scaled, every frame once",
    "gulp": "gulp.ClipLoader, threads=2",
}
CLASSES = ("all", "small", "medium", "large")


# ----------------------------------------------------------------- sampling


def segment_indices(n, frames, rng):
    """TSN's training sampling: one random frame in each of `frames` equal
    segments of an item of `n` frames (segment i covers [i*n/T, (i+1)*n/T))."""
    out = np.empty(frames, np.int64)
    for i in range(frames):
        lo = i * n // frames
        hi = max(lo + 1, -(-(i + 1) * n // frames))
        out[i] = lo + rng.integers(hi - lo)
    return out


def resized_size(width, height, edge):
    """gulpio2's resize_by_short_edge: the short edge to `edge`, the long one
    scaled and truncated."""
    if height < width:
        return int(edge * width / height), edge
    return edge, int(edge * height / width)


def crop_flip(rng, width, height, size):
    """One random crop origin and flip for a clip."""
    return rng.integers(height - size + 1), rng.integers(width - size + 1), rng.random() < 0.5


def epoch_order(ids, seed, epoch):
    """The shuffled order of an epoch, the same for every pipeline."""
    return [ids[k] for k in np.random.default_rng([seed, epoch]).permutation(len(ids))]


def epoch_batches(plan, epoch):
    """[(ids, seed)] of an epoch; the last incomplete batch dropped."""
    order = epoch_order([it["id"] for it in plan["items"]], plan["seed"], epoch)
    b = plan["batch_size"]
    return [(order[k * b:(k + 1) * b], [plan["seed"], epoch, k]) for k in range(len(order) // b)]


# ----------------------------------------------------------------- worker processes


class ProcLoader:
    """torch's DataLoader(num_workers=W, prefetch_factor=P,
    persistent_workers=True) without torch: forked workers, batches sent to
    them in turn, each collated by its worker into a slot of shared memory,
    delivered to the main process in order (a view of the slot, valid until
    the next batch is asked for)."""

    def __init__(self, make_clip, plan, workers, prefetch):
        ctx = mp.get_context("fork")
        self.make_clip, self.plan = make_clip, plan
        self.workers, self.prefetch = workers, prefetch
        self.shape = (plan["batch_size"], plan["frames"], plan["size"], plan["size"], 3)
        n_slots = workers * prefetch + 1  # + the batch the main process holds
        self.buf = mmap.mmap(-1, n_slots * math.prod(self.shape))  # shared with the forks
        self.slots = np.frombuffer(self.buf, np.uint8).reshape(n_slots, *self.shape)
        self.labels = {it["id"]: it["label"] for it in plan["items"]}
        self.tasks = [ctx.SimpleQueue() for _ in range(workers)]
        self.results = ctx.Queue()
        self.procs = [ctx.Process(target=self._work, args=(w,), daemon=True) for w in range(workers)]
        for p in self.procs:
            p.start()

    def _work(self, w):
        while True:
            task = self.tasks[w].get()
            if task is None:
                return
            k, slot, ids, seed = task
            try:
                rng = np.random.default_rng(seed)
                clips = [self.make_clip(i, rng) for i in ids]
                np.stack(clips, out=self.slots[slot])
                labels = np.array([self.labels[i] for i in ids], np.int64)
                self.results.put((k, slot, labels, ids, None))
            except Exception:  # noqa: BLE001 (sent to the main process)
                self.results.put((k, slot, None, ids, traceback.format_exc()))

    def epoch(self, batches):
        """Yields (frames, labels, ids) for [(ids, seed)], in order."""
        free = list(range(len(self.slots)))
        done, sent = {}, 0

        def send():
            nonlocal sent
            ids, seed = batches[sent]
            self.tasks[sent % self.workers].put((sent, free.pop(), ids, seed))
            sent += 1

        while sent < min(len(batches), self.workers * self.prefetch):
            send()
        for k in range(len(batches)):
            while k not in done:
                r = self.results.get()
                if r[4] is not None:
                    raise RuntimeError(f"worker failed on {r[3]}:\n{r[4]}")
                done[r[0]] = r
            _, slot, labels, ids, _ = done.pop(k)
            if sent < len(batches):
                send()
            yield self.slots[slot], labels, ids
            free.append(slot)

    def close(self):
        for q in self.tasks:
            q.put(None)
        for p in self.procs:
            p.join()


def gulpio2_clip_maker(plan):
    import gulpio2
    from PIL import Image

    gd = gulpio2.GulpDirectory(plan["real"])
    items = {it["id"]: it for it in plan["items"]}
    t, s, edge = plan["frames"], plan["size"], plan["resize"]

    def make_clip(id_, rng):
        it = items[id_]
        frames, _meta = gd[id_, list(segment_indices(it["frames"], t, rng))]
        h, w = frames[0].shape[:2]
        rw, rh = resized_size(w, h, edge)
        y, x, flip = crop_flip(rng, rw, rh, s)
        out = []
        for f in frames:
            im = Image.fromarray(f) if f.ndim == 3 else Image.fromarray(f).convert("RGB")
            a = np.asarray(im.resize((rw, rh), Image.BILINEAR))
            a = a[y:y + s, x:x + s]
            out.append(a[:, ::-1] if flip else a)
        return np.stack(out)

    return make_clip


def decord_clip_maker(plan):
    import decord

    items = {it["id"]: it for it in plan["items"]}
    t, s, edge = plan["frames"], plan["size"], plan["resize"]

    def make_clip(id_, rng):
        it = items[id_]
        v = it["video"]
        rw, rh = resized_size(it["width"], it["height"], edge)
        vr = decord.VideoReader(v["path"], ctx=decord.cpu(0), width=rw, height=rh, num_threads=1)
        a = vr.get_batch([v["positions"][i] for i in segment_indices(it["frames"], t, rng)]).asnumpy()
        y, x, flip = crop_flip(rng, rw, rh, s)
        a = a[:, y:y + s, x:x + s]
        return a[:, :, ::-1] if flip else a

    return make_clip


def run_epochs(warm_up, epoch_iter, plan):
    """Checks the warm-up batch, then drives a loader for plan["epochs"]
    epochs (or whole epochs until plan["seconds"] have passed); the
    figures. The clock runs from the start of the first timed epoch (its
    workers idle, nothing prefetched) to the last batch."""
    frames, labels, ids = warm_up()
    shape = list(frames.shape)
    expected = [plan["batch_size"], plan["frames"], plan["size"], plan["size"], 3]
    if shape != expected or frames.dtype != np.uint8 or not len(labels) == len(ids) == shape[0]:
        raise RuntimeError(f"a batch of {shape} {frames.dtype} with {len(labels)} labels and {len(ids)} ids, "
                           f"not {expected} uint8")
    del frames, labels, ids
    clips = batches = epochs = check = 0
    t0 = time.perf_counter()
    while True:
        for frames, _labels, _ids in epoch_iter(epochs):
            check += int(frames[:, 0, 0, 0, 0].sum())  # the consumer reads the batch
            clips += frames.shape[0]
            batches += 1
        epochs += 1
        elapsed = time.perf_counter() - t0
        if (plan["epochs"] and epochs >= plan["epochs"]) or (not plan["epochs"] and elapsed >= plan["seconds"]):
            break
    return {"clips_per_s": clips / elapsed, "clips": clips, "batches": batches, "epochs": epochs,
            "seconds": elapsed, "batch_shape": shape, "checksum": check}


def worker(name, plan):
    """One pipeline, in this (fresh) interpreter."""
    if name in ("gulpio2", "decord"):
        make_clip = (gulpio2_clip_maker if name == "gulpio2" else decord_clip_maker)(plan)
        loader = ProcLoader(make_clip, plan, plan["workers"], plan["prefetch"])

        def warm_up():  # a one-batch epoch
            frames, labels, ids = next(iter(loader.epoch(epoch_batches(plan, 0)[:1])))
            return frames.copy(), labels, ids

        try:
            res = run_epochs(warm_up, lambda e: loader.epoch(epoch_batches(plan, e)), plan)
        finally:
            loader.close()
        if name == "decord":
            import decord
            res["version"] = decord.__version__
        else:
            import gulpio2
            res["version"] = gulpio2.__version__
        return res
    if name == "gulp":
        import gulp
        if not hasattr(gulp, "ClipLoader"):
            return {"skipped": f"gulp {gulp.__version__} has no ClipLoader yet"}
        sources, data = gulp_data(gulp, plan)
        loader = gulp.ClipLoader(
            sources, frames=plan["frames"], sampling="segments", resize=plan["resize"],
            size=plan["size"], crop="random", flip=True, batch_size=plan["batch_size"],
            shuffle=True, seed=plan["seed"], drop_last=True, threads=plan["workers"], **data)

        def warm_up():  # the first batch of an iteration then dropped
            it = iter(loader)
            b = next(it)
            del it
            return b.frames, b.labels, b.ids

        def epoch_iter(_epoch):
            for b in loader:
                yield b.frames, b.labels, b.ids

        res = run_epochs(warm_up, epoch_iter, plan)
        res["batches_per_epoch"] = len(loader)
        res["version"] = gulp.__version__
        return res
    raise ValueError(name)


def keep_nine_in_ten(meta):
    """The where= predicate of --sources: a 90 % subset fixed by the meta."""
    return zlib.crc32(json.dumps(meta, sort_keys=True).encode()) % 10 != 0


def gulp_data(gulp, plan):
    """The sources and data options of the gulp loader for plan["data"]
    (--sources), else --real as it is."""
    data = plan.get("data", {"kind": "single"})
    if data["kind"] == "mixture":
        halves = data["halves"]
        return ([gulp.Source(d, weight=n) for d, n in halves],
                {"samples_per_epoch": sum(n for _, n in halves)})
    if data["kind"] == "where":
        return plan["real"], {"where": keep_nine_in_ten}
    return plan["real"], {}


def split_in_two(real, out):
    """Two directories of `real`'s even and odd chunks (hard links, chunks
    renumbered from 0, label2idx.json copied); [(dir, items)]."""
    names = sorted(int(n[len("data_"):-len(".gulp")]) for n in os.listdir(real)
                   if n.startswith("data_") and n.endswith(".gulp"))
    if len(names) < 2:
        sys.exit(f"bench_loader.py: --sources needs a directory of 2 chunks or more, {real} has {len(names)}")
    halves = []
    for half in (0, 1):
        d = os.path.join(out, f"half-{half}")
        os.makedirs(d)
        items = 0
        for k, n in enumerate(names[half::2]):
            os.link(os.path.join(real, f"data_{n}.gulp"), os.path.join(d, f"data_{k}.gulp"))
            os.link(os.path.join(real, f"meta_{n}.gmeta"), os.path.join(d, f"meta_{k}.gmeta"))
            with open(os.path.join(real, f"meta_{n}.gmeta")) as f:
                items += len(json.load(f))
        labels = os.path.join(real, "label2idx.json")
        if os.path.exists(labels):
            shutil.copy(labels, d)
        halves.append((d, items))
    return halves


def measure_sources(a, real):
    """--sources: gulp on --real as it is, as a two-directory mixture and
    with a where= subset, alternated for --rounds rounds."""
    items, plan = read_plan(a, real)
    kinds = ("single", "mixture", "where")
    log(f"{real}: {len(items)} items; gulp as {', '.join(kinds)}, {a.rounds} rounds, "
        + (f"{a.epochs} epochs" if a.epochs else f"at least {plan['seconds']:g} s") + " per run; "
        f"load {os.getloadavg()}")
    subprocess.run(f"cat '{real}'/* > /dev/null", shell=True, check=True)  # warm the page cache
    runs = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="bench_loader-") as tmp:
        halves = split_in_two(real, tmp)
        timeout = max(300.0, 60 * plan["seconds"]) if not a.epochs else None
        for r in range(a.rounds):
            for kind in kinds:
                plan["data"] = {"kind": kind, "halves": halves}
                plan_path = os.path.join(tmp, f"plan-{kind}.json")
                with open(plan_path, "w") as f:
                    json.dump(plan, f)
                res = run_worker("gulp", plan_path, timeout)
                if "skipped" in res:
                    sys.exit(f"bench_loader.py: {kind}: {res['skipped']}")
                runs[kind].append(res)
                log(f"round {r + 1}, {kind}: {res['clips_per_s']:,.1f} clips/s "
                    f"({res['clips']} clips, {res['epochs']} epochs, {res['seconds']:.1f} s)")
    print(f"\ngulp.ClipLoader on {real} ({len(items)} items), batches of 8 clips x 8 frames, 112x112 "
          f"crops of the short edge resized to 128, 2 threads; clips/s per run, alternated; load "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| data | " + " | ".join(f"round {r + 1}" for r in range(a.rounds)) + " | ÷ single, per round |")
    print("|---|" + "---|" * (a.rounds + 1))
    for kind in kinds:
        rates = [res["clips_per_s"] for res in runs[kind]]
        ratios = [x / y["clips_per_s"] for x, y in zip(rates, runs["single"])]
        print(f"| {kind} | " + " | ".join(f"{x:,.1f}" for x in rates) + " | "
              + ", ".join(f"{q:.3f}" for q in ratios) + " |")
    if a.json:
        write_json(a, {"real": os.path.abspath(real), "items": len(items), "sources": runs})


# ----------------------------------------------------------------- the main process


def ensure_decord():
    """Imports decord (pip installing it into this venv when missing); its
    module, or the reason it cannot be used."""
    try:
        import decord
        return decord, None
    except ImportError:
        pass
    log(f"decord is missing: pip install {DECORD_REQ} (into {sys.prefix})")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-input", DECORD_REQ], capture_output=True, text=True)
    if r.returncode != 0:
        return None, f"pip install {DECORD_REQ} failed: {(r.stderr or r.stdout).strip()[-500:]}"
    try:
        import decord
        return decord, None
    except Exception as e:  # noqa: BLE001 (an import can fail in many ways)
        return None, f"import decord failed: {e!r}"


def frame_md5s(path, fps=None):
    """The MD5 of every frame ffmpeg decodes from `path` (at `fps` as the
    ingest's `ffmpeg -i path -r fps` writes them, when given)."""
    for sync in (["-fps_mode", "cfr"], ["-vsync", "cfr"]):
        rate = ["-r", f"{fps:g}", *sync] if fps else []
        r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", *rate,
                            "-f", "framemd5", "-"], capture_output=True, text=True)
        if r.returncode == 0:
            return [line.rsplit(",", 1)[1].strip() for line in r.stdout.splitlines()
                    if line and not line.startswith("#")]
        if not fps:
            break
    raise RuntimeError(f"ffmpeg -f framemd5 on {path}: {r.stderr.strip()[-300:]}")


def ingest_positions(path, fps, cache_dir):
    """Which source frame (decoding order index) each frame of the `-r fps`
    ingest is, cached by path, size and modification time."""
    st = os.stat(path)
    key = hashlib.sha256(f"{os.path.abspath(path)}|{st.st_size}|{st.st_mtime_ns}|{fps}".encode()).hexdigest()
    cached = os.path.join(cache_dir, key[:32] + ".json")
    try:
        with open(cached) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    first = {}
    for k, h in enumerate(frame_md5s(path)):
        first.setdefault(h, []).append(k)
    positions, last = [], 0
    for h in frame_md5s(path, fps):
        ks = first.get(h)
        if not ks:
            raise RuntimeError(f"{path}: an output frame matches no source frame")
        last = next((k for k in ks if k >= last), ks[-1])  # repeated pictures: the next one
        positions.append(last)
    with open(cached, "w") as f:
        json.dump(positions, f)
    return positions


def video_info(decord, items, videos, fps):
    """Per item: its source video's path, frame rate and frame count as
    decord sees them, and the source frame of each of the item's frames;
    the reason when a video is missing. Logs the items whose positions
    come from the nearest-frame rule."""
    cache_dir = os.path.join(tempfile.gettempdir(), "bench_loader-positions")
    os.makedirs(cache_dir, exist_ok=True)
    nearest = []

    def one(it):
        path = os.path.join(videos, it["id"], it["id"] + ".mp4")
        if not os.path.isfile(path):
            return f"{path} not found"
        vr = decord.VideoReader(path, num_threads=1)
        n, rate = len(vr), vr.get_avg_fps()
        h, w = vr[0].shape[:2]
        try:
            positions = ingest_positions(path, fps, cache_dir) if shutil.which("ffmpeg") else None
        except RuntimeError as e:
            log(f"decord: {e}")
            positions = None
        if positions is None or len(positions) != it["frames"] or max(positions) >= n:
            nearest.append(it["id"])
            positions = [min(int(i * rate / fps + 0.5), n - 1) for i in range(it["frames"])]
        it["video"] = {"path": path, "fps": rate, "frames": n, "width": w, "height": h,
                       "positions": positions}
        return None

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        reasons = [r for r in pool.map(one, items) if r]
    if nearest:
        log(f"decord: {len(nearest)} items ({', '.join(nearest[:4])}...) do not match an `ffmpeg -r {fps:g}` "
            "run frame for frame: the source frame nearest to i/fps is taken for them")
    return reasons[0] if reasons else None


def bare_turbo():
    """The bare_turbo binary, built when needed; (path, None) or (None, reason)."""
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    built = os.path.join(target, "release", "examples", "bare_turbo")
    reason = None
    if shutil.which("cargo"):
        r = subprocess.run(["cargo", "build", "--release", "-q", "-p", "gulp-io", "--example", "bare_turbo"],
                           cwd=REPO, capture_output=True, text=True)
        if r.returncode == 0:
            return built, None
        reason = "cargo build --release -p gulp-io --example bare_turbo failed: " + r.stderr.strip()[-500:]
    else:
        reason = "cargo not found"
    # An earlier build (this or compare.sh's), if it has the options used here.
    for b in (built, os.path.join(REPO, "target", "compare", "release", "examples", "bare_turbo")):
        if os.access(b, os.X_OK):
            log(f"{reason}; using {b}")
            return b, None
    return None, reason


def run_codec(args, plan):
    """The codec limits: {variant: figures} for the three loops of (c)."""
    exe, reason = bare_turbo()
    if exe is None:
        return {"skipped": reason}
    out = {}
    for variant, extra in (("codec", ["--per-item", str(plan["frames"])]),
                           ("codec_resample", ["--per-item", str(plan["frames"]), "--resample",
                                               f"{plan['resize']}:{plan['size']}"]),
                           ("codec_frames", [])):
        # Every frame once: of the items once (a -x directory repeats them).
        where = plan["real"] if extra else plan.get("once", plan["real"])
        cmd = [exe, where, "--threads", str(plan["workers"]), "--short-edge", str(plan["resize"]),
               "--passes", str(args.passes or (1 if args.quick else 5)), "--json", *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return {"skipped": f"{' '.join(cmd)} failed: {r.stderr.strip()[-500:]}"}
        res = json.loads(r.stdout.strip().splitlines()[-1])
        res["clips_per_s"] = res["frames_per_s"] / plan["frames"]
        out[variant] = res
    return out


def run_worker(name, plan_path, timeout):
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", name, "--plan", plan_path],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"skipped": f"no result within {timeout:.0f} s"}
    if r.returncode != 0:
        return {"skipped": f"failed (exit {r.returncode}): {r.stderr.strip()[-800:]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--real", default=os.path.join(REPO, "target/compare/real-8fps"),
                   help="a gulp directory of video frames (default: compare.sh's target/compare/real-8fps)")
    p.add_argument("--videos", default=os.path.join(REPO, "bench-corpus/videos"),
                   help="the source videos, <id>/<id>.mp4 (default: bench-corpus/videos)")
    p.add_argument("--fps", type=float, default=8, help="the frame rate --real was ingested at (default 8)")
    p.add_argument("--quick", action="store_true", help="about 2 s per pipeline (checking, not figures)")
    p.add_argument("--epochs", type=int, help="epochs per loader (default: whole epochs for --seconds)")
    p.add_argument("--seconds", type=float, help="least time per loader (default 10, 2 with --quick)")
    p.add_argument("--passes", type=int, help="timed passes of the codec loop (default 5, 1 with --quick)")
    p.add_argument("--only", help=f"comma-separated pipelines to run (of {','.join(PIPELINES)})")
    p.add_argument("--no-decord", action="store_true", help="leave decord out (no pip install)")
    p.add_argument("--seed", type=int, default=0, help="shuffling and augmentation seed (default 0)")
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    p.add_argument("--mixed", metavar="DIR", help="per frame-size class: DIR/<class>-x (scripts/bench/mixed_dirs.py)")
    p.add_argument("--sources", action="store_true",
                   help="gulp alone on --real as it is, as a two-directory mixture and with a where= subset")
    p.add_argument("--rounds", type=int, default=2, help="--sources: rounds of the three runs (default 2)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--plan", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        with open(a.plan) as f:
            plan = json.load(f)
        print(json.dumps(worker(a.worker, plan)))
        return

    names = a.only.split(",") if a.only else list(PIPELINES)
    if unknown := set(names) - set(PIPELINES):
        p.error(f"unknown pipelines {sorted(unknown)}")
    if a.no_decord and "decord" in names:
        names.remove("decord")
    if a.mixed:
        names = [n for n in names if n != "decord"]
        for cls in CLASSES:
            if not os.path.isdir(os.path.join(a.mixed, cls + "-x")):
                p.error(f"{a.mixed}/{cls}-x is not a directory (scripts/bench/mixed_dirs.py makes it)")
        per_class = {}
        for cls in CLASSES:
            log(f"== class {cls}")
            per_class[cls] = measure(a, os.path.join(a.mixed, cls + "-x"), names, quiet=True,
                                     once=os.path.join(a.mixed, cls))
        mixed_table(per_class, a)
        return
    if not os.path.isdir(a.real):
        p.error(f"{a.real} is not a directory (scripts/compare.sh makes target/compare/real-8fps)")
    if a.sources:
        measure_sources(a, a.real)
        return
    measure(a, a.real, names)


def read_plan(a, real):
    """The items of `real` and the settings every pipeline shares."""
    import gulpio2

    g2 = gulpio2.GulpDirectory(real)
    items = []
    for id_, m in g2.merged_meta_dict.items():
        meta = m["meta_data"][0] if m["meta_data"] else {}
        first, _ = g2[id_, [0]]  # the stored size (the ingest may have resized)
        h, w = first[0].shape[:2]
        items.append({"id": id_, "frames": len(m["frame_info"]), "label": int(meta.get("idx", -1)),
                      "width": w, "height": h})
    del g2
    plan = {"real": os.path.abspath(real), "items": items, "fps": a.fps, "frames": 8, "resize": 128,
            "size": 112, "batch_size": 8, "workers": 2, "prefetch": 2, "seed": a.seed, "epochs": a.epochs,
            "seconds": a.seconds or (2.0 if a.quick else 10.0)}
    too_small = [it["id"] for it in items if min(it["width"], it["height"]) < plan["size"]]
    if too_small:
        sys.exit(f"bench_loader.py: items smaller than {plan['size']} px: {too_small[:5]}")
    return items, plan


def measure(a, real, names, quiet=False, once=None):
    """Runs the pipelines `names` on the directory `real`; prints their
    table (unless `quiet`) and returns the figures. `once`: the directory
    of the same items once each, for the every-frame codec loop."""
    import gulpio2
    import simplejpeg

    names = list(names)
    items, plan = read_plan(a, real)
    if once:
        plan["once"] = os.path.abspath(once)
    results, versions = {}, {"gulpio2": gulpio2.__version__, "simplejpeg": simplejpeg.__version__}
    if "decord" in names:
        decord, reason = ensure_decord()
        if decord is not None:
            versions["decord"] = decord.__version__
            reason = video_info(decord, items, a.videos, a.fps)
        if reason:
            log(f"decord: left out: {reason}")
            results["decord"] = {"skipped": reason}
            names.remove("decord")
    try:
        import gulp
        versions["gulp"] = f"{gulp.__version__} ({gulp.CODEC})"
    except ImportError as e:
        versions["gulp"] = f"not importable: {e}"

    log(f"python {sys.version.split()[0]}, numpy {np.__version__}, "
        + ", ".join(f"{k} {v}" for k, v in versions.items()) + f"; load {os.getloadavg()}")
    subprocess.run(f"cat '{real}'/* > /dev/null", shell=True, check=True)  # warm the page cache
    if "decord" in names:
        for it in items:
            with open(it["video"]["path"], "rb") as f:
                f.read()
    n_clips = len(items) // plan["batch_size"] * plan["batch_size"]
    log(f"{real}: {len(items)} items, {sum(it['frames'] for it in items)} frames at {a.fps:g} fps; "
        f"{n_clips} clips per epoch; "
        + (f"{a.epochs} epochs" if a.epochs else f"at least {plan['seconds']:g} s") + " per loader")

    with tempfile.TemporaryDirectory(prefix="bench_loader-") as tmp:
        plan_path = os.path.join(tmp, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        timeout = max(300.0, 60 * plan["seconds"]) if not a.epochs else None
        for name in PIPELINES:
            if name not in names:
                continue
            log(f"{name}: running ...")
            if name == "codec":
                r = run_codec(a, plan)
                if "skipped" in r:
                    results[name] = r
                    log(f"{name}: left out: {r['skipped']}")
                else:
                    results.update(r)
                    log("codec: " + ", ".join(f"{k} {v['clips_per_s']:,.1f}" for k, v in r.items())
                        + " clips/s")
                continue
            r = run_worker(name, plan_path, timeout)
            results[name] = r
            if "skipped" in r:
                log(f"{name}: left out: {r['skipped']}")
            else:
                log(f"{name}: {r['clips_per_s']:,.1f} clips/s")

    gulp_rate = results.get("gulp", {}).get("clips_per_s")
    rows = []
    shown_names = [n for n in ("gulpio2", "decord", "codec", "codec_resample", "codec_frames", "gulp")
                   if n in results]
    if not quiet:
        print(f"\n{len(items)} items of {real}, batches of 8 clips x 8 frames, 112x112 crops of the "
              f"short edge resized to 128; load {os.getloadavg()[0]:.2f}\n")
        print("| pipeline | clips/s | frames/s | run | gulp ÷ this |\n|---|---|---|---|---|")
    for name in shown_names:
        r = results[name]
        if "skipped" in r:
            if not quiet:
                print(f"| {DESCRIPTIONS[name]} | - | - | left out: {r['skipped'].splitlines()[0][:100]} | - |")
            continue
        rate = r["clips_per_s"]
        is_codec = name.startswith("codec")
        n = r["passes"] if is_codec else r["epochs"]
        run = (f"best of {n} pass{'es' if n != 1 else ''}" if is_codec
               else f"{n} epoch{'s' if n != 1 else ''}, {r['seconds']:.1f} s")
        ratio = same_run_ratio(gulp_rate, rate) if gulp_rate and name != "gulp" else None
        r["ratio_gulp"] = ratio
        rows.append([name, rate, ratio])
        shown = "-" if ratio is None else f"{ratio:.2f}×"
        if not quiet:
            print(f"| {DESCRIPTIONS[name]} | {rate:,.1f} | {rate * plan['frames']:,.0f} | {run} | {shown} |")
    if gulp_rate is None and not quiet:
        print("\n(no gulp figure: no ratios)")
    out = {"real": plan["real"], "items": len(items), "clips_per_epoch": n_clips,
           "frames": sum(it["frames"] for it in items), "versions": versions,
           "settings": {k: plan[k] for k in ("frames", "resize", "size", "batch_size", "workers",
                                             "prefetch", "seed", "epochs", "seconds", "fps")},
           "pipelines": results, "rows": rows}
    if a.json and not quiet:
        write_json(a, out)
    return out


def write_json(a, body):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    body = {"date": time.strftime("%F %T"), "cpu": cpu, "nproc": os.cpu_count(),
            "kernel": "Linux " + platform.release(), "python": sys.version.split()[0],
            "numpy": np.__version__, "load_end": os.getloadavg(), "quick": a.quick, **body}
    with open(a.json, "w") as f:
        json.dump(body, f, indent=1)
    log(f"figures written to {a.json}")


def mixed_table(per_class, a):
    """One row per frame-size class: gulp, gulpio2 and the codec limits."""
    def rate(res, name):
        r = res["pipelines"].get(name, {})
        return r.get("clips_per_s")

    def ratio(x, y, target=None):
        if not x or not y:
            return "-"
        text = f"{same_run_ratio(x, y):.2f}"
        return f"**{text}**" if target and same_run_ratio(x, y) < target else text

    print(f"\nThe mixed-shapes set ({a.mixed}), one row per frame-size class (short edge: "
          "small <= 144, medium 145-383, large >= 384); clips/s, batches of 8 clips x 8 frames, "
          f"112x112 crops of the short edge resized to 128, 2 threads/processes; load "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| class | items (clips/epoch) | gulp.ClipLoader | gulpio2 + PIL | gulp ÷ gulpio2 | codec limit "
          "(decode) | gulp ÷ limit | decode + resample, bare | gulp ÷ that | every frame once | "
          "gulp ÷ that |\n|---|---|---|---|---|---|---|---|---|---|---|")
    for cls, res in per_class.items():
        g, g2 = rate(res, "gulp"), rate(res, "gulpio2")
        c, cr, cf = rate(res, "codec"), rate(res, "codec_resample"), rate(res, "codec_frames")
        fmt = lambda v: "-" if v is None else f"{v:,.1f}"  # noqa: E731
        print(f"| {cls} | {res['items']} ({res['clips_per_epoch']}) | {fmt(g)} | {fmt(g2)} | "
              f"{ratio(g, g2)} | {fmt(c)} | {ratio(g, c, 0.95)} | {fmt(cr)} | {ratio(g, cr, 0.95)} | "
              f"{fmt(cf)} | {ratio(g, cf)} |")
    if a.json:
        write_json(a, {"mixed": os.path.abspath(a.mixed), "classes": per_class})

if __name__ == "__main__":
    main()
