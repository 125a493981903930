#!/usr/bin/env python3
"""gulp.ImageLoader against FFCV on the same JPEGs, in one run on one machine.

    PY="$(scripts/env/ffcv-env.sh)"
    "$PY" scripts/bench/bench_images.py [--images N] [--workdir DIR] [--keep]

Images: the real photographs of bench-corpus/images/ (scripts/bench/bench-corpus.sh
makes it when missing; Debian's mate-backgrounds and opencv-doc, provenance in
bench-corpus/SOURCES.tsv), re-encoded with Pillow to RGB JPEGs of quality 90,
4:4:4, long edge 500 px (ImageNet-like), into <workdir>/images/<label>/<name>.jpg
(labels: the class folders). The first 386 are the photographs whole (those
smaller than 500 px upscaled); the rest, up to --images (default 5000), are
seeded random crops (long edge 500 px or more, half mirrored) of the
photographs whose long edge is 500 px or more, brought down to 500 px.

gulp: `gulp ingest image-folder` (the JPEGs are stored as they are; the run
checks that every stored JPEG is the file's bytes), then gulp.ImageLoader.
FFCV: a .beton written by DatasetWriter with RGBImageField(write_mode='jpg',
max_resolution=500, jpeg_quality=90) and IntField, from a torch-style dataset
of (image, label). FFCV's writer re-encodes every image with OpenCV (4:2:0
chroma, where the files are 4:4:4); so that both loaders decode the same
bytes, the writer's encode_jpeg is replaced by one that stores the file's own
JPEG (the run checks the .beton's bytes). FFCV on the .beton its unmodified
writer makes (OpenCV's re-encode) is timed too, as extra rows
(--no-ffcv-reencode leaves it out).

Pipelines (both loaders: 2 threads, batches of 64, uint8 NHWC out, no
normalisation, no device transfer, last partial batch dropped):
  training    RandomResizedCrop to 224 (scale 0.08-1, ratio 3/4-4/3) + flip,
              random order (gulp: ImageLoader(size=224); FFCV:
              RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip,
              OrderOption.RANDOM, os_cache=True)
  evaluation  short edge 256, centre 224, in order (gulp: ImageLoader(resize=256,
              size=224, crop="center", shuffle=False, flip=False); FFCV:
              CenterCropRGBImageDecoder((224, 224), ratio=224/256), SEQUENTIAL)
Each is run for one warm-up epoch (FFCV compiles its pipeline with numba in its
first epoch) and then --epochs epochs (default 3); the table gives the best.
The loaders take turns epoch by epoch, so that load from other processes falls
on all of them alike; the share of the cores other processes took meanwhile is
printed. The decode limits: `gulp bench` on the gulped directory (one full
decode of every JPEG, and one at DCT scale 1/2, gulp's libjpeg-turbo 3.1) and
FFCV's own decoder (libffcv's imdecode on the system's libjpeg-turbo, full
decode, as its loaders call it), one call per image on the same number of
threads; the bare crop loops (gulp-io's bare_turbo example) decode each
pipeline's crops, alone and followed by the same resample to 224x224.
Also printed: how far apart the two loaders' evaluation crops are (mean
absolute difference over the first 256 images), as a check that both compute
the same crop.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing import Pool
from typing import NamedTuple

import numpy as np
from PIL import Image, JpegImagePlugin

from timing import best_rate, logger

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(REPO, "bench-corpus")
SUFFIXES = (".jpg", ".jpeg", ".png")
LONG_EDGE = 500
QUALITY = 90
SAMPLING = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


log = logger("bench_images")


# ------------------------------------------------------------------ the images

def corpus_sources() -> list[tuple[str, str]]:
    """(label, path) of every photograph in bench-corpus/images/, sorted."""
    root = os.path.join(CORPUS, "images")
    if not os.path.isdir(root):
        log("bench-corpus/images/ is missing: running scripts/bench/bench-corpus.sh")
        subprocess.run([os.path.join(REPO, "scripts", "bench", "bench-corpus.sh")], check=True,
                       stdout=sys.stderr)
    return [(label, os.path.join(root, label, name))
            for label in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, label))
            for name in sorted(os.listdir(os.path.join(root, label)))
            if name.lower().endswith(SUFFIXES)]


@functools.lru_cache(maxsize=2)
def _open_rgb(src: str) -> Image.Image:
    with Image.open(src) as img:
        return img.convert("RGB")


def _make_image(job: tuple[int, int, str, str, str]) -> tuple[str, int, int, bool]:
    """Re-encodes one photograph: variant 0 whole; else a seeded crop whose
    long edge is 500 px or more, mirrored half of the time."""
    i, variant, label, src, out_dir = job
    img = _open_rgb(src)
    w, h = img.size
    if variant:
        rng = random.Random(i)
        lo = min(1.0, LONG_EDGE / max(w, h))
        f = rng.uniform(lo, 1.0)
        cw, ch = w * f, h * f
        a = rng.uniform(0.8, 1.25)
        if w >= h:
            ch = min(h, ch * a)
        else:
            cw = min(w, cw * a)
        cw, ch = max(1, round(cw)), max(1, round(ch))
        x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
        img = img.crop((x, y, x + cw, y + ch))
        if rng.random() < 0.5:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        w, h = img.size
    upscaled = max(w, h) < LONG_EDGE
    s = LONG_EDGE / max(w, h)
    size = (LONG_EDGE, max(1, round(h * s))) if w >= h else (max(1, round(w * s)), LONG_EDGE)
    if size != (w, h):
        img = img.resize(size, Image.Resampling.LANCZOS)
    stem = os.path.splitext(os.path.basename(src))[0]
    path = os.path.join(out_dir, label, f"{stem}_v{variant:02d}.jpg")
    img.save(path, quality=QUALITY, subsampling=0)
    return path, size[0], size[1], upscaled


def make_images(n: int, out_dir: str, workers: int) -> tuple[list[str], list[str], dict]:
    """The first min(n, 386) images: the corpus photographs, whole, in a seeded
    order; the rest: seeded crops of the photographs whose long edge is 500 px
    or more, taken in turn."""
    sources = corpus_sources()
    order = list(range(len(sources)))
    random.Random(0).shuffle(order)
    big = []
    for k in order:
        with Image.open(sources[k][1]) as im:
            if max(im.size) >= LONG_EDGE:
                big.append(k)
    jobs = []
    for i in range(n):
        if i < len(order):
            k, variant = order[i], 0
        else:
            k, variant = big[(i - len(order)) % len(big)], 1 + (i - len(order)) // len(big)
        label, src = sources[k]
        jobs.append((i, variant, label, src, out_dir, k))
    for label in {j[2] for j in jobs}:
        os.makedirs(os.path.join(out_dir, label), exist_ok=True)
    # grouped by source, so that a worker decodes each source photograph once
    grouped = sorted(range(n), key=lambda i: (jobs[i][5], i))
    with Pool(workers) as pool:
        made_grouped = pool.map(_make_image, [jobs[i][:5] for i in grouped],
                                chunksize=max(1, n // (8 * workers)))
    made: list = [None] * n
    for i, m in zip(grouped, made_grouped):
        made[i] = m
    files = [m[0] for m in made]
    labels = [j[2] for j in jobs]
    sizes = [os.path.getsize(f) for f in files]
    pixels = sum(m[1] * m[2] for m in made)
    info = {
        "sources": len(sources), "source_labels": len({s[0] for s in sources}),
        "whole": sum(1 for j in jobs if not j[1]), "big": len(big),
        "big_labels": len({sources[k][0] for k in big}),
        "crop_sources": len({j[5] for j in jobs if j[1]}),
        "labels": len(set(labels)), "crops": sum(1 for j in jobs if j[1]),
        "upscaled": sum(1 for m in made if m[3]), "bytes": sum(sizes),
        "mean_kb": sum(sizes) / len(sizes) / 1e3, "mean_mp": pixels / len(made) / 1e6,
        "bpp": 8 * sum(sizes) / pixels,
    }
    return files, labels, info


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def jpeg_sampling(data: bytes) -> str:
    with Image.open(io.BytesIO(data)) as im:
        return SAMPLING.get(JpegImagePlugin.get_sampling(im), "other")


# ------------------------------------------------------------------ timing

CLK = os.sysconf("SC_CLK_TCK")


def cpu_snapshot() -> tuple[float, float, float]:
    """(wall s, this process's CPU s incl. its threads and waited-for
    children, the machine's busy CPU s)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    t = os.times()
    return (time.perf_counter(), t.user + t.system + t.children_user + t.children_system,
            (sum(v) - v[3] - v[4]) / CLK)


class Epoch(NamedTuple):
    seconds: float
    images: int
    others: float       # share of the machine's cores other processes used meanwhile

    @property
    def rate(self) -> float:
        return self.images / self.seconds


def measured(fn) -> tuple[Epoch, object]:
    a = cpu_snapshot()
    out = fn()
    b = cpu_snapshot()
    wall = b[0] - a[0]
    others = max(0.0, (b[2] - a[2]) - (b[1] - a[1])) / (wall * (os.cpu_count() or 1))
    n = out if isinstance(out, int) else 0
    return Epoch(wall, n, min(1.0, others)), out


def time_phase(phase: str, contenders: dict, epochs: int) -> dict[str, list[Epoch]]:
    """One warm-up epoch of each loader, then `epochs` rounds of one epoch
    each, the loaders taking turns (the first of a round rotates), so that
    load from outside falls on all of them alike."""
    names = list(contenders)
    runs: dict[str, list[Epoch]] = {name: [] for name in names}
    for r in range(1 + epochs):
        turn = names[r % len(names):] + names[:r % len(names)] if r else names
        for name in turn:
            e, _ = measured(contenders[name])
            runs[name].append(e)
            log(f"{phase} {name}, epoch {r}{' (warm-up)' if r == 0 else ''}: {e.images} images "
                f"in {e.seconds:.2f} s, {e.rate:.0f} images/s, others {100 * e.others:.0f} %")
    return runs


def best(runs: list[Epoch]) -> Epoch:
    return max(runs[1:], key=lambda e: e.rate)


# ------------------------------------------------------------------ gulp

def gulp_prepare(args, gulp_bin: str, images: str, out: str, files: list[str],
                 labels: list[str]) -> dict:
    import gulp
    res: dict = {}
    t = time.perf_counter()
    subprocess.run([gulp_bin, "ingest", "image-folder", images, out,
                    "--num-workers", str(args.threads)],
                   check=True, stdout=subprocess.DEVNULL, stderr=sys.stderr)
    res["ingest_s"] = time.perf_counter() - t
    d = gulp.GulpDirectory(out)
    same = 0
    for f, label in zip(files, labels):
        raw = d.raw(f"{label}-{os.path.basename(f)}")
        same += len(raw) == 1 and bytes(raw[0]) == read(f)
    res["same_bytes"] = same
    res["items"] = len(d)
    res["gulp_bytes"] = sum(os.path.getsize(os.path.join(out, x)) for x in os.listdir(out))
    res["train"] = gulp.ImageLoader(out, size=224, batch_size=args.batch_size,
                                    threads=args.threads, seed=0)
    res["eval"] = gulp.ImageLoader(out, resize=256, size=224, crop="center", shuffle=False,
                                   flip=False, batch_size=args.batch_size, threads=args.threads)
    return res


def gulp_epoch(loader, shapes: set):
    def epoch() -> int:
        n = 0
        for batch in loader:
            shapes.add((type(batch.frames).__name__, str(batch.frames.dtype),
                        batch.frames.shape))
            n += batch.frames.shape[0]
        return n
    return epoch


def gulp_eval_crops(loader, files: list[str], labels: list[str], first: int) -> dict:
    """The evaluation crops of the files with index < first, by index (the
    ones an epoch serves: the last partial batch is dropped)."""
    index = {f"{label}-{os.path.basename(f)}": i for i, (f, label) in enumerate(zip(files, labels))}
    crops = {}
    for batch in loader:
        for k, id_ in enumerate(batch.ids):
            if index[id_] < first:
                crops[index[id_]] = batch.frames[k].copy()
    return crops


def gulp_bench(args, gulp_bin: str, out: str, scale: str) -> tuple[dict, float]:
    cmd = [gulp_bin, "bench", out, "--threads", str(args.threads), "--json"]
    if scale != "1":
        cmd += ["--scale", scale]
    top, others = None, 0.0
    for _ in range(3):
        e, p = measured(lambda: subprocess.run(cmd, check=True, capture_output=True, text=True))
        j = json.loads(p.stdout)
        if top is None or j["frames_per_s"] > top["frames_per_s"]:
            top, others = j, e.others
    log(f"gulp bench --threads {args.threads} --scale {scale}: {top['frames_per_s']:.0f} "
        f"frames/s, others {100 * others:.0f} %")
    return top, others


def bare_crops(args, out: str, crop: list[str]):
    """The bare_turbo example decoding each image's crop (its rows and iMCU
    columns, at the least DCT scale n/8 that keeps it >= 224 px): the
    decoding the pipeline does, at most; (figures, others) or None."""
    sys.path.insert(0, os.path.join(REPO, "scripts", "bench"))
    from bench_loader import bare_turbo  # the same build step

    exe, reason = bare_turbo()
    if exe is None:
        log(f"bare crops left out: {reason}")
        return None
    cmd = [exe, out, "--threads", str(args.threads), "--passes", "5", "--json", *crop]
    e, p = measured(lambda: subprocess.run(cmd, check=True, capture_output=True, text=True))
    j = json.loads(p.stdout.strip().splitlines()[-1])
    log(f"bare_turbo {' '.join(crop)}, {args.threads} threads: {j['frames_per_s']:.0f} images/s")
    return j, e.others


# ------------------------------------------------------------------ FFCV

class _Jpeg(np.ndarray):
    """A decoded image that carries its file's JPEG bytes (for the writer)."""


class ImageFiles:
    """A torch-style dataset of (image, label): PIL images, or (same_bytes)
    arrays that carry the file's JPEG bytes."""

    def __init__(self, files: list[str], labels: list[int], same_bytes: bool):
        self.files, self.labels, self.same_bytes = files, labels, same_bytes

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int):
        img = Image.open(self.files[i]).convert("RGB")
        if not self.same_bytes:
            return img, self.labels[i]
        arr = np.asarray(img).view(_Jpeg)
        arr.jpeg = read(self.files[i])
        return arr, self.labels[i]


