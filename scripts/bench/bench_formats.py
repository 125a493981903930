#!/usr/bin/env python3
"""gulp.ClipLoader against webdataset (tar shards) and litdata (optimize +
StreamingDataset) on the same clips, in one run, from local disk and from a
bucket (a real Garage on loopback, scripts/env/garage.sh): clips/s, the ratio
gulp / each, and the bytes each format stores.

    "$(scripts/env/torch-env.sh)" scripts/bench/bench_formats.py [--quick] [--json FILE]
        [--items 320] [--no-s3] [--wds-aws] [--corpora 170x128,320x240] [--work DIR]
        [--server-core] [--block-size BYTES]

The venv: torch is never in CI's .venv, so this runs in the venv of
scripts/env/torch-env.sh (torch, and the wheel of this checkout, built by
scripts/python-package.sh and installed with --force-reinstall; the command
above makes or updates it and prints its python). What is missing of
webdataset 1.0.2, litdata 0.2.76, boto3 (the uploads, presigned URLs) and
Pillow is pip installed into it on the first run, and awscli with
--wds-aws. Any venv with torch and the gulp wheel does (`pip install
--no-deps dist/gulp_video-*.whl`). ffmpeg makes the corpus. From the
bucket, Garage is built once by scripts/env/garage.sh into
~/.cache/gulp-tools if missing (about 16 minutes of both cores); --no-s3
runs the local part alone, --bucket-from-env uses the server and bucket
that the AWS_* variables and GULP_S3_BUCKET name. --server-core puts Garage
on the last core and the bucket rows' loaders on the others, as a server on
another machine would leave them (the local rows run first, on every core);
--block-size sets Garage's block size.

The corpus, made once into --work (default target/bench-formats) and reused
while --items is the same: for each shape (170x128: short edge 128, as
small-frame sets are stored; 320x240), --items videos of 16-32 frames at 8
fps in 3 classes (ffmpeg lavfi `testsrc2`, `mandelbrot`, `smptebars`, each
hue-shifted per item, with light temporal noise so that frames differ as
real ones do: about 0.2 bytes a pixel stored), `gulp ingest video-folder
--shuffle` into a gulp directory (JPEG q90 4:2:0, the ingest's default for
video), --items/8 items a chunk.
The same JPEG bytes (`gulp.GulpDirectory(dir).raw(id)`), in the same
shuffled order and with the same items per chunk/shard, are written:

* webdataset: `wds.ShardWriter("shard-%06d.tar", maxcount=...)`, one sample
  per clip as its docs lay out a multi-image sample: `frame000.jpg`,
  `frame001.jpg`, ... (the stored bytes) and `cls` (the class index);
* litdata: `litdata.optimize(fn, inputs=ids, output_dir, chunk_size=...)`,
  each item `{"jpegs": the frames' JPEG bytes joined, "sizes": uint32 [n],
  "label": int}`. A Python list of bytes cannot be stored as it is: the
  writer fixes the item's tree from the first item, and litdata 0.2.7x
  takes a list for one JSON leaf (bytes fail); its `JpegArray` stores a
  list of JPEGs but decodes every frame on reading. So one bytes leaf plus
  the sizes, which __getitem__ can slice.

Every loader makes the same batches (bench_loader.py's pipeline): TSN
"segments" sampling of 8 frames (one random frame in each of 8 equal
segments of the item), the short edge resized to 128 (170x128: none), one
random 112x112 crop and one random horizontal flip per clip, shuffled,
batches of 8 clips, uint8 [8, 8, 112, 112, 3], on the 2 cores:

* gulp: `gulp.ClipLoader(src, frames=8, sampling="segments", resize=128,
  size=112, crop="random", flip=True, batch_size=8, shuffle=True, seed=0,
  threads=2)`. From the bucket, `src` is `s3://bucket/prefix` (the AWS_*
  variables that garage.sh exports) and three rows: (1) as docs/object-
  storage.md trains from a bucket through a small node cache, the way the
  others read it: `shuffle="chunks", chunk_window=1, cache_fetch="chunks",
  cache_limit=` a quarter of the data but at least three chunks (the one
  read, the next, slack: the docs' advice; here 3 of the 8 chunks, 0.40 of
  the data): chunks in a random order, the clips of each shuffled, each
  chunk fetched whole once an epoch (the data an epoch through
  s3_proxy.py in 9 epochs of 10, 0.88x in one; with a quarter 0.97-0.99x;
  litdata 1.00x); the ratios are against this row; (2) the same with a
  quarter, two chunks here: a chunk and its successor often do not fit
  together, so fetching and decoding take turns; (3) the full
  shuffle of the local rows with `cache_dir=False`: a ranged GET per clip
  (its frames' span), on the same cores as Garage, which reads a whole
  block (1 MiB) for each.
* webdataset 1.0: `wds.WebDataset(urls, shardshuffle=100).shuffle(1000)
  .map(clip).batched(8, partial=False)` in `wds.WebLoader(batch_size=None,
  num_workers=2, persistent_workers=True)`, a torch DataLoader as its docs
  show (batching in the workers). No `.decode("pil")`: it would decode all
  16-32 frames of a sample; `clip` picks the 8 sampled `frameNNN.jpg` keys
  of the raw sample and decodes only those with PIL (what a user who reads
  clips of videos does). From the bucket: presigned `http://` URLs of the
  shards, which webdataset opens with curl (its `http(s)://` handler);
  with --wds-aws also `pipe:aws s3 cp --quiet s3://... -` as its docs and
  README show for S3, one AWS CLI process per shard (about 0.4 s of CPU
  each: at these shard sizes, 9-18 MB, the CLI's start dominates).
* litdata: `StreamingDataset(dir, shuffle=True, seed=0, transform=clip)` in
  `StreamingDataLoader(batch_size=8, num_workers=2, drop_last=True,
  persistent_workers=True)`; `clip` decodes the 8 sampled frames of the
  item with PIL. From the bucket: `StreamingDataset("s3://...",
  storage_options={"endpoint_url", "aws_access_key_id",
  "aws_secret_access_key", "region_name"})` (as its README shows for
  S3-compatible stores: boto3 for the index, chunk GETs by obstore, whose
  client options litdata fixes without allow_http: for Garage's plain-http
  endpoint this adds `allow_http` to them, else every GET fails) and
  `max_cache_size` half the chunks' bytes, so that chunks are deleted once
  read and every epoch downloads them again (with room for the whole set
  its cache would make later epochs local reads).

PIL (Pillow's libjpeg-turbo) decodes at full size and resizes with
BILINEAR (bench_loader.py's gulpio2 pipeline); 320x240 frames gain nothing
from Pillow's `draft` (DCT scaling by 1/2 would go below 128). Locally, one
more row bounds the two PIL pipelines: PIL decoding the 8 sampled frames of
every item alone, in 2 forked processes, the JPEGs in memory (no reading,
resizing, cropping, collating or sending; `--only pil`).

Each loader runs in a fresh interpreter. Timing (timing.py's rule, by
epochs): one untimed warm-up epoch (worker start, page cache, the first
downloads), then at least --epochs timed epochs (3; 1 with --quick) and
more until --min-seconds (4 s; 0 with --quick) have gone by; the figure is
the best epoch's clips/s, where an epoch starts as `for batch in loader`
does and ends with its last batch; the main process reads a byte of each
clip. Ratios are gulp / other, of this run. The machine should be quiet:
every loader uses both cores, and from the bucket Garage shares them
(the table gives Garage's CPU seconds an epoch: warm-up and timed epochs
averaged).
"""

