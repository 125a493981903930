#!/usr/bin/env python3
"""Cross-compatibility suite: gulp against the real gulpio2 0.0.4.

Every case writes a gulp directory with one implementation and reads it with
the other (gulpio-reference.md §6.3):

  gulpio2->gulp    gulpio2 writes (GulpIngestor, GulpChunk.append, its 20BN
                   adapter); `gulp check` finds no problem, `gulp dump-meta`
                   gives the same meta (byte for byte per chunk), `gulp info`
                   the same counts, `gulp extract` the same JPEG bytes.
  gulp->gulpio2    gulp writes (the write_spec example over ChunkWriter, or
                   `gulp ingest`); gulpio2's GulpDirectory finds the same
                   chunks, ids, meta (the meta files are the bytes Python's
                   json.dump writes) and frames (decoded by gulpio2 from the
                   JPEGs gulp was given), every record is where the meta says,
                   and gulp2_sanity_check passes, or fails exactly as it is
                   known to on a valid directory (reference §4).
  gulpio1->...     the committed GulpIO v1 chunk (v1 is not on the package
                   registry) is read by both.

Usage (scripts/ci/compat.sh builds the binaries and runs this):

    .venv/bin/python tests/compat/compat.py --gulp target/release/gulp \\
        --write-spec target/release/examples/write_spec [-k NAME] [--keep DIR]

Prints one line per case and direction, `PASS <direction> <case>` or
`FAIL ...` with the reason, then a summary; exits 1 if any case failed.
"""

import argparse
import collections
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import zlib

import numpy as np
import simplejpeg

import gulpio2
import gulpio2.utils
from gulpio2 import GulpDirectory, GulpIngestor
from gulpio2.adapters import AbstractDatasetAdapter, Custom20BNCsvJpegAdapter

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V1_FIXTURE = os.path.join(REPO, "tests", "data", "fixtures", "gulpio1")

G2R = "gulpio2->gulp"
R2G = "gulp->gulpio2"

# (text for `gulp extract --frames`, the same selection for gulpio2's gd[id, sel])
SELECTORS = [
    ("0,5,9", [0, 5, 9]),
    ("[0,5,9]", [0, 5, 9]),
    ("-1", [-1]),
    ("-10,-3", [-10, -3]),
    ("2,2,7,2", [2, 2, 7, 2]),
    ("9,0,4", [9, 0, 4]),
    ("1::2", slice(1, None, 2)),
    ("0::2", slice(0, None, 2)),
    ("::-1", slice(None, None, -1)),
    ("8:1:-3", slice(8, 1, -3)),
    ("-4:", slice(-4, None)),
    ("2:100", slice(2, 100)),
    ("[]", []),
    (":", slice(None)),
]


# --------------------------------------------------------------------------- #
#                                  helpers                                    #
# --------------------------------------------------------------------------- #

def load_json(text):
    return json.loads(text, object_pairs_hook=collections.OrderedDict)


def normalize(value):
    """A value as it comes back from JSON (tuples are lists, keys strings)."""
    return load_json(json.dumps(value))


def same_json(a, b):
    """Equal as JSON text: key order matters, NaN equals NaN, 1 != 1.0."""
    return json.dumps(a) == json.dumps(b)


def resolve(selection, n):
    """The frame indices gulpio2 reads for gd[id, selection]."""
    indices = list(range(n))
    if isinstance(selection, slice):
        return indices[selection]
    return [indices[i] for i in selection]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def flat(shape, value):
    return np.full(shape, value, dtype=np.uint8)


def noise(rng, shape):
    return rng.integers(0, 256, size=shape, dtype=np.uint8)


def gradient(h, w, channels=None):
    y, x = np.mgrid[0:h, 0:w]
    gray = (x * 255 // max(w - 1, 1) + y * 7) % 256
    if channels is None:
        return gray.astype(np.uint8)
    planes = [gray, (y * 255 // max(h - 1, 1)), ((x + y) * 11) % 256]
    return np.ascontiguousarray(np.stack(planes, axis=-1).astype(np.uint8))


def encode(img, quality=90, subsampling="444"):
    """JPEG bytes with simplejpeg (gulpio2's encoder), gray for 2-D arrays."""
    if img.ndim == 2:
        return simplejpeg.encode_jpeg(img[..., None], quality=quality, colorspace="Gray")
    return simplejpeg.encode_jpeg(img, quality=quality, colorspace="RGB",
                                  colorsubsampling=subsampling)


def decode(jpeg):
    """What gulpio2 returns for these JPEG bytes."""
    return gulpio2.utils.jpeg_bytes_to_img(jpeg)


def pad_of(n):
    return (4 - n % 4) % 4


def png_bytes(img):
    """A minimal 8-bit gray or RGB PNG (for the image-folder ingest)."""
    h, w = img.shape[:2]
    color_type = 0 if img.ndim == 2 else 2
    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data)))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def id_dir_name(id_):
    """The folder `gulp extract` writes an id's frames to."""
    if id_ in ("", ".", ".."):
        return "%" if id_ == "" else "".join("%%%02X" % ord(c) for c in id_)
    return "".join("%%%02X" % ord(c) if c in "/\\\0%" else c for c in id_)


def chunk_paths(d):
    """{chunk number: (data path, meta path)} of a directory, numeric order."""
    out = {}
    for name in os.listdir(d):
        m = re.fullmatch(r"data_(\d+)\.gulp", name)
        if m:
            n = int(m.group(1))
            out[n] = (os.path.join(d, name), os.path.join(d, "meta_%d.gmeta" % n))
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- #
#                              gulpio2 as writer                              #
# --------------------------------------------------------------------------- #

class ListAdapter(AbstractDatasetAdapter):
    """Pre-built items for gulpio2's real GulpIngestor. `quality`, if set, is
    applied in the worker process, as gulpio2's own tests set the constant."""

    def __init__(self, items, quality=None):
        self.items = items
        self.quality = quality

    def __len__(self):
        return len(self.items)

    def iter_data(self, slice_element=None):
        if self.quality is not None:
            gulpio2.utils._JPEG_WRITE_QUALITY = self.quality
        slice_element = slice_element or slice(0, len(self))
        for item in self.items[slice_element]:
            yield item


def item(id_, meta, frames):
    return {"id": id_, "meta": meta, "frames": frames}


def run_ingestor(adapter, out, per_chunk):
    """gulpio2's GulpIngestor with one worker, its progress bar silenced."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        GulpIngestor(adapter, out, per_chunk, 1)()


def gulpio2_ingest(out, items, per_chunk, quality=None):
    run_ingestor(ListAdapter(items, quality), out, per_chunk)


def gulpio2_append(out, appends):
    """One new chunk written with GulpChunk.open('wb') + append(id, meta, frames)."""
    os.makedirs(out, exist_ok=True)
    chunk = next(GulpDirectory(out).new_chunks(1))
    with chunk.open("wb"):
        for id_, meta, frames in appends:
            chunk.append(id_, meta, frames)


def gulpio2_csv_jpeg(out, rows, src, per_chunk, rng):
    """gulpio2's Custom20BNCsvJpegAdapter over folders of JPEG frames."""
    csv_path = write_jpeg_folders(src, rows, rng)
    run_ingestor(Custom20BNCsvJpegAdapter(csv_path, src, out), out, per_chunk)