def write_beton(path: str, files: list[str], label_ids: list[int], same_bytes: bool,
                workers: int) -> float:
    import ffcv.fields.rgb_image as rgb
    from ffcv.fields import IntField, RGBImageField
    from ffcv.writer import DatasetWriter

    original = rgb.encode_jpeg

    def encode_same_bytes(image, quality):
        data = getattr(image, "jpeg", None)
        return original(image, quality) if data is None else np.frombuffer(data, np.uint8)

    rgb.encode_jpeg = encode_same_bytes if same_bytes else original
    try:
        writer = DatasetWriter(path, {
            "image": RGBImageField(write_mode="jpg", max_resolution=LONG_EDGE,
                                   jpeg_quality=QUALITY),
            "label": IntField(),
        }, num_workers=workers)
        t = time.perf_counter()
        writer.from_indexed_dataset(ImageFiles(files, label_ids, same_bytes))
        return time.perf_counter() - t
    finally:
        rgb.encode_jpeg = original


def beton_jpegs(path: str) -> tuple[list[bytes], list[tuple[int, int]]]:
    """The image field's stored JPEG and (height, width) of every sample, in
    sample order."""
    from ffcv.reader import Reader
    r = Reader(path)
    meta = r.metadata["f0"]
    size = dict(zip(r.alloc_table["ptr"].tolist(), r.alloc_table["size"].tolist()))
    with open(path, "rb") as f:
        blob = f.read()
    return ([blob[p:p + size[p]] for p in meta["data_ptr"].tolist()],
            list(zip(meta["height"].tolist(), meta["width"].tolist())))