import argparse
import contextlib
import functools
import gc
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import bench_loader
from timing import logger, ratio

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPORA = {"170x128": (170, 128), "320x240": (320, 240)}
CLASSES = ("testsrc2", "mandelbrot", "smptebars")
PIPELINE = dict(frames=8, resize=128, size=112, batch_size=8, workers=2)
LOADERS = ("gulp", "webdataset", "litdata", "pil")
CORPUS_VERSION = 2  # bump when the corpus recipe changes
TARGET = 3.0
# Installed into the running venv when missing: the versions this was run with.
REQUIREMENTS = {"webdataset": "webdataset==1.0.2", "litdata": "litdata==0.2.76", "boto3": "boto3",
                "PIL": "pillow"}

log = logger("bench_formats")


# ----------------------------------------------------------------- the clip, as PIL users make it


# TSN's training sampling and gulpio2's short-edge size, as the loader
# benchmark has them (the same clips for every pipeline).
segment_indices, resized_size = bench_loader.segment_indices, bench_loader.resized_size


_RNG = {}


def worker_rng():
    """A generator of this process's own (a DataLoader worker's)."""
    pid = os.getpid()
    if pid not in _RNG:
        _RNG[pid] = np.random.default_rng([pid, time.time_ns()])
    return _RNG[pid]