def write_jpeg_folders(src, rows, rng):
    """`<src>/<id>/NNNN.jpg` frame folders and `<src>.csv` (`id;label`)."""
    for id_, _label, nframes in rows:
        os.makedirs(os.path.join(src, id_), exist_ok=True)
        for k in range(nframes):
            img = noise(rng, (8, 12, 3)) if k % 2 else gradient(8, 12, 3)
            with open(os.path.join(src, id_, "%04d.jpg" % k), "wb") as f:
                f.write(encode(img, quality=95, subsampling="420"))
    csv_path = src + ".csv"
    with open(csv_path, "w") as f:
        f.writelines("%s;%s\n" % (id_, label) for id_, label, _ in rows)
    return csv_path


# --------------------------------------------------------------------------- #
#                    gulp as writer: a spec and its model                     #
# --------------------------------------------------------------------------- #

class Spec:
    """Operations for the write_spec example, and the chunks they must give.

    The model is computed here from the GulpIO rules (records back to back,
    pad = (4 - len % 4) % 4, the same id appended again extends its entry), so
    it says exactly which meta bytes and records gulp must write.
    """

    def __init__(self, work):
        self.work = work
        self.frame_dir = os.path.join(work, "frames")
        os.makedirs(self.frame_dir, exist_ok=True)
        self.ops = []
        self.chunks = {}      # chunk -> OrderedDict id -> entry
        self.sizes = {}       # chunk -> data file size
        self.formats = {}     # chunk -> meta format
        self.jpegs = {}       # relative path -> bytes

    def frame(self, frame):
        """A frame file for an array (encoded at q90 4:4:4) or JPEG bytes."""
        jpeg = frame if isinstance(frame, bytes) else encode(frame)
        rel = "frames/%s.jpg" % hashlib.sha256(jpeg).hexdigest()[:16]
        if rel not in self.jpegs:
            with open(os.path.join(self.work, rel), "wb") as f:
                f.write(jpeg)
            self.jpegs[rel] = jpeg
        return rel

    def _op(self, op, chunk, items, fmt):
        if op == "create":
            assert chunk not in self.chunks
            self.chunks[chunk] = collections.OrderedDict()
            self.sizes[chunk] = 0
        self.formats[chunk] = fmt
        spec_items = []
        entries = self.chunks[chunk]
        for id_, meta, frames in items:
            paths = [self.frame(f) for f in frames]
            spec_items.append({"id": id_, "meta": meta, "frames": paths})
            entry = entries.setdefault(id_, {"frame_info": [], "meta_data": [], "jpegs": []})
            entry["meta_data"].append(normalize(meta))
            for path in paths:
                jpeg = self.jpegs[path]
                length = len(jpeg) + pad_of(len(jpeg))
                entry["frame_info"].append([self.sizes[chunk], pad_of(len(jpeg)), length])
                entry["jpegs"].append(jpeg)
                self.sizes[chunk] += length
        self.ops.append({"op": op, "chunk": chunk, "format": fmt, "items": spec_items})

    def create(self, chunk, items, fmt="json"):
        self._op("create", chunk, items, fmt)

    def append_to(self, chunk, items, fmt="json"):
        self._op("append_to", chunk, items, fmt)

    def meta_json(self, chunk):
        """The chunk's meta as gulpio2 would write it."""
        return collections.OrderedDict(
            (id_, collections.OrderedDict([("frame_info", e["frame_info"]),
                                           ("meta_data", e["meta_data"])]))
            for id_, e in self.chunks[chunk].items())

    def write(self, ctx, out):
        spec_path = os.path.join(self.work, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(self.ops, f)
        ctx.run([ctx.write_spec, spec_path, out])


# --------------------------------------------------------------------------- #
#                                the checks                                   #
# --------------------------------------------------------------------------- #

class Context:
    def __init__(self, gulp, write_spec, work):
        self.gulp_bin = gulp
        self.write_spec = write_spec
        self.work = work
        self.notes = []
        self._n = 0

    def tmp(self, name):
        self._n += 1
        path = os.path.join(self.work, "%02d-%s" % (self._n, name))
        os.makedirs(path)
        return path

    def note(self, text):
        self.notes.append(text)

    def run(self, cmd, rc=0):
        r = subprocess.run(cmd, capture_output=True)
        if rc is not None and r.returncode != rc:
            raise AssertionError("%s exited %d (expected %d)\nstdout: %s\nstderr: %s" % (
                " ".join(map(str, cmd)), r.returncode, rc,
                r.stdout.decode(errors="replace")[-2000:],
                r.stderr.decode(errors="replace")[-2000:]))
        return r

    def gulp(self, *args, rc=0):
        return self.run([self.gulp_bin, *args], rc=rc)


def gulp_reads(ctx, d, extract_ids=None):
    """gulp reads a directory gulpio2 wrote exactly as gulpio2 does."""
    gd = GulpDirectory(d)
    chunks = chunk_paths(d)

    report = ctx.gulp("check", "--decode", d).stdout.decode()
    assert "no problems found" in report, report

    merged = collections.OrderedDict()
    for n, (_, meta_path) in chunks.items():
        written = read_bytes(meta_path)
        dumped = ctx.gulp("dump-meta", d, "--chunk", str(n)).stdout
        assert dumped == written, "dump-meta --chunk %d differs from meta_%d.gmeta:\n%r\n%r" % (
            n, n, dumped[:300], written[:300])
        merged.update(load_json(written))
    dump = load_json(ctx.gulp("dump-meta", d).stdout)
    assert same_json(dump, merged), "dump-meta differs from the merged meta files"
    assert sorted(dump) == sorted(gd.merged_meta_dict)

    info = json.loads(ctx.gulp("info", "--json", d).stdout)
    n_frames = sum(len(e["frame_info"]) for e in gd.merged_meta_dict.values())
    assert (info["chunks"], info["items"], info["frames"]) == (
        gd.num_chunks, len(gd.merged_meta_dict), n_frames), info

    ids = list(gd.merged_meta_dict) if extract_ids is None else extract_ids
    extract_matches(ctx, d, gd, ids, ":", slice(None))
    return gd


def record_jpegs(gd, id_):
    """The JPEG bytes of an item's frames, read straight from the data file."""
    chunk = gd.chunk_objs_lookup[gd.chunk_lookup[id_]]
    data = read_bytes(chunk.data_file_path)
    out = []
    for loc, pad, length in chunk.meta_dict[id_]["frame_info"]:
        record = data[loc:loc + length]
        assert len(record) == length, "record past the end of the data file"
        out.append(record[:length - pad])
    return out


def extract_matches(ctx, d, gd, ids, text, selection):
    """`gulp extract --frames text` writes the selected frames' JPEG bytes."""
    out = ctx.tmp("extract")
    args = ["extract", d, "--out", out, "--frames=" + text]
    for id_ in ids:
        args += ["--id", str(id_)]
    lines = ctx.gulp(*args).stdout.decode().splitlines()
    assert len(lines) == len(ids), lines
    for id_, line in zip(ids, lines):
        jpegs = record_jpegs(gd, str(id_))
        wanted = resolve(selection, len(jpegs))
        m = re.search(r": (\d+) frames of id ", line)
        assert m and int(m.group(1)) == len(wanted), (id_, text, line, wanted)
        item_dir = os.path.join(out, id_dir_name(str(id_)))
        files = sorted(os.listdir(item_dir))
        assert files == ["%05d.jpg" % k for k in sorted(set(wanted))], (id_, text, files)
        for k in wanted:
            got = read_bytes(os.path.join(item_dir, "%05d.jpg" % k))
            assert got == jpegs[k], "id %r frame %d: extracted bytes differ" % (id_, k)


def sanity_check(ctx, d, expect="clean"):
    """Runs gulpio2's gulp2_sanity_check on a directory.

    expect: "clean"; "crash" (it dies with StopIteration on an empty chunk);
    or the data file name it wrongly reports (an id appended twice with
    another id in between: it compares only the last key's last frame).
    """
    script = os.path.join(os.path.dirname(sys.executable), "gulp2_sanity_check")
    r = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
    if expect == "clean":
        assert r.returncode == 0, r.stderr[-2000:]
        assert "Test failed" not in r.stdout and r.stdout.count("Test passed") == 4, r.stdout
    elif expect == "crash":
        assert r.returncode != 0 and "StopIteration" in r.stderr, (r.returncode, r.stdout,
                                                                   r.stderr[-1000:])
        ctx.note("gulp2_sanity_check crashes with StopIteration on the empty chunk "
                 "(known gulpio2 bug, reference §4)")
    else:
        failed = re.findall(r"Test failed for: \[(.*)\]", r.stdout)
        assert r.returncode == 0 and len(failed) == 1 and r.stdout.count("Test passed") == 3, \
            r.stdout
        assert [os.path.basename(p.strip("'")) for p in failed[0].split(", ")] == [expect], \
            failed
        ctx.note("gulp2_sanity_check reports %s although it is valid (known gulpio2 false "
                 "alarm for an id appended around another, reference §4)" % expect)


def gulpio2_reads(ctx, d, spec, sanity="clean", selectors=(("0::2", slice(0, None, 2)),)):
    """gulpio2 reads a directory gulp wrote: chunks, ids, meta bytes, records,
    frames, selections, and its sanity check."""
    gd = GulpDirectory(d)
    numbers = sorted(spec.chunks)
    assert sorted(gd.chunk_objs_lookup) == numbers, list(gd.chunk_objs_lookup)
    # gulpio2 orders chunks by file name: data_10 before data_2.
    assert list(gd.chunk_objs_lookup) == sorted(numbers, key=str)
    assert gd.chunk_lookup == {id_: n for n in numbers for id_ in spec.chunks[n]}, \
        gd.chunk_lookup

    for n in numbers:
        chunk = gd.chunk_objs_lookup[n]
        expected = spec.meta_json(n)
        if spec.formats[n] == "json":
            written = read_bytes(chunk.meta_file_path)
            assert written == json.dumps(expected).encode(), \
                "meta_%d.gmeta is not what json.dump writes:\n%r\n%r" % (
                    n, written[:400], json.dumps(expected)[:400])
        assert same_json(chunk.meta_dict, expected), "chunk %d meta differs" % n
        data = read_bytes(chunk.data_file_path)
        assert len(data) == spec.sizes[n], (n, len(data), spec.sizes[n])
        for id_, entry in spec.chunks[n].items():
            for (loc, pad, length), jpeg in zip(entry["frame_info"], entry["jpegs"]):
                assert length % 4 == 0 and pad == pad_of(len(jpeg)) and loc % 4 == 0
                assert data[loc:loc + length] == jpeg + b"\0" * pad, \
                    "id %r: record at %d is not the JPEG + zero pad" % (id_, loc)
            frames, meta = gd[id_]
            if entry["meta_data"]:
                assert same_json(meta, entry["meta_data"][0]), (id_, meta)
            assert len(frames) == len(entry["jpegs"]), id_
            for k, (frame, jpeg) in enumerate(zip(frames, entry["jpegs"])):
                assert np.array_equal(frame, decode(jpeg)), "id %r frame %d differs" % (id_, k)
            for _, selection in selectors:
                frames, _ = gd[id_, selection]
                wanted = resolve(selection, len(entry["jpegs"]))
                assert len(frames) == len(wanted), (id_, selection)
                for frame, k in zip(frames, wanted):
                    assert np.array_equal(frame, decode(entry["jpegs"][k])), (id_, selection, k)
    sanity_check(ctx, d, sanity)
    return gd


def gulp_checks_clean(ctx, d):
    report = ctx.gulp("check", d).stdout.decode()
    assert "no problems found" in report, report


# --------------------------------------------------------------------------- #
#                                  the cases                                  #
# --------------------------------------------------------------------------- #

CASES = []


def case(direction, name):
    def register(fn):
        CASES.append((direction, name, fn))
        return fn
    return register


def padded_frames(rng, kind, encoder):
    """Four small noise frames whose JPEG lengths are 0, 3, 2, 1 mod 4, i.e.
    whose pads are 0, 1, 2, 3 (searched from a fixed seed)."""
    chosen = {}
    for _ in range(1000):
        h, w = int(rng.integers(4, 25)), int(rng.integers(4, 25))
        frame = noise(rng, (h, w) if kind == "gray" else (h, w, 3))
        chosen.setdefault(pad_of(len(encoder(frame))), frame)
        if len(chosen) == 4:
            return [chosen[p] for p in (0, 1, 2, 3)]
    raise AssertionError("could not cover every pad value")


def mixed_frames(rng):
    return [
        gradient(16, 16), gradient(16, 16, 3), noise(rng, (8, 8)), noise(rng, (8, 12, 3)),
        gradient(5, 7, 3), gradient(13, 3),                  # partial MCUs
        flat((16, 16), 0), flat((16, 16), 255), flat((16, 16, 3), 0), flat((16, 16, 3), 255),
        flat((16, 16, 3), 0) + np.array([255, 0, 0], np.uint8), flat((1, 1), 128),
    ]


def edge_meta():
    return collections.OrderedDict([
        ("zeta", 1), ("alpha", "not sorted"),
        ("nan", float("nan")), ("inf", float("inf")), ("ninf", float("-inf")),
        ("floats", [1.5, 1.0, 1e-05, 1e+16, 0.1, -0.0, 1.7976931348623157e+308, 5e-324,
                    123456789.125]),
        ("ints", [0, -1, 2 ** 53 + 1, 2 ** 64 + 5, -2 ** 70, 2 ** 63, -2 ** 63, 10 ** 30]),
        ("bools", [True, False]), ("none", None), ("tuple", (1, "two", 3.0)),
        ("nested", {"b": {"c": [1, {"d": []}], "a": {}}, "list": [[], [[]]]}),
        (5, "int key becomes a string"),
        ("unicode", "caf\u00e9 \u65e5\u672c \U0001F389"),
        ("escapes", "quote\" backslash\\ newline\n tab\t ctrl\x01 del\x7f \u2028"),
        ("", "empty key"),
    ])


EDGE_IDS = ["plain", "\u00e9", "\u65e5\u672c", "\U0001F389", "with space/slash", "50%", "..",
            "quote\"id"]


# --- gulpio2 writes, gulp reads --------------------------------------------- #

@case(G2R, "padding")
def g2r_padding(ctx):
    out = ctx.tmp("padding")
    rng = np.random.default_rng(20240401)
    items = [item("pad_" + kind, {"kind": kind},
                  padded_frames(rng, kind, gulpio2.utils.img_to_jpeg_bytes))
             for kind in ("gray", "rgb")]
    gulpio2_ingest(out, items, 10)
    gd = gulp_reads(ctx, out)
    for id_ in ("pad_gray", "pad_rgb"):
        assert [fi[1] for fi in gd.merged_meta_dict[id_]["frame_info"]] == [0, 1, 2, 3]


@case(G2R, "gray_and_colour")
def g2r_gray_rgb(ctx):
    out = ctx.tmp("gray_rgb")
    gulpio2_ingest(out, [item("mixed", {"label": "gray and colour"},
                              mixed_frames(np.random.default_rng(7)))], 1)
    gd = gulp_reads(ctx, out)
    # gulp's PNG decoding agrees on shape and on the flat frames.
    png_dir = ctx.tmp("png")
    ctx.gulp("extract", out, "--id", "mixed", "--out", png_dir, "--decode", "png")
    frames, _ = gd["mixed"]
    names = sorted(os.listdir(os.path.join(png_dir, "mixed")))
    assert names == ["%05d.png" % k for k in range(len(frames))], names
    for k, frame in enumerate(frames):
        width, height, color = png_header(os.path.join(png_dir, "mixed", names[k]))
        assert (height, width) == frame.shape[:2] and color == (0 if frame.ndim == 2 else 2), k


def png_header(path):
    data = read_bytes(path)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height, _depth, color = struct.unpack(">IIBB", data[16:26])
    return width, height, color


def test_init_items():
    ones = lambda shape: np.ones(shape, dtype=np.uint8)  # noqa: E731
    return [
        item(0, {"name": "empty video"}, []),
        item(1, {"name": "bunch of numpy arrays"},
             [ones((4, 1, 3)), ones((3, 1, 3)), ones((2, 1, 3)), ones((1, 1, 3))]),
        item(2, {"name": "shorter_video"}, [ones((4, 1, 3)), ones((3, 1, 3))]),
    ]


# gulpio2's TestGulpDirectory.test_init expectations (quality 100).
TEST_INIT_META = [
    {"1": {"frame_info": [[0, 3, 632], [632, 3, 632], [1264, 3, 632], [1896, 3, 632]],
           "meta_data": [{"name": "bunch of numpy arrays"}]}},
    {"2": {"frame_info": [[0, 3, 632], [632, 3, 632]],
           "meta_data": [{"name": "shorter_video"}]}},
]


@case(G2R, "test_init")
def g2r_test_init(ctx):
    out = ctx.tmp("test_init")
    try:
        gulpio2_ingest(out, test_init_items(), 2, quality=100)
    finally:
        gulpio2.utils._JPEG_WRITE_QUALITY = 90
    gulp_reads(ctx, out)
    for n, expected in enumerate(TEST_INIT_META):
        dumped = load_json(ctx.gulp("dump-meta", out, "--chunk", str(n)).stdout)
        assert same_json(dumped, expected), (n, dumped)


@case(G2R, "selectors")
def g2r_selectors(ctx):
    # gulpio2's test_random_access_with_sparse_frames: frame i has value i.
    out = ctx.tmp("selectors")
    items = [item("s%d" % v, {"video": v},
                  [flat((6, 6) if v % 2 else (6, 6, 3), (20 * i + v) % 256) for i in range(10)])
             for v in range(3)]
    gulpio2_ingest(out, items, 2)
    gd = gulp_reads(ctx, out)
    for text, selection in SELECTORS:
        extract_matches(ctx, out, gd, ["s0", "s1", "s2"], text, selection)
        # The frames gulp extracts are the ones gulpio2 returns, in the same order.
        frames, _ = gd["s1", selection]
        jpegs = record_jpegs(gd, "s1")
        wanted = resolve(selection, 10)
        assert len(frames) == len(wanted)
        for frame, k in zip(frames, wanted):
            assert np.array_equal(frame, decode(jpegs[k])), (text, k)
    ctx.note("selectors: " + " ".join(text for text, _ in SELECTORS))


@case(G2R, "same_id_contiguous")
def g2r_same_id_contiguous(ctx):
    out = ctx.tmp("same_id_contiguous")
    gulpio2_append(out, [
        ("a", {"n": 1, "which": "first a"}, [flat((8, 8), 0), flat((8, 8), 255)]),
        ("a", {"n": 2, "which": "second a"}, [flat((8, 8, 3), 255)]),
        ("b", {"n": 3}, [gradient(8, 8)]),
    ])
    gd = gulp_reads(ctx, out)
    assert len(gd.merged_meta_dict["a"]["meta_data"]) == 2
    assert len(gd.merged_meta_dict["a"]["frame_info"]) == 3


@case(G2R, "same_id_interleaved")
def g2r_same_id_interleaved(ctx):
    out = ctx.tmp("same_id_interleaved")
    gulpio2_append(out, [
        ("x", {"n": 1, "which": "first x"}, [gradient(8, 8)]),
        ("y", {"n": 2}, [flat((8, 8), 255)]),
        ("x", {"n": 3, "which": "second x"}, [flat((8, 8), 0), gradient(8, 8, 3)]),
    ])
    gd = gulp_reads(ctx, out)
    info = gd.merged_meta_dict["x"]["frame_info"]
    assert info[1][0] != info[0][0] + info[0][2], "x's frames should not be contiguous"
    sanity_check(ctx, out, "data_0.gulp")
    ctx.note("gulp check finds no problem in it")


@case(G2R, "13_chunks")
def g2r_many_chunks(ctx):
    out = ctx.tmp("many_chunks")
    gulpio2_ingest(out, [item("v%d" % i, {"index": i}, [flat((8, 8), 20 * i), flat((4, 4, 3), 255)])
                         for i in range(13)], 1)
    gd = gulp_reads(ctx, out)
    assert list(gd.chunk_objs_lookup) == [0, 1, 10, 11, 12] + list(range(2, 10))
    dump = load_json(ctx.gulp("dump-meta", out).stdout)
    assert list(dump) == ["v%d" % i for i in range(13)], "gulp lists chunks in numeric order"


@case(G2R, "chunk_gap")
def g2r_chunk_gap(ctx):
    out = ctx.tmp("chunk_gap")
    gulpio2_ingest(out, [item("g%d" % i, {"index": i}, [flat((8, 8), 255)]) for i in range(3)], 1)
    for name in ("data_1.gulp", "meta_1.gmeta"):
        os.remove(os.path.join(out, name))
    gulpio2_ingest(out, [item("g3", {"index": 3}, [flat((8, 8), 0)])], 1)   # becomes chunk 3
    assert sorted(chunk_paths(out)) == [0, 2, 3]
    gulp_reads(ctx, out)


@case(G2R, "extension")
def g2r_extension(ctx):
    out = ctx.tmp("extension")
    rng = np.random.default_rng(99)
    src = ctx.tmp("extension-src")
    gulpio2_csv_jpeg(out, [("100", "pushing", 2), ("101", "lifting", 1), ("102", "pushing", 3)],
                     os.path.join(src, "first"), 2, rng)
    gulpio2_csv_jpeg(out, [("103", "dropping", 2), ("104", "lifting", 1)],
                     os.path.join(src, "second"), 2, rng)
    assert sorted(chunk_paths(out)) == [0, 1, 2]
    gulp_reads(ctx, out)
    with open(os.path.join(out, "label2idx.json")) as f:
        labels = load_json(f.read())
    assert labels == {"lifting": 0, "pushing": 1, "dropping": 2}, labels
    info = json.loads(ctx.gulp("info", "--json", out).stdout)
    assert info["labels"]["names"] == list(labels), info["labels"]


@case(G2R, "empty_chunk")
def g2r_empty_chunk(ctx):
    out = ctx.tmp("empty_chunk")
    gulpio2_ingest(out, [item("e0", {"note": "no frames"}, []), item("e1", {}, []),
                         item("n0", {"note": "normal"}, [flat((8, 8), 255), gradient(8, 8)])], 2)
    assert read_bytes(os.path.join(out, "meta_0.gmeta")) == b"{}"
    assert os.path.getsize(os.path.join(out, "data_0.gulp")) == 0
    gulp_reads(ctx, out)
    sanity_check(ctx, out, "crash")
    ctx.note("gulp check finds no problem in it")


@case(G2R, "meta_edge_cases")
def g2r_meta_edge(ctx):
    out = ctx.tmp("meta_edge")
    gulpio2_append(out, [(id_, edge_meta() if k == 0 else {"name": id_, "k": k},
                          [flat((8, 8), 255 * (k % 2))])
                         for k, id_ in enumerate(EDGE_IDS)])
    gulp_reads(ctx, out)
    for id_ in ("\u65e5\u672c", "with space/slash", "plain"):
        dumped = load_json(ctx.gulp("dump-meta", out, "--id", id_).stdout)
        assert list(dumped) == [id_], dumped
    dumped = load_json(ctx.gulp("dump-meta", out, "--id", "plain", "--no-frame-info").stdout)
    assert same_json(dumped, {"plain": {"meta_data": [normalize(edge_meta())]}}), dumped


@case(G2R, "integer_ids")
def g2r_int_ids(ctx):
    out = ctx.tmp("int_ids")
    gulpio2_append(out, [(7, {"id": 7}, [flat((8, 8), 0)]), (0, {"id": 0}, [flat((8, 8), 255)])])
    gulpio2_append(out, [(42, {"id": 42}, [flat((8, 8), 0), flat((8, 8, 3), 255)])])
    gd = gulp_reads(ctx, out)
    assert list(gd.merged_meta_dict) == ["7", "0", "42"]
    dumped = load_json(ctx.gulp("dump-meta", out, "--id", "42", "--no-frame-info").stdout)
    assert same_json(dumped, {"42": {"meta_data": [{"id": 42}]}}), dumped


# --- GulpIO v1 -------------------------------------------------------------- #

def v1_expected():
    with open(os.path.join(V1_FIXTURE, "v1_basic.expected.json")) as f:
        return load_json(f.read())


@case("gulpio1->gulp", "v1_chunk")
def v1_gulp(ctx):
    d = os.path.join(V1_FIXTURE, "v1_basic")
    exp = v1_expected()
    gd = gulp_reads(ctx, d)
    dump = load_json(ctx.gulp("dump-meta", d).stdout)
    assert list(dump) == [id_ for c in exp["chunks"] for id_ in c["ids"]]
    for id_, entry in exp["items"].items():
        assert same_json(dump[id_]["meta_data"], entry["meta_data"]), id_
        assert dump[id_]["frame_info"] == [[f["loc"], f["pad"], f["length"]]
                                           for f in entry["frames"]], id_
        for jpeg, frame in zip(record_jpegs(gd, id_), entry["frames"]):
            assert hashlib.sha256(jpeg).hexdigest() == frame["jpeg_sha256"]
    ctx.note("4:2:0 q95 frames written by GulpIO v1 with cv2 (committed fixture)")


@case("gulpio1->gulpio2", "v1_chunk")
def v1_gulpio2(ctx):
    d = os.path.join(V1_FIXTURE, "v1_basic")
    exp = v1_expected()
    decoded = read_bytes(os.path.join(V1_FIXTURE, "v1_basic.decoded.bin"))
    assert len(decoded) == exp["decoded_bytes"]
    gd = GulpDirectory(d)
    assert [c["ids"] for c in exp["chunks"]] == [list(gd.chunk_objs_lookup[c["chunk"]].meta_dict)
                                                for c in exp["chunks"]]
    for id_, entry in exp["items"].items():
        frames, meta = gd[id_]
        assert same_json(meta, entry["meta_data"][0]), id_
        for frame, f in zip(frames, entry["frames"]):
            assert list(frame.shape) == f["shape"]
            start = f["decoded_offset"]
            assert frame.tobytes() == decoded[start:start + frame.size], (id_, f["loc"])
    frames, _ = gd[3]
    assert len(frames) == 1 and frames[0].ndim == 2
    sanity_check(ctx, d)


# --- gulp writes, gulpio2 reads --------------------------------------------- #

@case(R2G, "padding")
def r2g_padding(ctx):
    spec = Spec(ctx.tmp("padding-spec"))
    rng = np.random.default_rng(4)
    spec.create(0, [("pad_" + kind, {"kind": kind}, padded_frames(rng, kind, encode))
                    for kind in ("gray", "rgb")])
    out = ctx.tmp("padding")
    spec.write(ctx, out)
    for id_ in ("pad_gray", "pad_rgb"):
        assert [fi[1] for fi in spec.chunks[0][id_]["frame_info"]] == [0, 1, 2, 3]
    gulpio2_reads(ctx, out, spec)
    gulp_checks_clean(ctx, out)


@case(R2G, "gray_and_colour")
def r2g_gray_rgb(ctx):
    spec = Spec(ctx.tmp("gray_rgb-spec"))
    rng = np.random.default_rng(5)
    frames = mixed_frames(rng)
    # Other encoders' settings than gulpio2's: 4:2:0 and 4:2:2, other qualities.
    frames += [encode(gradient(9, 17, 3), 95, "420"), encode(noise(rng, (12, 20, 3)), 75, "422"),
               encode(gradient(10, 6), 50)]
    spec.create(0, [("mixed", {"label": "gray and colour"}, frames)])
    out = ctx.tmp("gray_rgb")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    shapes = [f.shape for f in gd["mixed"][0]]
    assert shapes[0] == (16, 16) and shapes[1] == (16, 16, 3) and shapes[11] == (1, 1), shapes
    gulp_checks_clean(ctx, out)


@case(R2G, "test_init")
def r2g_test_init(ctx):
    # The frames gulpio2's test encodes at quality 100, written by gulp with the
    # same chunking (the 0-frame id 0 is left out as gulpio2's ChunkWriter does).
    spec = Spec(ctx.tmp("test_init-spec"))
    items = [(str(it["id"]), it["meta"], [encode(f, quality=100) for f in it["frames"]])
             for it in test_init_items()]
    spec.create(0, [items[1]])
    spec.create(1, [items[2]])
    out = ctx.tmp("test_init")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    assert same_json(gd.all_meta_dicts, TEST_INIT_META), gd.all_meta_dicts
    assert gd.chunk_lookup == {"1": 0, "2": 1}
    frames, meta = gd[1]
    assert meta == {"name": "bunch of numpy arrays"}
    assert [f.shape for f in frames] == [(4, 1, 3), (3, 1, 3), (2, 1, 3), (1, 1, 3)]
    assert all(np.array_equal(f, np.ones(f.shape, np.uint8)) for f in frames)


@case(R2G, "selectors")
def r2g_selectors(ctx):
    spec = Spec(ctx.tmp("selectors-spec"))
    spec.create(0, [("s%d" % v, {"video": v},
                     [flat((6, 6) if v % 2 else (6, 6, 3), (20 * i + v) % 256) for i in range(10)])
                    for v in range(3)])
    out = ctx.tmp("selectors")
    spec.write(ctx, out)
    gulpio2_reads(ctx, out, spec, selectors=SELECTORS)
    ctx.note("selectors: " + " ".join(text for text, _ in SELECTORS))


@case(R2G, "same_id_contiguous")
def r2g_same_id_contiguous(ctx):
    spec = Spec(ctx.tmp("same_id_contiguous-spec"))
    spec.create(0, [("a", {"which": "first a"}, [flat((8, 8), 0), flat((8, 8), 255)]),
                    ("a", {"which": "second a"}, [flat((8, 8, 3), 255)]),
                    ("b", {"which": "b"}, [gradient(8, 8)])])
    out = ctx.tmp("same_id_contiguous")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    assert len(gd.merged_meta_dict["a"]["meta_data"]) == 2 and gd["a"][1] == {"which": "first a"}


@case(R2G, "same_id_interleaved")
def r2g_same_id_interleaved(ctx):
    spec = Spec(ctx.tmp("same_id_interleaved-spec"))
    spec.create(0, [("x", {"which": "first x"}, [gradient(8, 8)]),
                    ("y", {"which": "y"}, [flat((8, 8), 255)]),
                    ("x", {"which": "second x"}, [flat((8, 8), 0), gradient(8, 8, 3)])])
    out = ctx.tmp("same_id_interleaved")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec, sanity="data_0.gulp")
    assert gd["x"][1] == {"which": "first x"} and len(gd["x"][0]) == 3
    gulp_checks_clean(ctx, out)