def ffcv_decode_limit(jpegs: list[bytes], hw: list[tuple[int, int]], threads: int) -> float:
    """Full decodes per second of every JPEG with FFCV's own decoder (libffcv's
    imdecode: libjpeg-turbo's tjDecompress2, fast DCT, as its loaders call
    it), one call per image on `threads` Python threads (ctypes lets go of
    the GIL): best of 3."""
    from concurrent.futures import ThreadPoolExecutor

    from ffcv.libffcv import imdecode
    arrays = [np.frombuffer(j, np.uint8) for j in jpegs]
    biggest = max(h * w * 3 for h, w in hw)

    def part(k: int) -> None:
        out = np.empty(biggest, np.uint8)
        for i in range(k, len(arrays), threads):
            h, w = hw[i]
            if imdecode(arrays[i], out, h, w, h, w, 0, 0, 1, 1, False, False) != 0:
                raise RuntimeError(f"libffcv imdecode failed on sample {i}")

    with ThreadPoolExecutor(threads) as pool:
        return best_rate(lambda: list(pool.map(part, range(threads))), len(arrays), passes=3)


def ffcv_prepare(args, beton: str, files: list[str], label_ids: list[int],
                 same_bytes: bool) -> dict:
    from ffcv.fields.decoders import (CenterCropRGBImageDecoder, IntDecoder,
                                      RandomResizedCropRGBImageDecoder)
    from ffcv.loader import Loader, OrderOption
    from ffcv.transforms import RandomHorizontalFlip

    res: dict = {"write_s": write_beton(beton, files, label_ids, same_bytes, args.threads)}
    stored, hw = beton_jpegs(beton)
    res["jpegs"], res["hw"] = stored, hw
    same = 0
    for f, data in zip(files, stored):
        same += data == read(f)
    res["same_bytes"] = same
    res["sampling"] = sorted({jpeg_sampling(s) for s in stored})
    res["jpeg_bytes"] = sum(len(s) for s in stored)
    res["beton_bytes"] = os.path.getsize(beton)

    common = dict(batch_size=args.batch_size, num_workers=args.threads, os_cache=True,
                  drop_last=True)
    res["train"] = Loader(beton, order=OrderOption.RANDOM, seed=0, pipelines={
        "image": [RandomResizedCropRGBImageDecoder((224, 224)), RandomHorizontalFlip()],
        "label": [IntDecoder()]}, **common)
    res["eval"] = Loader(beton, order=OrderOption.SEQUENTIAL, pipelines={
        "image": [CenterCropRGBImageDecoder((224, 224), ratio=224 / 256)],
        "label": [IntDecoder()]}, **common)
    return res