def clip_from_jpegs(jpegs, frames=8, edge=128, size=112):
    """uint8 [frames, size, size, 3]: `frames` frames of the JPEGs `jpegs`
    (sampled by segments) decoded by PIL, resized (short edge `edge`),
    cropped at one random place and flipped or not, the same for all."""
    from PIL import Image

    rng = worker_rng()
    out = np.empty((frames, size, size, 3), np.uint8)
    y = x = flip = None
    for k, i in enumerate(segment_indices(len(jpegs), frames, rng)):
        im = Image.open(io.BytesIO(jpegs[i]))
        if im.mode != "RGB":
            im = im.convert("RGB")
        rw, rh = resized_size(im.width, im.height, edge)
        if (rw, rh) != im.size:
            im = im.resize((rw, rh), Image.BILINEAR)
        if y is None:
            y, x = rng.integers(rh - size + 1), rng.integers(rw - size + 1)
            flip = rng.random() < 0.5
        a = np.asarray(im)[y:y + size, x:x + size]
        out[k] = a[:, ::-1] if flip else a
    return out


def wds_clip(sample):
    """webdataset: (clip, label) of a raw sample (`frameNNN.jpg`, `cls`)."""
    keys = sorted(k for k in sample if k.endswith(".jpg"))
    return clip_from_jpegs([sample[k] for k in keys]), int(sample["cls"])


def litdata_clip(item):
    """litdata: (clip, label) of an item (`jpegs`, `sizes`, `label`)."""
    blob = memoryview(item["jpegs"])
    ends = np.cumsum(item["sizes"], dtype=np.int64)
    starts = ends - item["sizes"]
    return clip_from_jpegs([blob[s:e] for s, e in zip(starts, ends)]), item["label"]


# ----------------------------------------------------------------- the loaders (worker processes)


def gulp_epochs(plan):
    import gulp

    options = {"shuffle": True, **plan.get("options", {})}
    loader = gulp.ClipLoader(plan["src"], frames=PIPELINE["frames"], sampling="segments",
                             resize=PIPELINE["resize"], size=PIPELINE["size"], crop="random",
                             flip=True, batch_size=PIPELINE["batch_size"], seed=0,
                             threads=PIPELINE["workers"], **options)

    def epoch(e):
        loader.set_epoch(e)
        for b in loader:
            yield b.frames, b.labels

    return epoch, f"gulp {gulp.__version__} ({gulp.CODEC})"


def webdataset_epochs(plan):
    import webdataset as wds

    ds = (wds.WebDataset(plan["urls"], shardshuffle=100)
          .shuffle(1000)
          .map(wds_clip)
          .batched(PIPELINE["batch_size"], partial=False))
    loader = wds.WebLoader(ds, batch_size=None, num_workers=PIPELINE["workers"],
                           persistent_workers=True, prefetch_factor=2)

    def epoch(_e):
        for frames, labels in loader:
            yield frames.numpy(), labels.numpy()

    return epoch, f"webdataset {wds.__version__}"


def litdata_epochs(plan):
    import litdata

    extra = {}
    if plan["where"] == "bucket":
        if plan["storage_options"]["endpoint_url"].startswith("http://"):
            # litdata fetches chunks with obstore, whose client options it
            # fixes without allow_http: a plain-http endpoint fails ("builder
            # error") unless they allow it.
            from litdata.streaming import downloader

            downloader._OBSTORE_CLIENT_OPTIONS["allow_http"] = "true"
        extra = dict(storage_options=plan["storage_options"], cache_dir=plan["cache_dir"],
                     max_cache_size=plan["max_cache_size"])
    ds = litdata.StreamingDataset(plan["src"], shuffle=True, seed=0, transform=litdata_clip,
                                  **extra)
    loader = litdata.StreamingDataLoader(ds, batch_size=PIPELINE["batch_size"],
                                         num_workers=PIPELINE["workers"], drop_last=True,
                                         persistent_workers=True, prefetch_factor=2)

    def epoch(_e):
        for frames, labels in loader:
            yield frames.numpy(), labels.numpy()

    return epoch, f"litdata {litdata.__version__}"


_FRAMES = []


def _decode_slice(bounds):
    """pil_bare's task: PIL decodes the 8 sampled frames of items [lo, hi)."""
    from PIL import Image

    lo, hi = bounds
    rng = worker_rng()
    for jpegs in _FRAMES[lo:hi]:
        for i in segment_indices(len(jpegs), PIPELINE["frames"], rng):
            Image.open(io.BytesIO(jpegs[i])).load()
    return hi - lo