@case(R2G, "append_to")
def r2g_append_to(ctx):
    # A chunk reopened with ChunkWriter::append_to: new ids and an existing one.
    spec = Spec(ctx.tmp("append_to-spec"))
    spec.create(0, [("a", {"n": 1}, [gradient(8, 8)]), ("b", {"n": 2}, [flat((8, 8), 255)])])
    spec.create(1, [("c", {"n": 3}, [flat((8, 8, 3), 0)])])
    spec.append_to(0, [("b", {"n": 4}, [flat((8, 8), 0)]), ("d", {"n": 5}, [gradient(8, 8, 3)])])
    out = ctx.tmp("append_to")
    spec.write(ctx, out)
    gulpio2_reads(ctx, out, spec)
    gulp_checks_clean(ctx, out)


@case(R2G, "13_chunks")
def r2g_many_chunks(ctx):
    spec = Spec(ctx.tmp("many_chunks-spec"))
    for i in range(13):
        spec.create(i, [("v%d" % i, {"index": i}, [flat((8, 8), 20 * i), flat((4, 4, 3), 255)])])
    out = ctx.tmp("many_chunks")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    assert list(gd.merged_meta_dict) == ["v%d" % i for i in [0, 1, 10, 11, 12] + list(range(2, 10))]
    for i in range(13):
        assert gd["v%d" % i][1] == {"index": i}


