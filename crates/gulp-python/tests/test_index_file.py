"""A directory's index file (gulp_index.bin): written by `gulp index` (and by
the first open of a large directory), then read by GulpDirectory and the
loaders with the same results as the meta files; ignored by gulpio2."""

import os
import shutil
import subprocess
import sys

import numpy as np

import gulp
import gulpio2
from test_loader import clip_dir  # noqa: F401 (the fixture)


def gulp_cmd():
    return os.path.join(os.path.dirname(sys.executable), "gulp")


def everything(path):
    gd = gulp.GulpDirectory(path)
    return [(k, [f.tobytes() for f in frames], meta)
            for k in sorted(gd.merged_meta_dict, key=str)
            for frames, meta in [gd[k]]]


def batches(path):
    loader = gulp.ClipLoader(path, frames=4, resize=None, size=(64, 64), crop="random",
                             flip=True, batch_size=3, shuffle=True, seed=7, threads=2)
    return [(b.ids, b.frames.tobytes(), b.labels.tolist()) for b in loader]


def test_the_index_file_reads_as_the_metas(clip_dir, tmp_path, monkeypatch):
    path = str(tmp_path / "gulp")
    shutil.copytree(clip_dir[0], path)
    monkeypatch.setenv("GULP_INDEX", "off")
    plain, plain_batches = everything(path), batches(path)
    assert not os.path.exists(os.path.join(path, gulp.INDEX_FILE))

    out = subprocess.run([gulp_cmd(), "index", path], check=True, capture_output=True,
                         text=True).stdout
    assert ": written: 3 chunks, 12 items" in out, out
    monkeypatch.setenv("GULP_INDEX", "auto")
    assert everything(path) == plain
    assert batches(path) == plain_batches
    # gulpio2 reads the directory as before, ignoring the file.
    gd = gulpio2.GulpDirectory(path)
    first = sorted(gd.merged_meta_dict)[0]
    frames, _ = gd[first]
    ours, _ = gulp.GulpDirectory(path)[first]
    assert all(np.array_equal(a, b) for a, b in zip(frames, ours))

    # Damaged: not used, the same results, and `gulp check` says so.
    with open(os.path.join(path, gulp.INDEX_FILE), "r+b") as f:
        f.seek(200)
        f.write(b"\xff\xff")
    assert everything(path) == plain
    check = subprocess.run([gulp_cmd(), "check", path], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "index file damaged" in check.stdout, check.stdout