def pil_bare_epochs(plan):
    """The limit of the PIL pipelines: the 8 sampled frames of every item
    decoded by PIL in 2 forked processes, the JPEGs in memory; no reading,
    resizing, cropping, collating or sending. An epoch yields no batches: it
    returns its clip count."""
    import multiprocessing as mp

    import gulp
    import PIL

    gd = gulp.GulpDirectory(plan["src"])
    _FRAMES[:] = [[bytes(b) for b in gd.raw(i)] for i in gd.ids()]
    pool = mp.get_context("fork").Pool(PIPELINE["workers"])
    n, k = len(_FRAMES), 4 * PIPELINE["workers"]
    slices = [(j * n // k, (j + 1) * n // k) for j in range(k)]

    def epoch(_e):
        return sum(pool.map(_decode_slice, slices))

    return epoch, f"Pillow {PIL.__version__}"


def measure(plan):
    """Warm-up epoch, then timed epochs (timing.py's rule); the figures."""
    make = {"gulp": gulp_epochs, "webdataset": webdataset_epochs, "litdata": litdata_epochs,
            "pil_bare": pil_bare_epochs}[plan["loader"]]
    epoch, version = make(plan)
    expected = [PIPELINE["batch_size"], PIPELINE["frames"], PIPELINE["size"], PIPELINE["size"], 3]
    check, e, warm = 0, 0, []

    def run(e):
        nonlocal check
        clips = 0
        t = time.perf_counter()
        if plan["loader"] == "pil_bare":
            return epoch(e), time.perf_counter() - t
        for frames, labels in epoch(e):
            shape = list(frames.shape)
            if shape != expected or frames.dtype != np.uint8 or len(labels) != len(frames):
                raise RuntimeError(f"a batch of {list(frames.shape)} {frames.dtype}, "
                                   f"{len(labels)} labels; not {expected} uint8")
            check += int(frames[:, 0, 0, 0, 0].sum())  # the consumer reads the batch
            clips += frames.shape[0]
        return clips, time.perf_counter() - t

    for _ in range(plan["warmup"]):
        warm.append(run(e))
        e += 1
    timed = []
    start = time.perf_counter()
    while len(timed) < plan["epochs"] or time.perf_counter() - start < plan["min_seconds"]:
        gc.collect()
        timed.append(run(e))
        e += 1
        if len(timed) >= 100:
            break
    best = max(clips / s for clips, s in timed)
    return {"clips_per_s": best, "epochs": [[c, s] for c, s in timed],
            "warmup": [[c, s] for c, s in warm], "clips_per_epoch": timed[0][0],
            "version": version, "checksum": check}


def run_worker(plan, tmp, timeout):
    path = os.path.join(tmp, f"plan-{plan['loader']}-{plan['where']}.json")
    with open(path, "w") as f:
        json.dump(plan, f)
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", path],
                           check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"skipped": f"no result within {timeout:.0f} s"}
    if r.returncode != 0:
        return {"skipped": f"failed (exit {r.returncode}): {r.stderr.strip()[-1500:]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------- the corpus


@contextlib.contextmanager
def stdout_to_stderr():
    """File descriptor 1 onto 2 (child processes included): stdout holds
    the results only."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def make_videos(out, width, height, items, seed):
    """`items` mp4s of 16-32 frames at 8 fps in 3 class folders."""
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(items):
        c = k % len(CLASSES)
        n, hue = int(rng.integers(16, 33)), int(rng.integers(0, 360))
        src = {"testsrc2": f"testsrc2=size={width}x{height}:rate=8",
               "mandelbrot": f"mandelbrot=size={width}x{height}:rate=8:"
                             f"start_scale={rng.uniform(0.5, 3):.3f}",
               "smptebars": f"smptebars=size={width}x{height}:rate=8"}[CLASSES[c]]
        path = os.path.join(out, CLASSES[c], f"v{k:05d}.mp4")
        jobs.append(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                     f"{src},hue=h={hue},noise=alls=3:allf=t", "-frames:v", str(n),
                     "-c:v", "libx264", "-preset", "ultrafast", "-crf", "16",
                     "-pix_fmt", "yuv420p", path])
    for c in CLASSES:
        os.makedirs(os.path.join(out, c), exist_ok=True)
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        for r in pool.map(lambda cmd: subprocess.run(cmd, check=False, capture_output=True,
                                                          text=True), jobs):
            if r.returncode != 0:
                sys.exit(f"bench_formats.py: ffmpeg failed: {r.stderr.strip()[-500:]}")


_GD = {}


def litdata_item(id_, gulp_dir, labels):
    """litdata.optimize's fn: the item `id_` of the gulp directory."""
    import gulp

    if gulp_dir not in _GD:
        _GD[gulp_dir] = gulp.GulpDirectory(gulp_dir)
    frames = [bytes(b) for b in _GD[gulp_dir].raw(id_)]
    return {"jpegs": b"".join(frames), "sizes": np.array([len(b) for b in frames], np.uint32),
            "label": labels[id_]}


def build_corpus(work, name, items, per_chunk):
    """Makes (or reuses) the corpus `name` in `work`; its paths and sizes."""
    import gulp
    import litdata
    import webdataset as wds

    width, height = CORPORA[name]
    base = os.path.join(work, name)
    paths = {k: os.path.join(base, k) for k in ("videos", "gulp", "wds", "litdata")}
    stamp_path = os.path.join(base, "corpus.json")
    want = {"version": CORPUS_VERSION, "items": items, "per_chunk": per_chunk,
            "size": [width, height]}
    try:
        with open(stamp_path) as f:
            stamp = json.load(f)
        if stamp["recipe"] == want and all(os.path.isdir(p) for p in paths.values()):
            log(f"{name}: reusing the corpus in {base}")
            return stamp
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    t = time.perf_counter()
    make_videos(paths["videos"], width, height, items, seed=[CORPUS_VERSION, width])
    log(f"{name}: {items} videos made in {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "gulp", "ingest", "video-folder", paths["videos"],
                        paths["gulp"], "--videos-per-chunk", str(per_chunk), "--shuffle",
                        "--seed", "0", "--quiet"], check=False, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_formats.py: gulp ingest failed: {r.stderr.strip()[-1000:]}")
    log(f"{name}: gulp ingest in {time.perf_counter() - t:.1f} s")

    gd = gulp.GulpDirectory(paths["gulp"])
    with open(os.path.join(paths["gulp"], "label2idx.json")) as f:
        label2idx = json.load(f)
    ids = gd.ids()  # chunk by chunk: the stored (shuffled) order
    labels = {i: int(label2idx[gd.meta(i)["label"]]) for i in ids}
    frames = sum(gd.frame_count(i) for i in ids)

    t = time.perf_counter()
    os.makedirs(paths["wds"])
    with stdout_to_stderr(), wds.ShardWriter(os.path.join(paths["wds"], "shard-%06d.tar"),
                                             maxcount=per_chunk, verbose=0) as sink:
        for k, i in enumerate(ids):
            sample = {"__key__": f"{k:06d}", "cls": labels[i]}
            for j, b in enumerate(gd.raw(i)):
                sample[f"frame{j:03d}.jpg"] = bytes(b)
            sink.write(sample)
    log(f"{name}: webdataset shards in {time.perf_counter() - t:.1f} s")
    del gd

    t = time.perf_counter()
    with stdout_to_stderr():
        litdata.optimize(fn=functools.partial(litdata_item, gulp_dir=paths["gulp"], labels=labels),
                         inputs=ids, output_dir=paths["litdata"], chunk_size=per_chunk,
                         num_workers=1, mode="overwrite")
    log(f"{name}: litdata chunks in {time.perf_counter() - t:.1f} s")

    stamp = {"recipe": want, "items": len(ids), "frames": frames, "paths": paths,
             "bytes": {"gulp": dir_bytes(paths["gulp"]), "webdataset": dir_bytes(paths["wds"]),
                       "litdata": dir_bytes(paths["litdata"])},
             "objects": {"gulp": len(os.listdir(paths["gulp"])),
                         "webdataset": len(os.listdir(paths["wds"])),
                         "litdata": len(os.listdir(paths["litdata"]))}}
    with open(stamp_path, "w") as f:
        json.dump(stamp, f, indent=1)
    shutil.rmtree(paths["videos"])  # the videos are not read again
    os.makedirs(paths["videos"])
    return stamp


# ----------------------------------------------------------------- the bucket


def s3_client():
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                        region_name=os.environ["AWS_REGION"],
                        config=Config(s3={"addressing_style": "path"}))


def upload(client, bucket, local, prefix):
    files = sorted(os.listdir(local))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: client.upload_file(os.path.join(local, n), bucket, f"{prefix}/{n}"),
                      files))