@case(R2G, "chunk_gap")
def r2g_chunk_gap(ctx):
    # gulp writes chunks 0, 1, 3; gulpio2 reads them and adds its next chunk at
    # max+1 = 4; gulp reads the mixed directory.
    spec = Spec(ctx.tmp("chunk_gap-spec"))
    for i in (0, 1, 3):
        spec.create(i, [("g%d" % i, {"index": i}, [flat((8, 8), 255)])])
    out = ctx.tmp("chunk_gap")
    spec.write(ctx, out)
    gulpio2_reads(ctx, out, spec)
    gulpio2_ingest(out, [item("g4", {"index": 4}, [flat((8, 8), 0)])], 1)
    assert sorted(chunk_paths(out)) == [0, 1, 3, 4]
    gulp_reads(ctx, out)


@case(R2G, "empty_chunk")
def r2g_empty_chunk(ctx):
    spec = Spec(ctx.tmp("empty_chunk-spec"))
    spec.create(0, [])
    spec.create(1, [("n0", {"note": "normal"}, [flat((8, 8), 255), gradient(8, 8)])])
    out = ctx.tmp("empty_chunk")
    spec.write(ctx, out)
    assert read_bytes(os.path.join(out, "meta_0.gmeta")) == b"{}"
    assert os.path.getsize(os.path.join(out, "data_0.gulp")) == 0
    gulpio2_reads(ctx, out, spec, sanity="crash")
    gulp_checks_clean(ctx, out)