def ffcv_epoch(loader, shapes: set):
    def epoch() -> int:
        n = 0
        for images, _labels in loader:
            shapes.add((type(images).__name__, str(images.dtype), images.shape))
            n += images.shape[0]
        return n
    return epoch


def ffcv_eval_crops(loader, first: int) -> np.ndarray:
    """The evaluation crops of the first `first` samples (or more), in order."""
    out, n = [], 0
    for images, _ in loader:
        out.append(np.asarray(images).copy())
        n += len(images)
        if n >= first:
            break
    return np.concatenate(out)


# ------------------------------------------------------------------ the run

LOADERS = []    # kept alive to the end (numba's finalisers complain when FFCV's go early)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=5000,
                    help="images to make (default 5000; the corpus has 386 photographs)")
    ap.add_argument("--workdir", help="where the temporary image folder, gulp directory and "
                    ".betons go (default: a new directory in $TMPDIR; removed at the end)")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs after the warm-up")
    ap.add_argument("--threads", type=int, default=2, help="loader threads (both loaders)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--no-ffcv-reencode", dest="ffcv_reencode", action="store_false",
                    help="do not time FFCV on the .beton its own writer makes (OpenCV re-encode)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary files")
    args = ap.parse_args()

    gulp_bin = os.path.join(os.path.dirname(sys.executable), "gulp")
    if not os.path.exists(gulp_bin):
        sys.exit(f"bench_images: no gulp command beside {sys.executable}")
    ffcv_error = None
    try:
        import ffcv.loader  # noqa: F401
    except Exception as e:  # noqa: BLE001 (the gulp side runs on regardless)
        ffcv_error = f"import ffcv.loader: {type(e).__name__}: {e}"
        log(f"FFCV does not import ({ffcv_error}): the gulp side only")

    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="bench-images-", dir=args.workdir)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    try:
        images = os.path.join(work, "images")
        t = time.perf_counter()
        files, labels, info = make_images(args.images, images, args.threads)
        prep_s = time.perf_counter() - t
        sampling = sorted({jpeg_sampling(read(f)) for f in files})
        log(f"{len(files)} images made in {prep_s:.1f} s")

        g = gulp_prepare(args, gulp_bin, images, os.path.join(work, "gulp"), files, labels)
        names = sorted(set(labels))
        label_ids = [names.index(label) for label in labels]
        betons: dict = {}
        if ffcv_error is None:
            for key, same_bytes in [("same", True)] + ([("reencode", False)]
                                                       if args.ffcv_reencode else []):
                try:
                    log(f"writing {key}.beton")
                    betons[key] = ffcv_prepare(args, os.path.join(work, f"{key}.beton"), files,
                                               label_ids, same_bytes)
                except Exception as e:  # noqa: BLE001
                    import traceback
                    traceback.print_exc()
                    ffcv_error = f"{key}.beton: {type(e).__name__}: {e}"
                    break
        LOADERS.extend([g] + list(betons.values()))

        runs: dict = {}
        shapes: dict = {}
        for phase in ("train", "eval"):
            shapes[phase] = {"gulp": set(), **{k: set() for k in betons}}
            contenders = {"gulp": gulp_epoch(g[phase], shapes[phase]["gulp"])}
            for key, b in betons.items():
                contenders[key] = ffcv_epoch(b[phase], shapes[phase][key])
            try:
                runs[phase] = time_phase(phase, contenders, args.epochs)
            except Exception as e:  # noqa: BLE001 (FFCV failing leaves gulp's figures)
                if ffcv_error is not None or not betons:
                    raise
                import traceback
                traceback.print_exc()
                ffcv_error = f"{phase} epochs: {type(e).__name__}: {e}"
                betons = {}
                runs[phase] = time_phase(phase, {"gulp": contenders["gulp"]}, args.epochs)

        decode = {scale: gulp_bench(args, gulp_bin, os.path.join(work, "gulp"), scale)
                  for scale in ("1", "1/2")}
        for key, opt in (("crop-train", ["--random-resized-crop", "224"]),
                         ("crop-eval", ["--center-crop", "256:224"]),
                         ("crop-train-resample", ["--random-resized-crop", "224", "--resample-crop"]),
                         ("crop-eval-resample", ["--center-crop", "256:224", "--resample-crop"])):
            r = bare_crops(args, os.path.join(work, "gulp"), opt)
            if r is not None:
                decode[key] = r
        for key, b in betons.items():
            e, rate = measured(lambda b=b: ffcv_decode_limit(b["jpegs"], b["hw"], args.threads))
            decode["ffcv-" + key] = ({"frames_per_s": rate}, e.others)
            log(f"FFCV imdecode ({key}.beton), {args.threads} threads: {rate:.0f} images/s, "
                f"others {100 * e.others:.0f} %")
        crops = None
        if "same" in betons:
            fc = ffcv_eval_crops(betons["same"]["eval"], 256)
            gc = gulp_eval_crops(g["eval"], files, labels, len(fc))
            common = sorted(gc)
            if common:
                diff = np.abs(np.stack([gc[i] for i in common]).astype(np.int16)
                              - fc[common].astype(np.int16))
                crops = (len(common), float(diff.mean()), float(np.percentile(diff, 99)))

        report(args, info, files, sampling, prep_s, g, betons, runs, shapes, decode, crops,
               ffcv_error, load_start, time.perf_counter() - t_start)
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


