"""gulp's writing API against the real gulpio2 0.0.4: what gulp writes reads
in gulpio2, what gulpio2 writes reads in gulp, byte for byte."""

import filecmp
import json
import os

import numpy as np
import pytest

import gulp
import gulp.utils
import gulpio2
import gulpio2.utils
from conftest import ListAdapter, write_chunks

from test_read_compat import assert_frames_equal


def test_gulp_chunks_are_gulpio2s_bytes(gulpio2_dir, gulp_dir):
    """GulpChunk.append encodes as gulpio2 does (simplejpeg's settings), so
    the data files are identical and the meta files say the same."""
    names = sorted(os.listdir(gulpio2_dir))
    assert names == sorted(os.listdir(gulp_dir))
    assert names == [f"{k}_{n}.{e}" for k, e in [("data", "gulp"), ("meta", "gmeta")]
                     for n in range(3)]
    for name in names:
        a, b = os.path.join(gulpio2_dir, name), os.path.join(gulp_dir, name)
        if name.endswith(".gulp"):
            assert filecmp.cmp(a, b, shallow=False), name
        else:
            with open(a) as fa, open(b) as fb:
                assert json.load(fa) == json.load(fb), name


def test_gulpio2_reads_what_gulp_wrote(gulp_dir, sample_items):
    theirs = gulpio2.GulpDirectory(gulp_dir)
    for item in sample_items:
        frames, meta = theirs[item["id"]]
        assert meta == item["meta"]
        n = len(item["frames"])
        assert len(frames) == n + (2 if item is sample_items[0] else 0)
        for got, original in zip(frames, item["frames"]):
            assert got.shape == original.shape
            # Lossy JPEG at quality 90: close to the input.
            assert np.abs(got.astype(int) - original).mean() < 6


def _ingest(module, adapter, out, workers):
    module.GulpIngestor(adapter, out, 2, workers)()
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_gulp_ingestor_matches_gulpio2s(tmp_path, sample_items, workers):
    adapter = ListAdapter(sample_items)
    ours = _ingest(gulp.fileio, adapter, str(tmp_path / "ours"), workers)
    theirs = _ingest(gulpio2.fileio, adapter, str(tmp_path / "theirs"), 1)
    assert sorted(os.listdir(ours)) == sorted(os.listdir(theirs))
    g_ours, g_theirs = gulpio2.GulpDirectory(ours), gulpio2.GulpDirectory(theirs)
    assert g_ours.merged_meta_dict == g_theirs.merged_meta_dict
    for name in os.listdir(ours):
        if name.endswith(".gulp"):
            assert filecmp.cmp(os.path.join(ours, name), os.path.join(theirs, name), shallow=False)
    for id_ in g_theirs.merged_meta_dict:
        assert_frames_equal(gulp.GulpDirectory(theirs)[id_][0], g_ours[id_][0])


def test_ingestor_extends_with_new_chunks(tmp_path, sample_items):
    out = str(tmp_path / "out")
    gulp.GulpIngestor(ListAdapter(sample_items[:3]), out, 2, 1)()
    gulp.GulpIngestor(ListAdapter(sample_items[3:]), out, 2, 1)()
    assert sorted(os.listdir(out)) == sorted(
        f"{k}_{n}.{e}" for k, e in [("data", "gulp"), ("meta", "gmeta")] for n in range(4))
    assert len(gulpio2.GulpDirectory(out).merged_meta_dict) == len(sample_items)


def test_items_without_frames_are_skipped(tmp_path, sample_items, capsys):
    data = [dict(sample_items[0]), {"id": "empty", "meta": {}, "frames": []}]
    out = str(tmp_path / "out")
    gulp.GulpIngestor(ListAdapter(data), out, 5, 1)()
    assert "Failed to write video with id: empty; no frames" in capsys.readouterr().out
    assert list(gulpio2.GulpDirectory(out).merged_meta_dict) == ["100"]


def test_jpeg_write_quality_is_honoured(tmp_path, sample_items, monkeypatch):
    frames = sample_items[0]["frames"][:2]
    for quality in (100, 50):
        monkeypatch.setattr(gulp.utils, "_JPEG_WRITE_QUALITY", quality)
        monkeypatch.setattr(gulpio2.utils, "_JPEG_WRITE_QUALITY", quality)
        assert gulp.utils.img_to_jpeg_bytes(frames[0]) == gulpio2.utils.img_to_jpeg_bytes(frames[0])
        d1, d2 = str(tmp_path / f"a{quality}"), str(tmp_path / f"b{quality}")
        write_chunks(gulp.fileio, d1, [{"id": "x", "meta": {}, "frames": frames}])
        write_chunks(gulpio2.fileio, d2, [{"id": "x", "meta": {}, "frames": frames}])
        assert filecmp.cmp(d1 + "/data_0.gulp", d2 + "/data_0.gulp", shallow=False)