@case(R2G, "meta_edge_cases")
def r2g_meta_edge(ctx):
    spec = Spec(ctx.tmp("meta_edge-spec"))
    spec.create(0, [(id_, edge_meta() if k == 0 else {"name": id_, "k": k},
                     [flat((8, 8), 255 * (k % 2))]) for k, id_ in enumerate(EDGE_IDS)])
    out = ctx.tmp("meta_edge")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    meta = gd["plain"][1]
    assert list(meta) == [str(k) for k in edge_meta()], list(meta)
    assert meta["ints"][3] == 2 ** 64 + 5 and meta["ints"][7] == 10 ** 30
    assert meta["nan"] != meta["nan"] and meta["ninf"] == float("-inf")
    assert meta["unicode"] == "caf\u00e9 \u65e5\u672c \U0001F389"
    assert gd["\U0001F389"][1]["name"] == "\U0001F389"


@case(R2G, "integer_ids")
def r2g_int_ids(ctx):
    spec = Spec(ctx.tmp("int_ids-spec"))
    spec.create(0, [("7", {"id": 7}, [flat((8, 8), 0)]), ("0", {"id": 0}, [flat((8, 8), 255)])])
    spec.create(1, [("42", {"id": 42}, [flat((8, 8), 0), flat((8, 8, 3), 255)])])
    out = ctx.tmp("int_ids")
    spec.write(ctx, out)
    gd = gulpio2_reads(ctx, out, spec)
    for n in (7, 0, 42):
        frames, meta = gd[n]
        assert meta == {"id": n} and [f.shape for f in frames] == [f.shape for f in gd[str(n)][0]]
    assert 7 in gd.chunk_objs_lookup[0] and 42 in gd.chunk_objs_lookup[1]