# ------------------------------------------------------------------ report

def _turbo_system() -> str:
    try:
        return subprocess.run(["pkg-config", "--modversion", "libturbojpeg"],
                              capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


TURBO_SYSTEM = _turbo_system()


def versions() -> str:
    import importlib.metadata as md
    out = []
    for dist in ("gulp-video", "ffcv", "numba", "numpy", "opencv-python-headless", "pillow",
                 "torch"):
        try:
            out.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            pass
    import gulp
    out.append(f"gulp's codec {gulp.CODEC}")
    try:
        v = subprocess.run(["pkg-config", "--modversion", "libturbojpeg", "opencv4"],
                           capture_output=True, text=True).stdout.split()
        out.append(f"FFCV's libffcv built on libturbojpeg {v[0]} and OpenCV {v[1]}")
    except (OSError, IndexError):
        pass
    return ", ".join(out)


def report(args, info, files, sampling, prep_s, g, betons, runs, shapes, decode, crops,
           ffcv_error, load_start, total_s) -> None:
    p = print
    served = len(files) - len(files) % args.batch_size
    p("# gulp.ImageLoader vs FFCV: the same JPEGs, one run, one machine")
    p()
    p(f"machine: {os.cpu_count()} cores; both loaders on {args.threads} threads, batches of "
      f"{args.batch_size}; load average {load_start[0]:.2f} at the start, "
      f"{os.getloadavg()[0]:.2f} at the end")
    p(f"python {sys.version.split()[0]} ({sys.executable}); {versions()}")
    p()
    p(f"images: {len(files)} JPEGs (RGB, quality {QUALITY}, {'/'.join(sampling)}, long edge "
      f"{LONG_EDGE} px; mean {info['mean_kb']:.1f} kB, {info['mean_mp']:.3f} MP, "
      f"{info['bpp']:.2f} bits/pixel; {info['labels']} labels = folder names), re-encoded with "
      f"Pillow in {prep_s:.1f} s from the {info['sources']} real photographs of "
      f"bench-corpus/images/ ({info['source_labels']} class folders; Debian's mate-backgrounds "
      f"and opencv-doc, see bench-corpus/SOURCES.tsv): {info['whole']} photographs whole, "
      f"{info['crops']} seeded random crops (long edge >= {LONG_EDGE} px, half mirrored) of the "
      f"{info['crop_sources']} photographs whose long edge is {LONG_EDGE} px or more; "
      f"{info['upscaled']} images upscaled (photographs smaller than {LONG_EDGE} px), the "
      f"others downscaled")
    p(f"gulp: `gulp ingest image-folder` in {g['ingest_s']:.1f} s: {g['items']} items, "
      f"{g['gulp_bytes'] / 1e6:.1f} MB; stored JPEG = the file's bytes for "
      f"{g['same_bytes']}/{len(files)}")
    for key, r in betons.items():
        how = ("DatasetWriter, its encode_jpeg replaced to keep each file's JPEG" if key == "same"
               else "DatasetWriter as it is: OpenCV re-encodes at quality 90")
        p(f"FFCV .beton ({how}): written in {r['write_s']:.1f} s, {r['beton_bytes'] / 1e6:.1f} MB"
          f" (JPEGs {r['jpeg_bytes'] / 1e6:.1f} MB, {'/'.join(r['sampling'])}); stored JPEG = "
          f"the file's bytes for {r['same_bytes']}/{len(files)}")
    p()

    labels = {"gulp": "gulp.ImageLoader", "same": "FFCV Loader",
              "reencode": "FFCV Loader, .beton re-encoded by FFCV's writer (4:2:0)"}
    rows: list = []
    for phase, title in (("train", "training: RandomResizedCrop 224 + flip, random order"),
                         ("eval", "evaluation: short edge 256, centre 224, in order")):
        rows.append((title,))
        gr = best(runs[phase]["gulp"]).rate
        for key, rs in runs[phase].items():
            b = best(rs)
            rows.append(("  " + labels[key], b.rate, None if key == "gulp" else gr / b.rate,
                         rs[0].rate, " ".join(f"{e.rate:.0f}" for e in rs[1:]),
                         sum(e.others for e in rs[1:]) / len(rs[1:])))
    rows.append(("decode limit: every JPEG decoded once, one call per image",))
    for key, title in (("crop-train", "  bare libjpeg-turbo: each training crop's region at its DCT scale"),
                       ("crop-eval", "  bare libjpeg-turbo: each evaluation crop's region at its DCT scale"),
                       ("crop-train-resample", "  the same training crops + the same resample to 224, bare"),
                       ("crop-eval-resample", "  the same evaluation crops + the same resample to 224, bare"),
                       ("1", "  gulp bench: full decode (libjpeg-turbo 3.1)"),
                       ("1/2", "  gulp bench: decode at DCT scale 1/2"),
                       ("ffcv-same", "  FFCV imdecode: full decode (libjpeg-turbo "
                        f"{TURBO_SYSTEM})"),
                       ("ffcv-reencode", "  FFCV imdecode, .beton re-encoded (4:2:0)")):
        if key in decode:
            j, others = decode[key]
            phase = {"crop-train": "train", "crop-eval": "eval", "crop-train-resample": "train",
                     "crop-eval-resample": "eval"}.get(key)
            ratio = (decode["1"][0]["frames_per_s"] / j["frames_per_s"] if key.startswith("ffcv")
                     else best(runs[phase]["gulp"]).rate / j["frames_per_s"] if phase else None)
            rows.append((title, j["frames_per_s"], ratio, None, "", others))

    w = max(len(r[0]) for r in rows) + 2
    p(f"{'':{w}}{'images/s':>9} {'gulp/FFCV':>9} {'warm-up':>8}  {'others':>6}  epochs")
    for r in rows:
        if len(r) == 1:
            p(r[0])
            continue
        title, rate, ratio, warm, eps, others = r
        ratio_s = f"{ratio:9.2f}" if ratio is not None else " " * 9
        warm_s = f"{warm:8.0f}" if warm is not None else " " * 8
        p(f"{title:{w}}{rate:9.0f} {ratio_s} {warm_s}  {100 * others:5.0f}%  {eps}")
    p()
    p(f"images/s: the best of {args.epochs} epochs after one warm-up epoch (an epoch: "
      f"{served} images, the last partial batch dropped; the loaders take turns epoch by "
      f"epoch); gulp/FFCV: gulp's images/s over FFCV's (on the bare crop rows: gulp's "
      f"pipeline over the bare loop, target >= 0.9); others: the share of the machine's "
      f"cores that other processes used during the timed epochs (mean). The bare crop loops "
      f"(gulp-io's bare_turbo example) draw crops as the pipelines do (RandomResizedCrop, "
      f"or the centred 224/256 of the short edge) and decode only their rows and iMCU "
      f"columns at the least n/8 keeping them >= 224 px, without resampling or flipping; "
      f"the '+ the same resample' rows add the pipelines' last step, the crop resampled to "
      f"224x224 with the loaders' filter (fast_image_resize's bilinear convolution), still "
      f"without flipping or batching.")
    for phase in ("train", "eval"):
        out = []
        for key, sh in shapes[phase].items():
            if sh:
                kinds = sorted({f"{k} {d} [{', '.join(map(str, s))}]" for k, d, s in sh})
                out.append(f"{labels[key].split(',')[0]} {' / '.join(kinds)}")
        p(f"{phase} batches: " + "; ".join(out))
    if crops:
        p(f"evaluation crops, gulp vs FFCV on the same {crops[0]} images: mean |difference| "
          f"{crops[1]:.2f} of 255, 99th percentile {crops[2]:.0f}")
    for scale in ("1", "1/2"):
        j, _ = decode[scale]
        p(f"gulp bench --threads {args.threads}{'' if scale == '1' else ' --scale ' + scale}: "
          f"{j['frames_per_s']:.0f} frames/s, {j.get('megapixels_per_s', 0):.0f} MP/s of "
          f"decoded pixels (best of 3)")
    if ffcv_error:
        p(f"FFCV failed: {ffcv_error}")
    p(f"total run time {total_s:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