def test_append_mode_adds_to_a_chunk(tmp_path, sample_items):
    """open('ab') appends to an existing chunk, in gulp as in gulpio2."""
    for module, name in [(gulp.fileio, "ours"), (gulpio2.fileio, "theirs")]:
        d = str(tmp_path / name)
        write_chunks(module, d, sample_items[:1], per_chunk=1)
        chunk = module.GulpChunk(d + "/data_0.gulp", d + "/meta_0.gmeta")
        with chunk.open("ab"):
            chunk.append("added", {"more": 1}, sample_items[1]["frames"])
    assert filecmp.cmp(str(tmp_path / "ours/data_0.gulp"), str(tmp_path / "theirs/data_0.gulp"),
                       shallow=False)
    ours = gulp.GulpDirectory(str(tmp_path / "ours"))
    theirs = gulpio2.GulpDirectory(str(tmp_path / "theirs"))
    assert ours.merged_meta_dict == theirs.merged_meta_dict
    assert_frames_equal(ours["added"][0], theirs["added"][0])


def test_wb_on_existing_chunk_replaces_it(tmp_path, sample_items):
    """gulpio2 keeps the old meta entries pointing into the new data; gulp
    replaces the chunk."""
    d = str(tmp_path / "d")
    write_chunks(gulp.fileio, d, sample_items[:2], per_chunk=2)
    chunk = gulp.GulpChunk(d + "/data_0.gulp", d + "/meta_0.gmeta")
    with chunk.open("wb"):
        chunk.append("new", {"n": 1}, sample_items[2]["frames"])
    gd = gulp.GulpDirectory(d)
    assert gd.ids() == ["new"]
    assert gulp.check(d).is_clean
    assert list(gulpio2.GulpDirectory(d).merged_meta_dict) == ["new"]


def test_flush_commits_and_goes_on(tmp_path, sample_items):
    d = str(tmp_path / "d")
    os.makedirs(d)
    chunk = next(gulp.GulpDirectory(d).new_chunks(1))
    with chunk.open("wb"):
        chunk.append("a", {}, sample_items[0]["frames"][:1])
        chunk.flush()
        assert list(gulpio2.GulpDirectory(d).merged_meta_dict) == ["a"]
        chunk.append("b", {}, sample_items[0]["frames"][:1])
    assert list(gulpio2.GulpDirectory(d).merged_meta_dict) == ["a", "b"]


def test_numpy_scalars_in_meta_are_stored(tmp_path, sample_items):
    """json.dump fails on them half-way in gulpio2 (a truncated meta file);
    gulp stores their Python values."""
    d = str(tmp_path / "d")
    write_chunks(gulp.fileio, d, [{"id": "x", "meta": {"n": np.int64(3), "f": np.float32(0.5),
                                                       "a": np.arange(3)},
                                   "frames": sample_items[0]["frames"][:1]}])
    assert gulpio2.GulpDirectory(d)["x"][1] == {"n": 3, "f": 0.5, "a": [0, 1, 2]}


def test_msgpack_meta(tmp_path, sample_items):
    d = str(tmp_path / "d")
    os.makedirs(d)
    chunk = gulp.GulpChunk(d + "/data_0.gulp", d + "/meta_0.gmeta",
                           serializer=gulp.fileio.msgpack_serializer)
    with chunk.open("wb"):
        for item in sample_items:
            chunk.append(item["id"], item["meta"], item["frames"])
    with open(d + "/meta_0.gmeta", "rb") as f:
        assert not f.read(1).startswith(b"{")
    gd = gulp.GulpDirectory(d)
    json_dir = write_chunks(gulp.fileio, str(tmp_path / "j"), sample_items, per_chunk=100)
    reference = gulp.GulpDirectory(json_dir)
    for item in sample_items:
        f1, m1 = gd[item["id"]]
        f2, m2 = reference[item["id"]]
        assert m1 == m2
        n = len(item["frames"])
        assert_frames_equal(f1, f2[:n] if len(f2) > n else f2)
    assert gulp.check(d, decode=True).is_clean