@case(R2G, "msgpack_converted_to_json")
def r2g_msgpack(ctx):
    spec = Spec(ctx.tmp("msgpack-spec"))
    spec.create(0, [("m0", edge_meta(), [gradient(8, 8), flat((8, 8, 3), 255)]),
                    ("m1", {"n": 1}, [flat((8, 8), 0)])], fmt="msgpack")
    spec.create(1, [("m2", {"n": 2}, [gradient(8, 8, 3)])], fmt="json")
    spec.append_to(1, [("m2", {"n": 3}, [flat((8, 8), 255)])], fmt="msgpack")
    out = ctx.tmp("msgpack")
    spec.write(ctx, out)
    for n in (0, 1):
        assert not read_bytes(os.path.join(out, "meta_%d.gmeta" % n)).startswith(b"{")
        dumped = ctx.gulp("dump-meta", out, "--chunk", str(n)).stdout
        assert dumped == json.dumps(spec.meta_json(n)).encode(), n
    gulp_checks_clean(ctx, out)
    ctx.gulp("convert", out, "--to", "json")
    spec.formats = {n: "json" for n in spec.formats}
    gulpio2_reads(ctx, out, spec)


def ingest_frames(rng):
    """JPEG frames as a camera or ffmpeg would leave them: 4:2:0, q95."""
    return [encode(gradient(10, 14, 3), 95, "420"), encode(noise(rng, (10, 14, 3)), 95, "420"),
            encode(gradient(10, 14), 95)]