def bucket_plans(client, bucket, name, stamp, tmp, wds_aws):
    """The bucket's plans of the corpus `name` (uploaded first)."""
    t = time.perf_counter()
    for fmt, local in (("gulp", stamp["paths"]["gulp"]), ("wds", stamp["paths"]["wds"]),
                       ("litdata", stamp["paths"]["litdata"])):
        upload(client, bucket, local, f"{name}/{fmt}")
    log(f"{name}: uploaded to s3://{bucket}/{name}/ in {time.perf_counter() - t:.1f} s")
    shards = sorted(os.listdir(stamp["paths"]["wds"]))
    aws = aws_command()
    url = f"s3://{bucket}/{name}/gulp"
    by_chunks = {"shuffle": "chunks", "chunk_window": 1, "cache_fetch": "chunks"}
    quarter = stamp["bytes"]["gulp"] // 4
    largest = max(os.path.getsize(os.path.join(stamp["paths"]["gulp"], n))
                  for n in os.listdir(stamp["paths"]["gulp"]) if n.startswith("data_"))
    plans = {"gulp": {"src": url, "options": {
                 **by_chunks, "cache_dir": os.path.join(tmp, f"gulp-cache-{name}"),
                 "cache_limit": max(quarter, 3 * largest)}},
             "gulp, two chunks": {"loader": "gulp", "src": url, "options": {
                 **by_chunks, "cache_dir": os.path.join(tmp, f"gulp-cache-2-{name}"),
                 "cache_limit": quarter}},
             "gulp, full shuffle": {"loader": "gulp", "src": url,
                                    "options": {"cache_dir": False}}}
    plans["webdataset"] = {
        "urls": [client.generate_presigned_url("get_object", ExpiresIn=6 * 3600,
                                               Params={"Bucket": bucket, "Key": f"{name}/wds/{s}"})
                 for s in shards]}
    if wds_aws and aws:
        plans["webdataset, pipe:aws s3 cp"] = {
            "loader": "webdataset",
            "urls": [f"pipe:{aws} s3 cp --quiet s3://{bucket}/{name}/wds/{s} -" for s in shards]}
    elif wds_aws:
        log("no aws command (pip install awscli): webdataset's pipe:aws s3 cp left out")
    plans["litdata"] = {
        "src": f"s3://{bucket}/{name}/litdata",
        "storage_options": {"endpoint_url": os.environ["AWS_ENDPOINT_URL"],
                            "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
                            "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
                            "region_name": os.environ["AWS_REGION"]},
        "cache_dir": os.path.join(tmp, f"litdata-cache-{name}"),
        "max_cache_size": stamp["bytes"]["litdata"] // 2}
    return plans


def garage_binary():
    return os.path.join(os.environ.get("GULP_TOOLS", os.path.expanduser("~/.cache/gulp-tools")),
                        "garage", "bin", "garage")


# ----------------------------------------------------------------- the main process


def local_plans(stamp):
    paths = stamp["paths"]
    shards = sorted(os.listdir(paths["wds"]))
    return {"gulp": {"src": paths["gulp"]},
            "webdataset": {"urls": [os.path.join(paths["wds"], s) for s in shards]},
            "litdata": {"src": paths["litdata"]},
            "PIL decode alone": {"loader": "pil_bare", "src": paths["gulp"]}}


def run_set(name, where, plans, settings, tmp, only, server_pid=None):
    """Runs the plans {row name: plan} of one corpus and place; {row: figures}
    (with the server's CPU seconds an epoch when its pid is given)."""
    from bench_s3 import cpu_ticks

    out = {}
    for row, plan in plans.items():
        loader = plan.get("loader", row)
        if loader not in only and not (loader == "pil_bare" and "pil" in only):
            continue
        plan = dict(plan, loader=loader, where=where, **settings)
        log(f"{name}, {where}, {row}: running ...")
        ticks = cpu_ticks(server_pid) if server_pid else None
        res = run_worker(plan, tmp, settings["timeout"])
        if ticks is not None and "skipped" not in res:
            epochs = len(res["epochs"]) + len(res["warmup"])
            res["server_cpu_s_per_epoch"] = (cpu_ticks(server_pid) - ticks) / 100 / epochs
        out[row] = dict(res, loader=loader)
        if "skipped" in res:
            log(f"{name}, {where}, {row}: left out: {res['skipped']}")
        else:
            w = res["warmup"][0] if res["warmup"] else [0, 1]
            log(f"{name}, {where}, {row}: {res['clips_per_s']:,.1f} clips/s (best of "
                f"{len(res['epochs'])} epochs of {res['clips_per_epoch']} clips; warm-up epoch "
                f"{w[0] / w[1]:,.1f})")
    return out


def label(row, where):
    name = {"gulp": "gulp.ClipLoader, 2 threads",
            "gulp, full shuffle": "gulp.ClipLoader, 2 threads",
            "gulp, two chunks": "gulp.ClipLoader, 2 threads",
            "litdata": "litdata + PIL, 2 workers",
            "PIL decode alone": "PIL decoding the 8 frames alone, 2 processes (limit of the PIL "
                                "pipelines)"}.get(row, "webdataset + PIL, 2 workers")
    if where == "bucket":
        name += {"gulp": ", by chunks, cache of 3 chunks",
                 "gulp, two chunks": ", by chunks, cache of 25 % (2 chunks)",
                 "gulp, full shuffle": ", full shuffle, no cache",
                 "webdataset": ", presigned URLs (curl)",
                 "webdataset, pipe:aws s3 cp": ", pipe:aws s3 cp",
                 "litdata": ", chunks fetched each epoch"}[row]
    return name


def print_tables(results, corpora, load0, load1, settings, where):
    print(f"\nbench_formats.py: clips/s, batches of 8 clips x 8 frames (TSN segments), short edge "
          f"128, random 112x112 crop and flip; best of >= {settings['epochs']} epochs after "
          f"{settings['warmup']} warm-up; {where}; load {load0:.2f} at the start, {load1:.2f} at "
          f"the end\n")
    print("| frames | from | loader | clips/s | gulp ÷ this | ≥ 3× | Garage CPU s / epoch |")
    print("|---|---|---|---|---|---|---|")
    for name, places in results.items():
        for where, rows in places.items():
            g = rows.get("gulp", {}).get("clips_per_s")
            for row, r in rows.items():
                head = f"| {name} | {where} | {label(row, where)} |"
                if "skipped" in r:
                    print(f"{head} - | left out: {r['skipped'].splitlines()[0][:80]} | | |")
                    continue
                rate = r["clips_per_s"]
                server = r.get("server_cpu_s_per_epoch")
                server = "–" if server is None else f"{server:.2f}"
                if row == "PIL decode alone" and g:
                    r["ratio_gulp"] = ratio(g, rate)
                    print(f"{head} {rate:,.1f} | {ratio(g, rate):.2f}× | | {server} |")
                    continue
                if row.startswith("gulp") or not g:
                    print(f"{head} {rate:,.1f} | – | | {server} |")
                    continue
                q = ratio(g, rate)
                r["ratio_gulp"] = q
                met = "met" if q >= TARGET else "**not met**"
                print(f"{head} {rate:,.1f} | {q:.2f}× | {met} | {server} |")
    print("\n| frames | items, frames | gulp directory | webdataset tar shards | litdata chunks |")
    print("|---|---|---|---|---|")
    for name, stamp in corpora.items():
        b, o = stamp["bytes"], stamp["objects"]
        cells = [f"{b[k] / 1e6:,.1f} MB in {o[k]} files"
                 + ("" if k == "gulp" else f" ({b[k] / b['gulp']:.3f}×)")
                 for k in ("gulp", "webdataset", "litdata")]
        print(f"| {name} | {stamp['items']}, {stamp['frames']} | " + " | ".join(cells) + " |")


def ensure_packages(wds_aws):
    """pip installs the packages this needs into the running venv when
    missing (the versions it was written against)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        sys.exit("bench_formats.py: torch is missing: run it with the python that "
                 "scripts/env/torch-env.sh prints")
    missing = [req for mod, req in REQUIREMENTS.items() if importlib.util.find_spec(mod) is None]
    if wds_aws and not aws_command():
        missing.append("awscli")
    if missing:
        log(f"pip install {' '.join(missing)} (into {sys.prefix})")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-input", *missing], check=True)
        importlib.invalidate_caches()


def aws_command():
    aws = os.path.join(os.path.dirname(sys.executable), "aws")
    return aws if os.access(aws, os.X_OK) else shutil.which("aws")


def versions():
    out = {"python": sys.version.split()[0], "numpy": np.__version__}
    for mod in ("gulp", "webdataset", "litdata", "PIL", "torch", "boto3"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as e:  # noqa: BLE001 (reported, not fatal here)
            out[mod] = f"not importable: {e}"
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="48 items, 1 timed epoch (checking, not figures)")
    p.add_argument("--items", type=int, help="items per corpus (default 320; 48 with --quick)")
    p.add_argument("--epochs", type=int, help="timed epochs, at least (default 3; 1 with --quick)")
    p.add_argument("--min-seconds", type=float,
                   help="timed epochs until this many seconds (default 4; 0 with --quick)")
    p.add_argument("--corpora", default=",".join(CORPORA),
                   help=f"frame sizes, comma-separated (default {','.join(CORPORA)})")
    p.add_argument("--only", default=",".join(LOADERS),
                   help=f"loaders, comma-separated (default {','.join(LOADERS)})")
    p.add_argument("--no-s3", action="store_true", help="local disk only (no Garage)")
    p.add_argument("--wds-aws", action="store_true",
                   help="from the bucket, also webdataset through `pipe:aws s3 cp` (an AWS CLI "
                        "process per shard; needs awscli)")
    p.add_argument("--bucket-from-env", action="store_true",
                   help="use the S3 server and bucket that the AWS_* variables and GULP_S3_BUCKET "
                        "name instead of starting Garage")
    from bench_s3 import server_cores, server_options

    server_options(p, "Garage on the last core, the bucket rows' loaders on the others (the "
                      "local rows run first, on every core)")
    p.add_argument("--work", default=os.path.join(REPO, "target", "bench-formats"),
                   help="where the corpus is made and kept (default target/bench-formats)")
    p.add_argument("--json", metavar="FILE", help="also write the figures to FILE as JSON")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        with open(a.worker) as f:
            plan = json.load(f)
        with stdout_to_stderr():  # litdata and torch print; stdout holds the figures
            res = measure(plan)
        print(json.dumps(res))
        return

    cores = server_cores(p, a)
    if a.server_core and (a.no_s3 or a.bucket_from_env):
        p.error("--server-core pins the Garage this starts: not with --no-s3 or --bucket-from-env")
    names = a.corpora.split(",")
    only = a.only.split(",")
    if bad := (set(names) - set(CORPORA)) | (set(only) - set(LOADERS)):
        p.error(f"unknown {sorted(bad)}")
    if not shutil.which("ffmpeg"):
        p.error("ffmpeg is needed to make the corpus")
    items = a.items or (48 if a.quick else 320)
    per_chunk = max(4, items // 8)
    min_seconds = a.min_seconds if a.min_seconds is not None else (0.0 if a.quick else 4.0)
    settings = {"warmup": 1, "epochs": a.epochs or (1 if a.quick else 3),
                "min_seconds": min_seconds}
    settings["timeout"] = 900.0
    ensure_packages(a.wds_aws and not a.no_s3)
    load0 = os.getloadavg()[0]
    info = versions()
    log(", ".join(f"{k} {v}" for k, v in info.items()) + f"; load {os.getloadavg()}")
    corpora = {n: build_corpus(os.path.abspath(a.work), n, items, per_chunk) for n in names}
    for n, s in corpora.items():
        log(f"{n}: {s['items']} items, {s['frames']} frames; bytes " + ", ".join(
            f"{k} {v:,}" for k, v in s["bytes"].items()))
        subprocess.run(f"cat '{s['paths']['gulp']}'/* '{s['paths']['wds']}'/* "
                       f"'{s['paths']['litdata']}'/* > /dev/null", shell=True, check=True)

    results = {n: {} for n in names}
    tmp = tempfile.mkdtemp(prefix="bench_formats-")
    state = os.path.join(tmp, "garage")
    try:
        timer = time.perf_counter()
        for n in names:
            results[n]["local"] = run_set(n, "local", local_plans(corpora[n]), settings, tmp, only)
        if not a.no_s3:
            server_pid = None
            if not a.bucket_from_env:
                if not os.access(garage_binary(), os.X_OK):
                    log(f"{garage_binary()} missing: scripts/env/garage.sh builds it (~16 min)")
                from bench_s3 import pin_server, start_garage

                with stdout_to_stderr():
                    server_pid = start_garage(Path(state), a.block_size)
                if a.server_core:
                    pin_server([server_pid], cores)
                    log(f"Garage on core {cores[-1]}, the bucket rows' loaders on {cores[:-1]}")
            os.environ.setdefault("AWS_DEFAULT_REGION", os.environ["AWS_REGION"])
            client, bucket = s3_client(), os.environ["GULP_S3_BUCKET"]
            for n in names:
                plans = bucket_plans(client, bucket, n, corpora[n], tmp, a.wds_aws)
                results[n]["bucket"] = run_set(n, "bucket", plans, settings, tmp, only, server_pid)
        log(f"measured in {time.perf_counter() - timer:.0f} s")
    finally:
        if not a.no_s3 and not a.bucket_from_env:
            subprocess.run([os.path.join(REPO, "scripts", "env", "garage.sh"), "stop", state],
                           check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()[0]
    where = (f"the local rows on cores {cores}; Garage on core {cores[-1]}, the bucket rows on "
             f"{cores[:-1]}" if a.server_core else f"everything on cores {cores}")
    print_tables(results, corpora, load0, load1, settings, where)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": time.strftime("%F %T"), "versions": info, "settings": settings,
                       "cores": where,
                       "load": [load0, load1], "quick": a.quick, "corpora": corpora,
                       "results": results}, f, indent=1)
        log(f"figures written to {a.json}")


if __name__ == "__main__":
    main()
