"""Fixtures: frames from the real ffmpeg, and directories written by the real
gulpio2 0.0.4 and by gulp from the same items."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import gulp
import gulp.adapters
import gulpio2
import gulpio2.adapters


def ffmpeg_frames(source, size, count, pix_fmt="rgb24"):
    """`count` frames of an ffmpeg test source as uint8 arrays."""
    w, h = size
    raw = subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "lavfi",
         "-i", f"{source}=size={w}x{h}:rate=25", "-frames:v", str(count),
         "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
        check=True, capture_output=True,
    ).stdout
    c = 3 if pix_fmt == "rgb24" else 1
    frames = np.frombuffer(raw, np.uint8).reshape(count, h, w, c)
    return [f.copy() if c == 3 else f[:, :, 0].copy() for f in frames]


def make_items():
    """Items with real image content: RGB and gray, several sizes, int and
    str ids, meta with nested values, one id appended twice."""
    sources = ["testsrc2", "smptebars", "mandelbrot", "rgbtestsrc", "testsrc"]
    items = []
    for i, src in enumerate(sources):
        size = [(160, 120), (96, 128), (200, 100), (64, 64), (120, 90)][i]
        items.append({
            "id": 100 + i,
            "meta": {"label": f"class {i % 3}", "idx": i, "nested": {"a": [1, 2.5, None, True]}},
            "frames": ffmpeg_frames(src, size, 6 + i),
        })
    items.append({
        "id": "gray-clip",
        "meta": {"label": "gray", "idx": 5},
        "frames": ffmpeg_frames("testsrc2", (80, 60), 5, pix_fmt="gray"),
    })
    items.append({
        "id": "single",
        "meta": {"label": "one frame", "idx": 6, "unicode": "é✓"},
        "frames": ffmpeg_frames("cellauto", (48, 32), 1),
    })
    return items


ITEMS = None


def items():
    global ITEMS
    if ITEMS is None:
        ITEMS = make_items()
    return ITEMS


class ListAdapter(gulp.adapters.AbstractDatasetAdapter, gulpio2.adapters.AbstractDatasetAdapter):
    """gulpio2's adapter protocol over in-memory items (picklable, for the
    ingestors' worker processes)."""

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return len(self.data)

    def iter_data(self, slice_element=None):
        slice_element = slice_element or slice(0, len(self))
        for item in self.data[slice_element]:
            yield {"id": item["id"], "meta": item["meta"], "frames": item["frames"]}


def write_chunks(module, directory, data, per_chunk=3):
    """Writes `data` with `module`'s GulpDirectory.new_chunks + GulpChunk
    (gulpio2 or gulp): `per_chunk` items per chunk, plus a second append of
    the first id into the first chunk (gulpio2's meta_data list)."""
    os.makedirs(directory, exist_ok=True)
    gd = module.GulpDirectory(directory)
    n_chunks = (len(data) + per_chunk - 1) // per_chunk
    for c, chunk in enumerate(gd.new_chunks(n_chunks)):
        with chunk.open("wb"):
            for item in data[c * per_chunk:(c + 1) * per_chunk]:
                chunk.append(item["id"], item["meta"], item["frames"])
            if c == 0:
                chunk.append(data[0]["id"], {"second": True}, data[0]["frames"][:2])
    return directory


@pytest.fixture(scope="session")
def sample_items():
    return items()


@pytest.fixture(scope="session")
def gulpio2_dir(tmp_path_factory):
    """A directory written by the real gulpio2."""
    return write_chunks(gulpio2.fileio, str(tmp_path_factory.mktemp("g2") / "out"), items())


@pytest.fixture(scope="session")
def gulp_dir(tmp_path_factory):
    """The same items written by gulp's GulpChunk API."""
    return write_chunks(gulp.fileio, str(tmp_path_factory.mktemp("gulp") / "out"), items())


@pytest.fixture(params=["gulpio2-written", "gulp-written"])
def any_dir(request, gulpio2_dir, gulp_dir):
    return gulpio2_dir if request.param == "gulpio2-written" else gulp_dir


@pytest.fixture
def copy_dir(tmp_path):
    """Copies a directory to a fresh place (for tests that damage it)."""

    def copy(src):
        dst = tmp_path / "copy"
        shutil.copytree(src, dst)
        return str(dst)

    return copy