@case(R2G, "ingest_20bn_csv_jpeg_extension")
def r2g_ingest_extension(ctx):
    # `gulp ingest 20bn-csv-jpeg` twice into one directory: stored JPEGs are the
    # input files, an id without frames is skipped (as in test_init), the
    # second run adds chunks after the first and keeps the label indices.
    # Chunks are slices of the input, as gulpio2 cuts them: 101 has no frames,
    # so chunk 0 holds 100 alone (this is what makes sharded ingests equal one
    # run, docs/scale-out.md).
    rng = np.random.default_rng(11)
    src = ctx.tmp("ingest-src")
    out = os.path.join(ctx.tmp("ingest"), "gulp")
    runs = [[("100", "pushing", 2), ("101", "lifting", 0), ("102", "pushing", 3),
             ("103", "lifting", 1)],
            [("104", "dropping", 2), ("105", "lifting", 1)]]
    sources = {}
    palette = ingest_frames(rng)
    for r, rows in enumerate(runs):
        frame_dir = os.path.join(src, "run%d" % r)
        for id_, _, nframes in rows:
            os.makedirs(os.path.join(frame_dir, id_))
            sources[id_] = [palette[(k + int(id_)) % 3] for k in range(nframes)]
            for k, jpeg in enumerate(sources[id_]):
                with open(os.path.join(frame_dir, id_, "%04d.jpg" % k), "wb") as f:
                    f.write(jpeg)
        with open(frame_dir + ".csv", "w") as f:
            f.writelines("%s;%s\n" % (id_, label) for id_, label, _ in rows)
        ctx.gulp("ingest", "20bn-csv-jpeg", frame_dir + ".csv", frame_dir, out,
                 "--videos-per-chunk", "2", "--num-workers", "2", "--quiet")
    gd = GulpDirectory(out)
    assert gd.chunk_lookup == {"100": 0, "102": 1, "103": 1, "104": 2, "105": 2}, gd.chunk_lookup
    with open(os.path.join(out, "label2idx.json")) as f:
        labels = load_json(f.read())
    assert list(labels.items()) == [("lifting", 0), ("pushing", 1), ("dropping", 2)], labels
    dump = load_json(ctx.gulp("dump-meta", out).stdout)
    for id_, frames_src in sources.items():
        if not frames_src:
            assert id_ not in gd.chunk_lookup
            continue
        frames, meta = gd[id_]
        label = [l for rows in runs for i, l, _ in rows if i == id_][0]
        assert meta == {"id": id_, "label": label, "idx": labels[label]}, meta
        assert same_json(meta, dump[id_]["meta_data"][0])
        assert record_jpegs(gd, id_) == frames_src, "id %s: JPEGs not stored as they are" % id_
        assert all(np.array_equal(f, decode(j)) for f, j in zip(frames, frames_src))
    sanity_check(ctx, out)


@case("gulpio2+gulp->gulpio2", "mixed_extension")
def mixed_extension(ctx):
    # gulpio2's 20BN adapter writes chunks 0-1, then `gulp ingest` extends the
    # same directory: chunk 2 onwards, label2idx.json indices kept.
    rng = np.random.default_rng(12)
    src = ctx.tmp("mixed-src")
    out = os.path.join(ctx.tmp("mixed"), "gulp")
    os.makedirs(out)
    gulpio2_csv_jpeg(out, [("1", "pushing", 2), ("2", "lifting", 1), ("3", "pushing", 2)],
                     os.path.join(src, "first"), 2, rng)
    csv_path = write_jpeg_folders(os.path.join(src, "second"),
                                  [("4", "dropping", 2), ("5", "pushing", 1)], rng)
    ctx.gulp("ingest", "20bn-csv-jpeg", csv_path, os.path.join(src, "second"), out,
             "--videos-per-chunk", "2", "--quiet")
    gd = GulpDirectory(out)
    assert gd.chunk_lookup == {"1": 0, "2": 0, "3": 1, "4": 2, "5": 2}, gd.chunk_lookup
    with open(os.path.join(out, "label2idx.json")) as f:
        labels = load_json(f.read())
    assert list(labels.items()) == [("lifting", 0), ("pushing", 1), ("dropping", 2)], labels
    for id_, label in (("4", "dropping"), ("5", "pushing")):
        frames, meta = gd[id_]
        assert meta == {"id": id_, "label": label, "idx": labels[label]}, meta
        folder = os.path.join(src, "second", id_)
        jpegs = [read_bytes(os.path.join(folder, n)) for n in sorted(os.listdir(folder))]
        assert record_jpegs(gd, id_) == jpegs
        assert all(np.array_equal(f, decode(j)) for f, j in zip(frames, jpegs))
    sanity_check(ctx, out)
    gulp_reads(ctx, out)


@case(R2G, "ingest_image_folder")
def r2g_ingest_image_folder(ctx):
    # JPEGs are stored as they are; PNGs are encoded by gulp (flat frames, so
    # gulpio2 decodes them exactly).
    src = ctx.tmp("images")
    rng = np.random.default_rng(13)
    files = {
        ("cat", "a.jpg"): encode(gradient(12, 9, 3)),
        ("cat", "b.jpg"): encode(noise(rng, (7, 7)), 80),
        ("dog", "c.jpg"): encode(gradient(20, 16, 3), 95, "420"),
        ("dog", "white.png"): png_bytes(flat((6, 10, 3), 255)),
        ("dog", "black.png"): png_bytes(flat((5, 3), 0)),
    }
    for (label, name), data in files.items():
        os.makedirs(os.path.join(src, label), exist_ok=True)
        with open(os.path.join(src, label, name), "wb") as f:
            f.write(data)
    out = os.path.join(ctx.tmp("image_folder"), "gulp")
    ctx.gulp("ingest", "image-folder", src, out, "--images-per-chunk", "2", "--quiet")
    gd = GulpDirectory(out)
    assert sorted(gd.chunk_lookup) == sorted("%s-%s" % k for k in files), gd.chunk_lookup
    dump = load_json(ctx.gulp("dump-meta", out).stdout)
    for (label, name), data in files.items():
        id_ = "%s-%s" % (label, name)
        frames, meta = gd[id_]
        assert same_json(meta, dump[id_]["meta_data"][0]) and meta["label"] == label, meta
        assert len(frames) == 1
        if name.endswith(".jpg"):
            assert record_jpegs(gd, id_) == [data]
            assert np.array_equal(frames[0], decode(data))
        else:
            value, shape = (255, (6, 10, 3)) if name == "white.png" else (0, (5, 3))
            assert np.array_equal(frames[0], flat(shape, value)), (id_, frames[0])
    sanity_check(ctx, out)


@case(R2G, "ingest_manifest_with_times_and_sound")
def r2g_ingest_manifest(ctx):
    # Clips of two real videos (H.264/AAC, one without sound), with frame
    # times and sound (docs/format.md §8): gulpio2 reads their frames and
    # meta as before and its sanity check passes; the extra item keys and
    # the audio records are where it does not look.
    src = ctx.tmp("videos")
    for name, extra in (("a.mp4", ["-f", "lavfi", "-i", "sine=frequency=440:duration=4"]),
                        ("b.mp4", [])):
        ctx.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                 "testsrc2=size=96x64:rate=25:duration=4"] + extra +
                ["-pix_fmt", "yuv420p", "-c:a", "aac", os.path.join(src, name)])
    with open(os.path.join(src, "clips.csv"), "w") as f:
        f.write("path,start,end,caption\na.mp4,0.5,2,one\nb.mp4,0,1.5,two\n"
                "a.mp4,1,3.5,three\nb.mp4,2,4,four\n")
    out = os.path.join(ctx.tmp("manifest"), "gulp")
    ctx.gulp("ingest", "manifest", os.path.join(src, "clips.csv"), out, "--frame-rate", "4",
             "--audio", "--videos-per-chunk", "2", "--quiet")
    gd = GulpDirectory(out)
    ids = ["a.mp4@0.5-2", "a.mp4@1-3.5", "b.mp4@0-1.5", "b.mp4@2-4"]
    assert sorted(gd.chunk_lookup) == ids, gd.chunk_lookup
    dump = load_json(ctx.gulp("dump-meta", out).stdout)
    for id_ in ids:
        item = dump[id_]
        assert set(item) == {"frame_info", "meta_data", "frame_times", "audio"}, item.keys()
        assert (item["audio"] is None) == id_.startswith("b"), item["audio"]
        frames, meta = gd[id_]
        assert same_json(meta, item["meta_data"][0]), meta
        jpegs = record_jpegs(gd, id_)
        assert len(frames) == len(jpegs) == len(item["frame_info"]) > 0
        for frame, jpeg in zip(frames, jpegs):
            assert np.array_equal(frame, decode(jpeg)), id_
    sanity_check(ctx, out)
    gulp_checks_clean(ctx, out)


# --------------------------------------------------------------------------- #
#                                    main                                     #
# --------------------------------------------------------------------------- #

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gulp", required=True, help="the gulp binary")
    ap.add_argument("--write-spec", required=True, help="the write_spec example binary")
    ap.add_argument("-k", dest="only", help="run only cases whose name contains this")
    ap.add_argument("--keep", metavar="DIR", help="write the directories here and keep them")
    args = ap.parse_args()
    assert gulpio2.__version__ == "0.0.4", gulpio2.__version__

    if args.keep:
        work = os.path.abspath(args.keep)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        work = tempfile.mkdtemp(prefix="gulp-compat-")
    gulp = os.path.abspath(args.gulp)
    write_spec = os.path.abspath(args.write_spec)
    started = time.monotonic()
    passed, failed = 0, []
    try:
        for direction, name, fn in CASES:
            if args.only and args.only not in name:
                continue
            ctx = Context(gulp, write_spec, os.path.join(work, direction.replace(">", ""), name))
            os.makedirs(ctx.work)
            t0 = time.monotonic()
            try:
                fn(ctx)
                status = "PASS"
                passed += 1
            except Exception as e:  # report every failing case, then fail the run
                status = "FAIL"
                failed.append("%s %s" % (direction, name))
                where = traceback.extract_tb(e.__traceback__)[-1]
                ctx.note("%s at %s:%d: %s" % (type(e).__name__, os.path.basename(where.filename),
                                               where.lineno, str(e)[:1500]))
            print("%s %s %s (%.1fs)" % (status, direction, name, time.monotonic() - t0))
            for text in ctx.notes:
                print("     %s" % text.replace("\n", "\n     "))
            sys.stdout.flush()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("compat: %d passed, %d failed in %.1fs (gulpio2 %s, numpy %s, simplejpeg %s)" % (
        passed, len(failed), time.monotonic() - started, gulpio2.__version__, np.__version__,
        simplejpeg.__version__))
    if passed + len(failed) == 0:
        print("compat: no case matched", file=sys.stderr)
        return 1
    for name in failed:
        print("FAILED: %s" % name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
